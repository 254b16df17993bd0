package ir

import "slices"

// SplitReduces is MergeAxes for reduce loops, the other way round: a
// reduce loop r whose index expressions find their element through r/c
// and r%c (a sum over a flattened window, K = kh·kw·Cin, as a convolution
// computed as a matrix product reads it) becomes two nested loops, r/c
// outside and r%c inside, when that leaves fewer divisions and modulos in
// the kernel. Every step of the plain loop would otherwise divide to find
// its element (ResNet's 3x3 convolutions ran at 0.55x the rate of the same
// product over nested loops). The loops visit r in the same order, so a
// float sum is unchanged, bit for bit.
func SplitReduces(k *Kernel) *Kernel {
	for {
		nk := splitOneReduce(k)
		if nk == nil {
			return k
		}
		k = nk
	}
}

// splitOneReduce makes the first split that removes divisions, or returns
// nil when none does.
func splitOneReduce(k *Kernel) *Kernel {
	before := k.countDivMod()
	for _, r := range k.ReduceAxes() {
		for _, c := range divisorsOf(k, r) {
			if nk := splitReduce(k, r, c); nk.countDivMod() < before {
				return nk
			}
		}
	}
	return nil
}

// divisorsOf lists the constants that expressions using r's variable are
// divided by (or taken modulo), which divide r's size: the candidate
// inner sizes of a split.
func divisorsOf(k *Kernel, r *Axis) []int64 {
	var out []int64
	seen := map[int64]bool{}
	Walk(k.Stores, func(e *Expr) {
		if (e.Op != OpDiv && e.Op != OpMod) || e.DType.IsFloat() || !e.Src[1].IsConst() || !usesVar(e.Src[0], r) {
			return
		}
		c, _ := e.Src[1].ConstInt()
		if c > 1 && c < r.Size && r.Size%c == 0 && !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	})
	return out
}

// splitReduce replaces reduce axis r by an outer loop of r.Size/c and an
// inner loop of c (r = outer·c + inner), in the place r had among its
// reduce's axes.
func splitReduce(k *Kernel, r *Axis, c int64) *Kernel {
	id := 0
	for _, a := range k.ReduceAxes() {
		id = max(id, a.ID+1)
	}
	outer := &Axis{ID: r.ID, Size: r.Size / c, Kind: AxisReduce}
	inner := &Axis{ID: id, Size: c, Kind: AxisReduce}
	args := map[*ReduceArg]*ReduceArg{} // members of a group keep sharing their axes
	return k.rewrite(func(b *Builder, e *Expr) *Expr {
		switch e.Op {
		case OpVar:
			if e.Arg.(*Axis) == r {
				return b.Add(b.Mul(b.Var(outer), b.Int(c)), b.Var(inner))
			}
		case OpReduce:
			arg := e.Arg.(*ReduceArg)
			if !slices.Contains(arg.Axes, r) {
				return nil
			}
			na, ok := args[arg]
			if !ok {
				na = &ReduceArg{Op: arg.Op}
				for _, a := range arg.Axes {
					if a == r {
						na.Axes = append(na.Axes, outer, inner)
					} else {
						na.Axes = append(na.Axes, a)
					}
				}
				args[arg] = na
			}
			return b.Reduce(na, b.Rebuild(e.Src[0], func(x *Expr) *Expr {
				if x.Op == OpVar && x.Arg.(*Axis) == r {
					return b.Add(b.Mul(b.Var(outer), b.Int(c)), b.Var(inner))
				}
				return nil
			}, map[*Expr]*Expr{}))
		}
		return nil
	})
}
