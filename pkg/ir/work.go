package ir

// Work is Cost's float operations as a C kernel runs them: an expression
// that depends on no global axis (a row kernel's sum over an input that is
// the same for every output, such as RMSNorm's sum of squares) is computed
// once per call, before the loops over the outputs, not once per output.
// The CPU device decides by it whether a launch is worth splitting across
// the cores: an RMSNorm over 768 values costs the graph's 768×768
// multiply-adds by Cost, ~2300 operations in its code.
func (k *Kernel) Work() int64 {
	global := map[*Expr]bool{}
	var dep func(e *Expr) bool
	dep = func(e *Expr) bool {
		if d, ok := global[e]; ok {
			return d
		}
		d := e.Op == OpRand || e.Op == OpVar && e.Arg.(*Axis).Kind == AxisGlobal
		for _, s := range e.Src {
			d = dep(s) || d
		}
		global[e] = d
		return d
	}
	inner := map[*Expr]int64{} // iterations of the reduce loops around e (and visited)
	var rec func(e *Expr, mult int64)
	rec = func(e *Expr, mult int64) {
		if _, seen := inner[e]; seen {
			return
		}
		m := mult
		if e.Op == OpReduce {
			for _, a := range e.Arg.(*ReduceArg).Axes {
				m = satMul(m, a.Size)
			}
		}
		inner[e] = m
		for _, s := range e.Src {
			rec(s, m)
		}
	}
	for _, s := range k.Stores {
		rec(s, 1)
	}
	g := k.GlobalSize()
	var work int64
	for e, m := range inner {
		if e.Op.IsALU() && e.Op != OpCast && e.DType.IsFloat() || e.Op == OpReduce || (e.Op.IsALU() && len(e.Src) > 0 && e.Src[0].DType.IsFloat() && e.Op.IsCompare()) {
			if dep(e) {
				m = satMul(m, g)
			}
			work = satAdd(work, m)
		}
	}
	return work
}
