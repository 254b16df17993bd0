package ir

// A one-hot sum is a gather. The Tensor API looks rows up by comparing
// the index with every position and summing the matches (Embedding,
// Tensor.gather, a model's token embedding): sum over r of
// (e == r ? x(r) : 0). Only r == e contributes, so the reduce is x(e),
// or 0 where e is outside the loop: the kernel reads one row instead of
// every row (a 32000-token embedding: 98 MB less per decode step). The
// loads of x(e) are guarded by 0 <= e < size, so an index out of range
// reads nothing, as the one-hot sum gives 0. e may depend on loaded data
// (the token): the load's address then does.

// gatherReduce returns the collapsed form of a SUM over arg.Axes of v
// when v is such a one-hot select along one of the axes, else nil.
func (b *Builder) gatherReduce(arg *ReduceArg, v *Expr) *Expr {
	if arg.Op != OpSum || v.Op != OpWhere {
		return nil
	}
	c, x, zero := v.Src[0], v.Src[1], v.Src[2]
	if !zero.IsConst() || zero.ConstFloat() != 0 || c.Op != OpCmpEq {
		return nil
	}
	for i, a := range arg.Axes {
		if a.Sym != nil {
			continue
		}
		for side := range 2 {
			idx, e := c.Src[side], c.Src[1-side]
			if !isAxisVar(idx, a) || e.DType.IsFloat() || usesVar(e, a) || usesAnyReduceVar(e, arg.Axes) {
				continue
			}
			e64 := b.Cast(Index, e)
			valid := b.And(b.Lt(b.Int(-1), e64), b.Lt(e64, b.Int(a.Size)))
			memo := map[*Expr]*Expr{}
			var f func(*Expr) *Expr
			f = func(n *Expr) *Expr {
				switch {
				case n.Op == OpVar && n.Arg.(*Axis) == a:
					return e64
				case n.Op == OpLoad:
					var g *Expr = valid
					if len(n.Src) > 1 {
						g = b.And(b.Rebuild(n.Src[1], f, memo), valid)
					}
					return b.Load(n.Arg.(int), n.DType, b.Rebuild(n.Src[0], f, memo), g)
				}
				return nil
			}
			body := b.Where(valid, b.Rebuild(x, f, memo), zero)
			rest := append(append([]*Axis{}, arg.Axes[:i]...), arg.Axes[i+1:]...)
			if len(rest) == 0 {
				return body
			}
			return b.Reduce(&ReduceArg{Op: arg.Op, Axes: rest}, body)
		}
	}
	return nil
}

// isAxisVar reports whether e is axis a's variable, possibly cast to an
// integer type that holds every value of the axis.
func isAxisVar(e *Expr, a *Axis) bool {
	if e.Op == OpCast && !e.DType.IsFloat() && e.DType != Bool {
		lo, hi := e.DType.Range()
		if lo > 0 || hi < a.Size-1 {
			return false
		}
		e = e.Src[0]
	}
	return e.Op == OpVar && e.Arg.(*Axis) == a
}

// usesAnyReduceVar reports whether e reads a variable of the axes.
func usesAnyReduceVar(e *Expr, axes []*Axis) bool {
	for _, a := range axes {
		if usesVar(e, a) {
			return true
		}
	}
	return false
}
