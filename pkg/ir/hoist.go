package ir

import "slices"

// HoistInvariantReduces takes out of a row kernel's loops the nested
// reduces that are the same for every row. After factor_reduces a Q4_K
// (or Q4_1) matrix-vector product sums, per row,
//
//	sum over o of  d(row,o)*sc(row,o) * (sum over i of x(o,i)*q(row,o,i))
//	             - dmin(row,o)*m(row,o) * (sum over i of x(o,i))
//
// and the second inner sum, over the activations alone, is recomputed for
// every row (a vector add per 16 weights, a third of the loop's work). It
// depends on the sub-block o and not on the row, so it is computed once
// per launch for every o, and each row adds up its coefficients times
// those sums:
//
//	S(o) = sum over i of x(o,i)                               (once)
//	row: sum over o of d*sc * (sum over i of x*q) + sum over o of -dmin*m * S(o)
//
// S(o) for each value of o is a reduce of its own at the top of the
// kernel, depending on no global axis, so Linearize evaluates it before
// the global loops (as it does softmax's row maximum before the column
// loop), and the row's second sum is a scalar term per o. The lanes of
// an unrolled product (members of a group of reduces, added up by the
// store) share the coefficient, so their S are added first and each row
// pays one multiply-add per o. Only terms of an outer SUM (a float SUM
// over at most maxHoistValues values of o, its axes not symbolic) that
// reach a store through additions alone are taken apart; the float sum's
// order changes, as factor_reduces' does. C targets only: a grid device
// would compute the hoisted sums in every thread.
func HoistInvariantReduces(k *Kernel) *Kernel {
	h := &hoister{k: k, uses: map[*Expr]int{}, globalDep: map[*Expr]bool{}, fresh: map[*Expr]*ReduceArg{}}
	for _, a := range k.ReduceAxes() {
		h.next = max(h.next, a.ID+1)
	}
	Walk(k.Stores, func(e *Expr) {
		for _, s := range e.Src {
			h.uses[s]++
		}
	})
	if !h.anyCandidate() {
		return k
	}
	nk := *k
	nk.B = NewBuilder()
	nk.SIMD, nk.Vec4, nk.Keep, nk.Stream, nk.Rows = nil, nil, nil, nil, nil
	h.b = nk.B
	memo := map[*Expr]*Expr{}
	var f func(e *Expr) *Expr
	f = func(e *Expr) *Expr {
		if e.Op != OpAdd || !e.DType.IsFloat() {
			return nil
		}
		return h.tree(e, f, memo)
	}
	nk.Stores = make([]*Expr, len(k.Stores))
	for i, s := range k.Stores {
		nk.Stores[i] = h.b.Rebuild(s, f, memo)
	}
	if h.hoisted == 0 {
		return k
	}
	return &nk
}

// maxHoistValues bounds the values of o a hoisted sum is computed for
// (each is a reduce of the kernel and a term of every row).
const maxHoistValues = 64

type hoister struct {
	k         *Kernel
	b         *Builder
	uses      map[*Expr]int
	globalDep map[*Expr]bool
	next      int // the next reduce axis ID
	// fresh is the loop of each hoisted sum, by its first lane's body
	// over a placeholder loop variable (canon, one per trip count).
	fresh   map[*Expr]*ReduceArg
	canon   map[int64]*Axis
	hoisted int // hoisted sums (groups times values of o)
	// free: the original kernel's free loop variables by expression; closed
	// the copies of those that read none, shared by every renaming.
	free   map[*Expr][]*Axis
	closed map[*Expr]*Expr
}

// hoistTerm is coef*inner, inner a row-independent reduce nested in outer.
type hoistTerm struct {
	coef, inner *Expr // coef nil: 1
}

func (h *hoister) anyCandidate() bool {
	found := false
	Walk(h.k.Stores, func(e *Expr) {
		if !found && e.Op == OpReduce {
			_, _, found = h.split(e)
		}
	})
	return found
}

// usesGlobal: e depends on a global axis (or a random number).
func (h *hoister) usesGlobal(e *Expr) bool {
	if d, ok := h.globalDep[e]; ok {
		return d
	}
	d := e.Op == OpRand || e.Op == OpVar && e.Arg.(*Axis).Kind == AxisGlobal
	for _, s := range e.Src {
		d = d || h.usesGlobal(s)
	}
	h.globalDep[e] = d
	return d
}

// split takes outer (a SUM over o) apart into its hoistable terms and
// the rest of its body's sum; ok false when it has no hoistable term.
func (h *hoister) split(outer *Expr) (terms []hoistTerm, rest []*Expr, ok bool) {
	arg := outer.Arg.(*ReduceArg)
	if arg.Op != OpSum || !outer.DType.IsFloat() {
		return nil, nil, false
	}
	for _, a := range arg.Axes {
		if a.Sym != nil {
			return nil, nil, false
		}
	}
	if values(arg.Axes) > maxHoistValues {
		return nil, nil, false
	}
	for _, t := range addLeaves(outer.Src[0], h.uses) {
		coef, inner := t, t
		if t.Op == OpMul {
			switch {
			case t.Src[1].Op == OpReduce:
				coef, inner = t.Src[0], t.Src[1]
			case t.Src[0].Op == OpReduce:
				coef, inner = t.Src[1], t.Src[0]
			}
		} else {
			coef = nil
		}
		if inner.Op == OpReduce && h.invariant(inner, arg) && (coef == nil || !usesAxes(coef, inner.Arg.(*ReduceArg).Axes)) {
			terms = append(terms, hoistTerm{coef: coef, inner: inner})
			continue
		}
		rest = append(rest, t)
	}
	return terms, rest, len(terms) > 0
}

// invariant: inner is a float SUM over one loop whose body reads no
// global axis and no reduce axis but its own and outer's, and no reduce
// but those that read no loop around them (a prologue's mean of x,
// computed before the loops).
func (h *hoister) invariant(inner *Expr, outer *ReduceArg) bool {
	arg := inner.Arg.(*ReduceArg)
	if arg.Op != OpSum || !inner.DType.IsFloat() || len(arg.Axes) != 1 || arg.Axes[0].Sym != nil || h.usesGlobal(inner.Src[0]) {
		return false
	}
	ok := true
	WalkPre([]*Expr{inner.Src[0]}, func(e *Expr) bool {
		switch {
		case e.Op == OpReduce:
			ok = ok && len(freeVars([]*Expr{e})[e]) == 0
			return false
		case e.Op == OpVar && e.Arg.(*Axis).Kind == AxisReduce:
			a := e.Arg.(*Axis)
			ok = ok && (a == arg.Axes[0] || slices.Contains(outer.Axes, a))
		}
		return ok
	})
	return ok
}

// usesAxes reports whether e reads any of axes' loop variables.
func usesAxes(e *Expr, axes []*Axis) bool {
	for _, a := range axes {
		if usesVar(e, a) {
			return true
		}
	}
	return false
}

// addLeaves lists the terms of a float sum: e's operands through
// additions used once (shared ones are terms themselves).
func addLeaves(e *Expr, uses map[*Expr]int) []*Expr {
	if e.Op != OpAdd {
		return []*Expr{e}
	}
	var out []*Expr
	for _, s := range e.Src {
		if s.Op == OpAdd && uses[s] == 1 {
			out = append(out, addLeaves(s, uses)...)
		} else {
			out = append(out, s)
		}
	}
	return out
}

// tree rebuilds the float sum rooted at e with its outer SUMs' hoistable
// terms taken out (nil: nothing to take out). The sum keeps its shape
// (the store's tree of lanes), the hoisted terms are added to it as a
// balanced tree: a row's additions stay short chains.
func (h *hoister) tree(e *Expr, f func(*Expr) *Expr, memo map[*Expr]*Expr) *Expr {
	var groups []*hoistGroup
	changed := false
	var rec func(e *Expr, root bool) *Expr
	rec = func(e *Expr, root bool) *Expr {
		if e.Op == OpAdd && (root || h.uses[e] == 1) {
			return h.add(rec(e.Src[0], false), rec(e.Src[1], false))
		}
		if e.Op != OpReduce || h.uses[e] != 1 {
			return h.b.Rebuild(e, f, memo)
		}
		terms, rest, ok := h.split(e)
		if !ok {
			return h.b.Rebuild(e, f, memo)
		}
		changed = true
		axes := e.Arg.(*ReduceArg).Axes
		for _, t := range terms {
			var g *hoistGroup
			for _, x := range groups {
				if x.coef == t.coef && slices.Equal(x.axes, axes) {
					g = x
				}
			}
			if g == nil {
				g = &hoistGroup{coef: t.coef, axes: axes}
				groups = append(groups, g)
			}
			g.inner = append(g.inner, t.inner)
		}
		if len(rest) == 0 {
			return nil
		}
		var body []*Expr
		for _, r := range rest {
			body = append(body, h.b.Rebuild(r, f, memo))
		}
		return h.b.Reduce(e.Arg.(*ReduceArg), h.balanced(body))
	}
	sum := rec(e, true)
	if !changed {
		return nil
	}
	var terms []*Expr
	for _, g := range groups {
		// The terms are summed lane-major: a lane is a value of the
		// trailing axes of o that the block's factors do not read (a
		// Q4_K row's sub-block within its block of 256, whose -dmin is
		// the block's), and each lane's terms over the blocks are added
		// first, then the lanes: the simd pass runs the lanes in a vector
		// and adds the blocks' vectors lane by lane, with one horizontal
		// sum per row (a sum per block, permutes on one port, cost a
		// 2048-long row ~10% of its time).
		outer, inner := splitCoef(g.coef, g.axes)
		per := values(g.axes[len(g.axes)-outer.axes:]) // the lanes
		lanes := make([][]*Expr, per)
		for at := range values(g.axes) {
			sub := h.substituter(g.axes, at)
			arg := h.loop(g.inner[0], sub)
			var s []*Expr
			for _, in := range g.inner {
				s = append(s, h.hoist(in, arg, sub))
			}
			lanes[at%per] = append(lanes[at%per], h.scale(outer, sub, h.scale(inner, sub, h.balanced(s))))
			h.hoisted++
		}
		var sums []*Expr
		for _, l := range lanes {
			sums = append(sums, h.balanced(l))
		}
		terms = append(terms, h.balanced(sums))
	}
	return h.add(sum, h.balanced(terms))
}

// coefFactors is part of a coefficient: the product of factors, negated
// when neg is set.
type coefFactors struct {
	factors []*Expr
	neg     bool
	axes    int // (outer part) the trailing axes of o it leaves out
}

// splitCoef splits a hoisted group's coefficient (a product, through
// multiplications and negations) into the factors that read none of the
// fastest axes of o, as many of them as any factor leaves out (a block's
// factors: a Q4_K row's -dmin per block of 256 weights), and the rest
// (m(o) per sub-block). Those fastest axes are the lanes of the row's
// sum of terms (tree); the float sum's order changes, as the hoisting's
// own does.
func splitCoef(coef *Expr, axes []*Axis) (outer, inner coefFactors) {
	var fs []*Expr
	neg := false
	var walk func(e *Expr)
	walk = func(e *Expr) {
		switch e.Op {
		case OpMul:
			walk(e.Src[0])
			walk(e.Src[1])
		case OpNeg:
			neg = !neg
			walk(e.Src[0])
		default:
			fs = append(fs, e)
		}
	}
	if coef == nil {
		return outer, inner
	}
	walk(coef)
	n := len(axes)
	for ; n > 0; n-- {
		if slices.ContainsFunc(fs, func(f *Expr) bool { return !usesAxes(f, axes[len(axes)-n:]) }) {
			break
		}
	}
	if n == 0 {
		return outer, coefFactors{factors: []*Expr{coef}}
	}
	outer.axes, outer.neg = n, neg
	for _, f := range fs {
		if usesAxes(f, axes[len(axes)-n:]) {
			inner.factors = append(inner.factors, f)
		} else {
			outer.factors = append(outer.factors, f)
		}
	}
	return outer, inner
}

// scale is t times c's factors at a value of o (sub).
func (h *hoister) scale(c coefFactors, sub func(*Expr) *Expr, t *Expr) *Expr {
	var p *Expr
	for _, f := range c.factors {
		x := h.b.Rebuild(f, sub, map[*Expr]*Expr{})
		if p == nil {
			p = x
		} else {
			p = h.b.Mul(p, x)
		}
	}
	if c.neg {
		if p == nil {
			return h.b.Alu(OpNeg, t)
		}
		p = h.b.Alu(OpNeg, p)
	}
	if p == nil {
		return t
	}
	return h.b.Mul(p, t)
}

// hoistGroup: the hoistable terms with one coefficient, of outer SUMs over
// the same axes (the lanes of an unrolled product).
type hoistGroup struct {
	coef  *Expr
	axes  []*Axis
	inner []*Expr
}

// balanced adds xs as a balanced tree (nil for none).
func (h *hoister) balanced(xs []*Expr) *Expr {
	switch len(xs) {
	case 0:
		return nil
	case 1:
		return xs[0]
	}
	return h.b.Add(h.balanced(xs[:len(xs)/2]), h.balanced(xs[len(xs)/2:]))
}

func (h *hoister) add(x, y *Expr) *Expr {
	switch {
	case x == nil:
		return y
	case y == nil:
		return x
	}
	return h.b.Add(x, y)
}

// values is the number of values of axes together.
func values(axes []*Axis) int64 {
	n := int64(1)
	for _, a := range axes {
		n *= a.Size
	}
	return n
}

// substituter replaces axes by their digits of at (the last fastest).
func (h *hoister) substituter(axes []*Axis, at int64) func(*Expr) *Expr {
	vals := map[*Axis]int64{}
	for i := len(axes) - 1; i >= 0; i-- {
		vals[axes[i]] = at % axes[i].Size
		at /= axes[i].Size
	}
	return func(e *Expr) *Expr {
		if e.Op == OpVar {
			if v, ok := vals[e.Arg.(*Axis)]; ok {
				return h.b.Int(v)
			}
		}
		return nil
	}
}

// loop is the loop of the hoisted sums of a group's lanes at the value
// at: shared by the groups whose first lane is the same sum (products
// of the same activations: the FFN's gate and up), so that the sums are
// computed once (the lanes' reduces are then the very same nodes).
func (h *hoister) loop(first *Expr, sub func(*Expr) *Expr) *ReduceArg {
	axis := first.Arg.(*ReduceArg).Axes[0]
	if h.canon == nil {
		h.canon = map[int64]*Axis{}
	}
	c, ok := h.canon[axis.Size]
	if !ok {
		c = &Axis{ID: -1, Size: axis.Size, Kind: AxisReduce}
		h.canon[axis.Size] = c
	}
	key := h.b.Rebuild(first.Src[0], h.renaming(axis, h.b.Var(c), sub), map[*Expr]*Expr{})
	arg, ok := h.fresh[key]
	if !ok {
		arg = &ReduceArg{Op: OpSum, Axes: []*Axis{{ID: h.next, Size: axis.Size, Kind: AxisReduce}}}
		h.next++
		h.fresh[key] = arg
	}
	return arg
}

// hoist is inner at a value of the outer axes (sub), a reduce over arg.
func (h *hoister) hoist(inner *Expr, arg *ReduceArg, sub func(*Expr) *Expr) *Expr {
	axis := inner.Arg.(*ReduceArg).Axes[0]
	body := h.b.Rebuild(inner.Src[0], h.renaming(axis, h.b.Var(arg.Axes[0]), sub), map[*Expr]*Expr{})
	return h.b.Reduce(arg, body)
}

// renaming replaces axis by v and the outer axes as sub does. A subtree
// that reads no loop (a prologue's mean of x) is the same in every copy:
// it is copied into the new kernel once, not once per value of o and lane.
func (h *hoister) renaming(axis *Axis, v *Expr, sub func(*Expr) *Expr) func(*Expr) *Expr {
	if h.free == nil {
		h.free = freeVars(h.k.Stores)
		h.closed = map[*Expr]*Expr{}
	}
	return func(e *Expr) *Expr {
		if e.Op == OpVar && e.Arg.(*Axis) == axis {
			return v
		}
		if fv, ok := h.free[e]; ok && len(fv) == 0 {
			return h.b.Rebuild(e, func(*Expr) *Expr { return nil }, h.closed)
		}
		return sub(e)
	}
}
