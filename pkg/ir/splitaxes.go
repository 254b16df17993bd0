package ir

import "slices"

// SplitAxes is MergeAxes the other way round: a loop a whose index
// expressions find their element through a/c and a%c becomes two nested
// loops, a/c outside and a%c inside, when that leaves fewer divisions and
// modulos in the kernel. It splits
//   - reduce loops: a sum over a flattened window (K = kh·kw·Cin, as a
//     convolution computed as a matrix product reads it) divided at every
//     step to find its element (ResNet's 3x3 convolutions ran at 0.55x the
//     rate of the same product over nested loops). The loops visit a in
//     the same order, so a float sum is unchanged, bit for bit;
//   - the inner global loops of elementwise kernels (a copy of such
//     windows: a guarded load per element through divisions, which the C
//     compiler does not vectorize), into inner loops of at least 8. The
//     outermost loop, split across cores, stays whole.
func SplitAxes(k *Kernel) *Kernel {
	for {
		nk := splitOneAxis(k)
		if nk == nil {
			return k
		}
		k = nk
	}
}

// splitOneAxis makes the first split that removes divisions, or returns
// nil when none does.
func splitOneAxis(k *Kernel) *Kernel {
	before := k.countDivMod()
	axes := k.ReduceAxes()
	if len(axes) == 0 && len(k.Global) > 1 {
		axes = k.Global[1:]
	}
	for _, a := range axes {
		for _, c := range divisorsOf(k, a) {
			// A global loop keeps an inner loop long enough for vectors:
			// a short one (x[i/2], a nearest upsample) is the heuristic's
			// (splitOpts upcasts it).
			if a.Kind == AxisGlobal && c < DefaultVecWidth {
				continue
			}
			if nk := splitAxis(k, a, c); nk.countDivMod() < before {
				return nk
			}
		}
	}
	return nil
}

// divisorsOf lists the constants that expressions using a's variable are
// divided by (or taken modulo), which divide a's size: the candidate
// inner sizes of a split.
func divisorsOf(k *Kernel, a *Axis) []int64 {
	var out []int64
	seen := map[int64]bool{}
	Walk(k.Stores, func(e *Expr) {
		if (e.Op != OpDiv && e.Op != OpMod) || e.DType.IsFloat() || !e.Src[1].IsConst() || !usesVar(e.Src[0], a) {
			return
		}
		c, _ := e.Src[1].ConstInt()
		if c > 1 && c < a.Size && a.Size%c == 0 && !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	})
	return out
}

// splitAxis replaces axis a by an outer loop of a.Size/c and an inner loop
// of c (a = outer·c + inner), in the place a had among its reduce's axes
// or the global loops.
func splitAxis(k *Kernel, a *Axis, c int64) *Kernel {
	id := 0
	for _, x := range append(k.ReduceAxes(), k.Global...) {
		if x.Kind == a.Kind {
			id = max(id, x.ID+1)
		}
	}
	outer := &Axis{ID: a.ID, Size: a.Size / c, Kind: a.Kind}
	inner := &Axis{ID: id, Size: c, Kind: a.Kind}
	replace := func(axes []*Axis) []*Axis {
		var out []*Axis
		for _, x := range axes {
			if x == a {
				out = append(out, outer, inner)
			} else {
				out = append(out, x)
			}
		}
		return out
	}
	sub := func(b *Builder, x *Expr) *Expr {
		if x.Op == OpVar && x.Arg.(*Axis) == a {
			return b.Add(b.Mul(b.Var(outer), b.Int(c)), b.Var(inner))
		}
		return nil
	}
	args := map[*ReduceArg]*ReduceArg{} // members of a group keep sharing their axes
	nk := k.rewrite(func(b *Builder, e *Expr) *Expr {
		if e.Op != OpReduce {
			return sub(b, e)
		}
		arg := e.Arg.(*ReduceArg)
		if !slices.Contains(arg.Axes, a) {
			return nil
		}
		na, ok := args[arg]
		if !ok {
			na = &ReduceArg{Op: arg.Op, Axes: replace(arg.Axes)}
			args[arg] = na
		}
		return b.Reduce(na, b.Rebuild(e.Src[0], func(x *Expr) *Expr { return sub(b, x) }, map[*Expr]*Expr{}))
	})
	if a.Kind == AxisGlobal {
		nk.Global = replace(k.Global)
	}
	return nk
}
