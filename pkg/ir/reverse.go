package ir

// ReverseReduces runs a reduce loop backwards when every load that uses
// its axis reads at a negative stride along it (a flipped view: the input
// gradient of a convolution reads the kernel flipped). Reading memory
// forwards suits the prefetchers, and it sidesteps a GCC 12 (-O3 with
// AVX2) loop-vectorizer miscompilation of such reversed accesses inside
// guarded reductions that this project hit (see render.C). The order of a
// float sum changes, as with any blocking of a reduction.
func ReverseReduces(k *Kernel) *Kernel {
	var idxs []*Expr
	Walk(k.Stores, func(e *Expr) {
		if e.Op == OpLoad {
			idxs = append(idxs, e.Src[0])
		}
	})
	flip := map[*Axis]bool{}
	for _, a := range k.ReduceAxes() {
		neg, pos := false, false
		for _, idx := range idxs {
			for _, t := range linearTermsOf(idx, a) {
				if t < 0 {
					neg = true
				} else {
					pos = true
				}
			}
		}
		if neg && !pos && a.Size > 1 && a.Sym == nil {
			flip[a] = true
		}
	}
	if len(flip) == 0 {
		return k
	}
	return k.rewrite(func(b *Builder, e *Expr) *Expr {
		if e.Op == OpVar && flip[e.Arg.(*Axis)] {
			a := e.Arg.(*Axis)
			return b.Add(b.Int(a.Size-1), b.Mul(b.Var(a), b.Int(-1)))
		}
		return nil
	})
}

// linearTermsOf lists the coefficients of axis a's variable in the linear
// form of an index; a use inside a non-linear term counts as positive (it
// is not a plain reversed access).
func linearTermsOf(idx *Expr, a *Axis) []int64 {
	ts, _ := normalize(addTerms(nil, idx, 1))
	var out []int64
	for _, t := range ts {
		if t.e == nil {
			continue
		}
		if t.e.Op == OpVar && t.e.Arg.(*Axis) == a {
			out = append(out, t.k)
			continue
		}
		if usesVar(t.e, a) {
			out = append(out, 1)
		}
	}
	return out
}

// ReadsBackwards reports a load whose index decreases along some loop
// variable (after ReverseReduces, a flip along an output axis). The C
// renderer compiles such kernels without GCC's loop vectorizer.
func ReadsBackwards(k *Kernel) bool {
	found := false
	Walk(k.Stores, func(e *Expr) {
		if e.Op != OpLoad || found {
			return
		}
		ts, _ := normalize(addTerms(nil, e.Src[0], 1))
		for _, t := range ts {
			if t.e != nil && t.e.Op == OpVar && t.k < 0 {
				found = true
			}
		}
	})
	return found
}

// GuardedLoads reports a load under a validity condition (a pad's or a
// cat's reads). MergeOuter keeps such a kernel's innermost loop; the C
// renderer compiles it without GCC's loop if-conversion.
func GuardedLoads(k *Kernel) bool {
	found := false
	Walk(k.Stores, func(e *Expr) { found = found || e.Op == OpLoad && len(e.Src) > 1 })
	return found
}
