package ir

// enumLimit is the most points of a load's loop space enumerateBounds
// walks (a few milliseconds); larger spaces keep the symbolic bounds.
const enumLimit = 1 << 16

// enumerateBounds bounds idx where valid holds by evaluating both at every
// value of the loop variables they read: the proof for a guard that
// relates two loops (a reversed exclusive cumsum reads x[n+g-r] where
// r+MAX(n-2-g, 0) > n-2 and g < n-1, in bounds only through r > g), which
// underGuard's one-expression ranges cannot see. ok is false when the
// space has more than enumLimit points or the expressions read anything
// but loops, constants and integer arithmetic; never is true when valid
// holds nowhere. A nil valid holds everywhere.
func enumerateBounds(idx, valid *Expr) (lo, hi int64, never, ok bool) {
	var order []*Expr
	var vars []*Expr
	ok = true
	roots := []*Expr{idx}
	if valid != nil {
		roots = append(roots, valid)
	}
	Walk(roots, func(e *Expr) {
		switch {
		case e.Op == OpVar:
			vars = append(vars, e)
		case e.Op == OpConst && isIndexOrBool(e.DType):
		case e.Op == OpWhere, e.Op == OpCast && isIndexOrBool(e.Src[0].DType):
		case e.Op.Info().CmpInt != nil && isIndexOrBool(e.Src[0].DType):
		case e.Op.Info().Int != nil && len(e.Src) <= 2 && isIndexOrBool(e.DType):
		default:
			ok = false
		}
		order = append(order, e)
	})
	points := int64(1)
	for _, v := range vars {
		if v.Max < v.Min {
			return 0, 0, true, true
		}
		points = satMul(points, v.Max-v.Min+1)
	}
	if !ok || points > enumLimit {
		return 0, 0, false, false
	}
	pos := make(map[*Expr]int, len(order))
	for i, e := range order {
		pos[e] = i
	}
	val := make([]int64, len(order))
	at := make([]int64, len(vars)) // the point: each variable's value
	for i, v := range vars {
		at[i] = v.Min
	}
	never = true
	for {
		vi := 0
		for i, e := range order {
			val[i] = evalAt(e, val, pos, at, &vi)
		}
		if valid == nil || val[pos[valid]] != 0 {
			x := val[pos[idx]]
			if never {
				lo, hi, never = x, x, false
			}
			lo, hi = min(lo, x), max(hi, x)
		}
		d := 0 // next point: the first variable counts fastest
		for ; d < len(vars); d++ {
			if at[d] < vars[d].Max {
				at[d]++
				break
			}
			at[d] = vars[d].Min
		}
		if d == len(vars) {
			return lo, hi, never, true
		}
	}
}

// evalAt is e's value given its sources' values in val; a variable takes
// the point's next value (Walk visits each once, in vars' order).
func evalAt(e *Expr, val []int64, pos map[*Expr]int, at []int64, vi *int) int64 {
	src := func(i int) int64 { return val[pos[e.Src[i]]] }
	switch {
	case e.Op == OpVar:
		*vi++
		return at[*vi-1]
	case e.Op == OpConst:
		v, _ := e.ConstInt()
		return v
	case e.Op == OpCast:
		if e.DType == Bool {
			return b2i(src(0) != 0)
		}
		return e.DType.Wrap(src(0))
	case e.Op == OpWhere:
		if src(0) != 0 {
			return src(1)
		}
		return src(2)
	case e.Op.Info().CmpInt != nil:
		return b2i(e.Op.Info().CmpInt(src(0), src(1)))
	case len(e.Src) == 1:
		return IntOp(e.Op, e.DType, src(0), 0)
	}
	return IntOp(e.Op, e.DType, src(0), src(1))
}

func isIndexOrBool(dt DType) bool { return dt == Index || dt == Bool || dt == Int32 || dt == Int64 }
