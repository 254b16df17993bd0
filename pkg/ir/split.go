package ir

// SplitReduces gives a reduce loop the block structure its loads have. A
// matmul with a quantized weight reads element r of a row from block r/32
// at r%32 (a Q4_K super-block: r/256, (r%256)/64, (r%64)/32, r%32): one
// loop over r pays a division and a modulo per element, and its loads are
// not contiguous in r. Split into loops over r/c and r%c, the index math is
// affine: the block's scale depends on the outer loop only (the C compiler
// hoists it), and the inner loop reads consecutive bytes, which the
// optimizer then vectorizes. A split is kept when it removes divisions and
// modulos (as MergeAxes merges only when it adds none), repeatedly, so a
// super-block's nested structure comes out one level at a time.
func SplitReduces(k *Kernel) *Kernel {
	for {
		best, bestCount := (*Kernel)(nil), k.countDivMod()
		for _, a := range uniqueAxes(k.ReduceAxes()) {
			if a.Sym != nil {
				continue
			}
			for _, c := range blockDivisors(k, a) {
				if nk := splitReduceAxis(k, a, c); nk.countDivMod() < bestCount {
					best, bestCount = nk, nk.countDivMod()
				}
			}
		}
		if best == nil {
			return k
		}
		k = best
	}
}

func uniqueAxes(axes []*Axis) []*Axis {
	var out []*Axis
	seen := map[*Axis]bool{}
	for _, a := range axes {
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	return out
}

// blockDivisors lists the constants c (1 < c < size, dividing it) that an
// expression depending on axis a is divided or taken modulo by.
func blockDivisors(k *Kernel, a *Axis) []int64 {
	var out []int64
	seen := map[int64]bool{}
	Walk(k.Stores, func(e *Expr) {
		if (e.Op != OpDiv && e.Op != OpMod) || e.DType.IsFloat() {
			return
		}
		c, ok := e.Src[1].ConstInt()
		if !ok || c <= 1 || c >= a.Size || a.Size%c != 0 || seen[c] || !usesVar(e.Src[0], a) {
			return
		}
		seen[c] = true
		out = append(out, c)
	})
	return out
}

// splitReduceAxis replaces reduce axis a by an outer loop of a.Size/c and
// an inner loop of c (a = outer*c + inner) in every reduce that owns it.
func splitReduceAxis(k *Kernel, a *Axis, c int64) *Kernel {
	next := 0
	for _, x := range k.ReduceAxes() {
		next = max(next, x.ID+1)
	}
	outer := &Axis{ID: next, Size: a.Size / c, Kind: AxisReduce}
	inner := &Axis{ID: next + 1, Size: c, Kind: AxisReduce}
	args := map[*ReduceArg]*ReduceArg{} // members of a group keep sharing their axes
	nk := *k
	nk.B = NewBuilder()
	b := nk.B
	memo := map[*Expr]*Expr{}
	var f func(e *Expr) *Expr
	f = func(e *Expr) *Expr {
		switch {
		case e.Op == OpVar && e.Arg.(*Axis) == a:
			return b.Add(b.Mul(b.Var(outer), b.Int(c)), b.Var(inner))
		case e.Op == OpReduce:
			arg := e.Arg.(*ReduceArg)
			na, ok := args[arg]
			if !ok {
				na = &ReduceArg{Op: arg.Op}
				for _, x := range arg.Axes {
					if x == a {
						na.Axes = append(na.Axes, outer, inner)
					} else {
						na.Axes = append(na.Axes, x)
					}
				}
				args[arg] = na
			}
			return b.Reduce(na, b.Rebuild(e.Src[0], f, memo))
		}
		return nil
	}
	nk.Stores = make([]*Expr, len(k.Stores))
	for i, s := range k.Stores {
		nk.Stores[i] = b.Rebuild(s, f, memo)
	}
	return &nk
}

// SplitGlobals is SplitReduces for the inner global loops of an
// elementwise kernel: a copy of a convolution's windows (the rows of a
// conv computed as a matrix product, K = kh·kw·Cin flattened) finds each
// element through divisions of one loop, in a guarded load the C compiler
// does not vectorize (ResNet's 14x14 window copy: 0.9 ms; split, 0.04 ms).
// Inner loops shorter than a vector are left whole: x[i/2] (a nearest
// upsample) is the heuristic's (splitOpts upcasts it). The outermost loop,
// split across cores, stays whole.
func SplitGlobals(k *Kernel) *Kernel {
	if hasReduce(k) {
		return k
	}
	for {
		best, bestCount := (*Kernel)(nil), k.countDivMod()
		for i := 1; i < len(k.Global); i++ {
			a := k.Global[i]
			if a.Sym != nil {
				continue
			}
			for _, c := range blockDivisors(k, a) {
				if c < DefaultVecWidth {
					continue
				}
				if nk := splitGlobalAxis(k, i, c); nk.countDivMod() < bestCount {
					best, bestCount = nk, nk.countDivMod()
				}
			}
		}
		if best == nil {
			return k
		}
		k = best
	}
}

// splitGlobalAxis replaces global loop i, a, by an outer loop of a.Size/c
// and an inner loop of c (a = outer*c + inner).
func splitGlobalAxis(k *Kernel, i int, c int64) *Kernel {
	a := k.Global[i]
	next := 0
	for _, x := range k.Global {
		next = max(next, x.ID+1)
	}
	outer := &Axis{ID: a.ID, Size: a.Size / c, Kind: AxisGlobal}
	inner := &Axis{ID: next, Size: c, Kind: AxisGlobal}
	nk := k.rewrite(func(b *Builder, e *Expr) *Expr {
		if e.Op == OpVar && e.Arg.(*Axis) == a {
			return b.Add(b.Mul(b.Var(outer), b.Int(c)), b.Var(inner))
		}
		return nil
	})
	nk.Global = append(append(append([]*Axis{}, k.Global[:i]...), outer, inner), k.Global[i+1:]...)
	return nk
}
