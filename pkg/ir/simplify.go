package ir

import (
	"math"
	"slices"
)

// The symbolic simplifier. It runs inside Builder.Alu, so every expression
// is simplified bottom-up as it is built. Integer index math is kept in a
// linear normal form (a sum of term*coefficient plus a constant, terms in
// first-seen order), which is what lets the div/mod rules cancel the
// reshapes that lowering produces: ((i*6+j)/6)%4 → i when j < 6, i < 4.

// simplify returns a simplified replacement for op(src...), or nil to build
// the node as is.
func (b *Builder) simplify(op Op, dt DType, src []*Expr) *Expr {
	if e := b.fold(op, dt, src); e != nil {
		return e
	}
	// Integer (and bool) expressions whose bounds pin them to one value.
	if !dt.IsFloat() && op != OpWhere {
		if e := b.raw(op, dt, nil, src...); e.Min == e.Max && op != OpCast {
			return b.raw(OpConst, dt, e.Min)
		}
	}
	x := src[0]
	var y *Expr
	if len(src) > 1 {
		y = src[1]
	}
	// Constants go to the right of commutative ops.
	if y != nil && op.Commutative() && x.IsConst() && !y.IsConst() {
		x, y = y, x
		src = []*Expr{x, y}
	}
	isInt := !dt.IsFloat() && dt != Bool
	switch op {
	case OpAdd:
		if isInt {
			return b.linear(addTerms(nil, x, 1), addTerms(nil, y, 1), dt)
		}
		if y.IsConst() && y.ConstFloat() == 0 && !isNegZero(y) {
			return nil // x + 0.0 is not x for x = -0.0; keep it
		}
	case OpSub:
		if isInt {
			return b.linear(addTerms(nil, x, 1), addTerms(nil, y, -1), dt)
		}
		if y.IsConst() && y.ConstFloat() == 0 {
			return x
		}
	case OpMul:
		if y.IsConst() && isInt {
			switch c, _ := y.ConstInt(); c { // (a uint64 coefficient is its bit pattern)
			case 1:
				return x
			case 0:
				return b.Const(dt, 0)
			default:
				return b.linear(addTerms(nil, x, c), nil, dt)
			}
		}
		if y.IsConst() && y.ConstFloat() == 1 {
			return x
		}
	case OpDiv:
		if c, ok := y.ConstInt(); ok && isInt && (c == 0 || c == -1) {
			if c == 0 { // x/0 is 0 (docs/language.md)
				return b.Const(dt, 0)
			}
			return b.Sub(b.Const(dt, 0), x) // x/-1 is -x, wrapping at MIN
		}
		if isInt {
			return b.divConst(x, y, dt)
		}
		if y.IsConst() && y.ConstFloat() == 1 {
			return x
		}
	case OpMod:
		if c, ok := y.ConstInt(); ok && isInt && (c == 0 || c == -1) {
			return b.Const(dt, 0)
		}
		if isInt {
			return b.modConst(x, y, dt)
		}
	case OpMax:
		if x == y {
			return x
		}
		if !dt.IsFloat() {
			if x.Min >= y.Max {
				return x
			}
			if y.Min >= x.Max {
				return y
			}
		}
	case OpCmpLt:
		if !x.DType.IsFloat() {
			if x.Max < y.Min {
				return b.Const(Bool, 1)
			}
			if x.Min >= y.Max {
				return b.Const(Bool, 0)
			}
			if isIndex(x.DType) {
				return b.ltLinear(x, y)
			}
		}
	case OpAnd:
		if dt == Bool {
			switch {
			case y.IsConst() && y.Arg.(int64) == 1:
				return x
			case y.IsConst():
				return y
			case x == y:
				return x
			}
			// a && b where one conjunct already holds inside the other
			if hasConjunct(x, y) {
				return x
			}
			if hasConjunct(y, x) {
				return y
			}
		}
	case OpOr:
		if dt == Bool && y.IsConst() {
			if y.Arg.(int64) == 1 {
				return y
			}
			return x
		}
	case OpWhere:
		c, a, e := src[0], src[1], src[2]
		if c.IsConst() {
			if c.Arg.(int64) != 0 {
				return a
			}
			return e
		}
		if a == e {
			return a
		}
		if dt == Bool && a.IsConst() && e.IsConst() && a.Arg.(int64) == 1 && e.Arg.(int64) == 0 {
			return c
		}
		// where(c, k, 0) → (int)c * k for integer constants: lets index
		// arithmetic built from masks fold back into linear form.
		if !dt.IsFloat() && dt != Bool && a.IsConst() && e.IsConst() && e.ConstFloat() == 0 {
			return b.Mul(b.Cast(dt, c), a)
		}
		// where(v, load(buf, i, v'), 0) with v a conjunct of v': the guarded
		// load already yields 0 where v is false.
		if a.Op == OpLoad && len(a.Src) > 1 && e.IsConst() && e.ConstFloat() == 0 && !isNegZero(e) && hasConjunct(a.Src[1], c) {
			return a
		}
	}
	return nil
}

func isNegZero(e *Expr) bool {
	f, ok := e.Arg.(float64)
	return ok && f == 0 && 1/f < 0
}

// hasConjunct reports whether c is one of the and-ed terms of e.
func hasConjunct(e, c *Expr) bool {
	if e == c {
		return true
	}
	if e.Op == OpAnd {
		return hasConjunct(e.Src[0], c) || hasConjunct(e.Src[1], c)
	}
	if c.Op == OpAnd {
		return hasConjunct(e, c.Src[0]) && hasConjunct(e, c.Src[1])
	}
	return false
}

// fold evaluates ops whose operands are all constants.
func (b *Builder) fold(op Op, dt DType, src []*Expr) *Expr {
	for _, s := range src {
		if !s.IsConst() {
			return nil
		}
	}
	x := src[0]
	switch {
	case op == OpWhere:
		if x.Arg.(int64) != 0 {
			return src[1]
		}
		return src[2]
	case op.IsCompare() && x.DType.IsFloat():
		return b.Const(Bool, b2f(Compare(op, x.ConstFloat(), src[1].ConstFloat())))
	case op.IsCompare():
		xv, _ := x.ConstInt()
		yv, _ := src[1].ConstInt()
		return b.Const(Bool, b2f(CompareInt(op, x.DType, xv, yv)))
	case x.DType.IsFloat():
		var y float64
		if len(src) > 1 {
			y = src[1].ConstFloat()
		}
		return b.Const(dt, FloatOp(op, dt, x.ConstFloat(), y))
	default:
		var y int64
		if len(src) > 1 {
			y, _ = src[1].ConstInt()
		}
		xv, _ := x.ConstInt()
		return b.raw(OpConst, dt, IntOp(op, dt, xv, y))
	}
}

func b2f(v bool) float64 {
	if v {
		return 1
	}
	return 0
}

// term is one summand of a linear form: e*k.
type term struct {
	e *Expr
	k int64
}

// addTerms appends the linear terms of x*k to ts. Constants are kept as a
// term with e == nil.
func addTerms(ts []term, x *Expr, k int64) []term {
	switch {
	case x.IsConst():
		v, _ := x.ConstInt()
		return append(ts, term{nil, v * k})
	case x.Op == OpAdd:
		return addTerms(addTerms(ts, x.Src[0], k), x.Src[1], k)
	case x.Op == OpMul && x.Src[1].IsConst():
		v, _ := x.Src[1].ConstInt()
		return addTerms(ts, x.Src[0], k*v)
	case x.Op == OpCast && losslessIntCast(x) && !wrapsInside(x.Src[0]):
		return addTerms(ts, x.Src[0], k) // buildLinear casts terms back
	}
	return append(ts, term{x, k})
}

// normalize merges equal terms (keeping first-seen order), folds the
// constant, cancels (x/c)*c + x%c into x, and drops zero terms.
func normalize(ts []term) ([]term, int64) {
	var out []term
	var c int64
	idx := map[*Expr]int{}
	for _, t := range ts {
		if t.e == nil {
			c += t.k
			continue
		}
		if i, ok := idx[t.e]; ok {
			out[i].k += t.k
			continue
		}
		idx[t.e] = len(out)
		out = append(out, t)
	}
	// Digit recombination, for x >= 0: (x/(d*m))*(k*m) + ((x/d)%m)*k →
	// (x/d)*k, and with d = 1: (x/m)*(k*m) + (x%m)*k → x*k. Reshapes that
	// split and re-join an axis produce exactly these pairs.
	for changed := true; changed; {
		changed = false
		for i, t := range out {
			if t.k == 0 || t.e.Op != OpMod || t.e.Src[0].Min < 0 {
				continue
			}
			inner, mod := t.e.Src[0], t.e.Src[1]
			m, _ := mod.ConstInt()
			x, d := inner, int64(1)
			if inner.Op == OpDiv && inner.Src[1].IsConst() {
				x = inner.Src[0]
				d, _ = inner.Src[1].ConstInt()
			}
			for j, u := range out {
				if u.k == 0 || u.e.Op != OpDiv || u.e.Src[0] != x || u.k != t.k*m {
					continue
				}
				if D, _ := u.e.Src[1].ConstInt(); D != d*m {
					continue
				}
				out[i].k, out[j].k = 0, 0
				if n, ok := idx[inner]; ok {
					out[n].k += t.k
				} else {
					idx[inner] = len(out)
					out = append(out, term{inner, t.k})
				}
				changed = true
				break
			}
		}
	}
	kept := out[:0]
	for _, t := range out {
		if t.k != 0 {
			kept = append(kept, t)
		}
	}
	return kept, c
}

// buildLinear renders terms back into an expression (raw: already normal).
func (b *Builder) buildLinear(ts []term, c int64, dt DType) *Expr {
	var acc *Expr
	if dt != Index { // user integers wrap: coefficients live modulo 2^bits
		c = dt.Wrap(c)
	}
	for _, t := range ts {
		if dt != Index {
			if t.k = dt.Wrap(t.k); t.k == 0 {
				continue
			}
		}
		e := t.e
		if e.DType != dt {
			e = b.raw(OpCast, dt, nil, e)
		}
		if t.k != 1 {
			e = b.raw(OpMul, dt, nil, e, b.raw(OpConst, dt, t.k))
		}
		if acc == nil {
			acc = e
		} else {
			acc = b.raw(OpAdd, dt, nil, acc, e)
		}
	}
	if acc == nil {
		return b.raw(OpConst, dt, c)
	}
	if c != 0 {
		acc = b.raw(OpAdd, dt, nil, acc, b.raw(OpConst, dt, c))
	}
	if acc.Min == acc.Max {
		return b.raw(OpConst, dt, acc.Min)
	}
	return acc
}

func (b *Builder) linear(a, c []term, dt DType) *Expr {
	ts, k := normalize(append(a, c...))
	if js, ok := b.joinMods(ts, dt); ok {
		ts, k2 := normalize(js)
		return b.buildLinear(ts, k+k2, dt)
	}
	return b.buildLinear(ts, k, dt)
}

// joinMods joins the low digits of one number, for x >= 0:
// ((x/d)%m)*(k*d) + (x%d)*k → (x%(d*m))*k. Movement ops that split a
// contiguous run of memory into several dims (an image's rows and
// columns) give these pairs; joined, the run is one linear index, so a
// split of it into lanes (a split reduce) is seen to be contiguous.
func (b *Builder) joinMods(ts []term, dt DType) ([]term, bool) {
	for i, t := range ts {
		if t.e.Op != OpMod || t.e.Src[0].Op != OpDiv {
			continue
		}
		m, ok1 := t.e.Src[1].ConstInt()
		d, ok2 := t.e.Src[0].Src[1].ConstInt()
		x := t.e.Src[0].Src[0]
		if !ok1 || !ok2 || m <= 0 || d <= 0 || x.Min < 0 {
			continue
		}
		for j, u := range ts {
			if u.e.Op != OpMod || u.e.Src[0] != x || u.k*d != t.k {
				continue
			}
			if dd, ok := u.e.Src[1].ConstInt(); !ok || dd != d {
				continue
			}
			out := make([]term, 0, len(ts)-1)
			for n, v := range ts {
				switch n {
				case i: // x may be of another type (a term seen through a cast)
					out = addTerms(out, b.Mod(x, b.raw(OpConst, x.DType, d*m)), u.k)
				case j:
				default:
					out = append(out, v)
				}
			}
			return out, true
		}
	}
	return nil, false
}

func gcd(a, b int64) int64 {
	if a < 0 {
		a = -a
	}
	if b < 0 {
		b = -b
	}
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// divConst simplifies x / d for a positive constant d and x >= 0.
func (b *Builder) divConst(x, y *Expr, dt DType) *Expr {
	d, ok := y.ConstInt()
	if !ok || d <= 0 || x.Min < 0 {
		return nil
	}
	if d == 1 {
		return x
	}
	if x.Max < d {
		return b.raw(OpConst, dt, 0)
	}
	if x.Op == OpDiv { // (z/a)/d → z/(a*d)
		if a, ok := x.Src[1].ConstInt(); ok && a > 0 && x.Src[0].Min >= 0 {
			return b.Div(x.Src[0], b.raw(OpConst, dt, a*d))
		}
	}
	ts, c := normalize(addTerms(nil, x, 1))
	// Pull out a common factor: (g*z)/d → z/(d/g).
	g := gcd(c, d)
	for _, t := range ts {
		g = gcd(g, t.k)
	}
	if g > 1 {
		for i := range ts {
			ts[i].k /= g
		}
		inner := b.buildLinear(ts, c/g, dt)
		if inner.Min >= 0 {
			return b.Div(inner, b.raw(OpConst, dt, d/g))
		}
		return nil
	}
	// Split off the terms divisible by d: (q*d + r)/d = q + r/d when q, r >= 0.
	var q, r []term
	for _, t := range ts {
		if t.k%d == 0 {
			q = append(q, term{t.e, t.k / d})
		} else {
			r = append(r, t)
		}
	}
	if a, _, g, ok := b.splitSmall(ts, c, d, dt); ok {
		return b.Div(a, b.raw(OpConst, dt, d/g))
	}
	if len(q) == 0 && c < d {
		return nil
	}
	qc, rc := c/d, c%d
	qe := b.buildLinear(q, qc, dt)
	re := b.buildLinear(r, rc, dt)
	if qe.Min < 0 || re.Min < 0 {
		return nil
	}
	if re.Max < d {
		return qe
	}
	if len(q) == 0 && qc == 0 {
		return nil
	}
	return b.Add(qe, b.raw(OpDiv, dt, nil, re, y))
}

// modConst simplifies x % d for a positive constant d and x >= 0.
func (b *Builder) modConst(x, y *Expr, dt DType) *Expr {
	d, ok := y.ConstInt()
	if !ok || d <= 0 || x.Min < 0 {
		return nil
	}
	if d == 1 {
		return b.raw(OpConst, dt, 0)
	}
	if x.Max < d {
		return x
	}
	if x.Op == OpMod { // (z%(k*d))%d → z%d
		if a, ok := x.Src[1].ConstInt(); ok && a > 0 && a%d == 0 {
			return b.Mod(x.Src[0], y)
		}
	}
	ts, c := normalize(addTerms(nil, x, 1))
	// Reduce coefficients mod d; terms that vanish drop out. Needs every
	// term non-negative so that (q*d + r) % d == r % d.
	changed := false
	var r []term
	for _, t := range ts {
		if t.e.Min < 0 || t.k < 0 {
			return nil
		}
		if k := t.k % d; k != t.k {
			changed = true
			if k != 0 {
				r = append(r, term{t.e, k})
			}
		} else {
			r = append(r, t)
		}
	}
	if c < 0 {
		return nil
	}
	if c%d != c {
		changed = true
	}
	c %= d
	// Common factor: (g*z) % d → (z % (d/g)) * g.
	g := gcd(c, d)
	for _, t := range r {
		g = gcd(g, t.k)
	}
	if g > 1 {
		for i := range r {
			r[i].k /= g
		}
		inner := b.buildLinear(r, c/g, dt)
		return b.Mul(b.Mod(inner, b.raw(OpConst, dt, d/g)), b.raw(OpConst, dt, g))
	}
	if a, s, g, ok := b.splitSmall(r, c, d, dt); ok {
		return b.Add(b.Mul(b.Mod(a, b.raw(OpConst, dt, d/g)), b.raw(OpConst, dt, g)), s)
	}
	if !changed {
		return nil
	}
	return b.Mod(b.buildLinear(r, c, dt), y)
}

func isIndex(dt DType) bool { return dt == Index }

// ltLinear moves constants across an integer comparison so that guards read
// plainly: x+c < d → x < d-c; c < x+d → c-d < x; -x < d → -d < x;
// c < -x → x < -c;
// x*k < d → x < ceil(d/k) for k > 0.
func (b *Builder) ltLinear(x, y *Expr) *Expr {
	dt := x.DType
	if c, ok := y.ConstInt(); ok {
		ts, k := normalize(addTerms(nil, x, 1))
		if len(ts) == 1 {
			t := ts[0]
			switch {
			case t.k == -1: // -e + k < c  ⇔  k - c < e
				return b.Lt(b.raw(OpConst, dt, k-c), t.e)
			case t.k > 1: // e*m + k < c  ⇔  e < ceil((c-k)/m)
				return b.Lt(t.e, b.raw(OpConst, dt, ceilDiv(c-k, t.k)))
			}
		}
		if k != 0 {
			return b.Lt(b.buildLinear(ts, 0, dt), b.raw(OpConst, dt, c-k))
		}
		return nil
	}
	if c, ok := x.ConstInt(); ok {
		ts, k := normalize(addTerms(nil, y, 1))
		if len(ts) == 1 && ts[0].k == -1 { // c < -e + k  ⇔  e < k - c
			return b.Lt(ts[0].e, b.raw(OpConst, dt, k-c))
		}
		if k != 0 {
			return b.Lt(b.raw(OpConst, dt, c-k), b.buildLinear(ts, 0, dt))
		}
	}
	return nil
}

func ceilDiv(a, m int64) int64 {
	q := a / m
	if a%m != 0 && (a > 0) == (m > 0) {
		q++
	}
	return q
}

// wrapsInside says whether a sum or product addTerms would decompose
// wrapped somewhere (a uint8 u*2): its linear terms then equal its value
// only modulo 2^bits, so a cast to a wider type must not be seen through.
func wrapsInside(e *Expr) bool {
	switch e.Op {
	case OpAdd, OpMul:
		return e.MayWrap() || wrapsInside(e.Src[0]) || wrapsInside(e.Src[1])
	}
	return false
}

// losslessIntCast: an integer-to-integer cast whose operand's bounds fit the
// target type, so it changes no value and linear forms can look through it.
func losslessIntCast(x *Expr) bool {
	from := x.Src[0].DType
	if x.DType.IsFloat() || from.IsFloat() || x.DType == Bool || from == Bool {
		return false
	}
	lo, hi := x.DType.Range()
	return x.Src[0].Min >= lo && x.Src[0].Max <= hi
}

// splitSmall finds, for x = sum(ts) + c and a divisor d > 0, a factor g of
// d with x = g*A + S, where A gathers the terms whose coefficients g
// divides (and c - c%g) and S, the rest plus c%g, lies in [0, g). Then
// x/d = A/(d/g) and x%d = (A%(d/g))*g + S whenever A >= 0: the small terms
// never carry into the quotient. g is the gcd of d and the coefficients
// that share a factor with d. ok is false when no such split exists.
func (b *Builder) splitSmall(ts []term, c, d int64, dt DType) (a, s *Expr, g int64, ok bool) {
	g = d
	var big, small []term
	for _, t := range ts {
		if gcd(t.k, d) > 1 {
			big = append(big, t)
			g = gcd(g, t.k)
		} else {
			small = append(small, t)
		}
	}
	if len(big) == 0 || len(small) == 0 || g <= 1 {
		return nil, nil, 0, false
	}
	// Terms the chosen g does not divide belong to the remainder too.
	var keep []term
	for _, t := range big {
		if t.k%g == 0 {
			keep = append(keep, term{t.e, t.k / g})
		} else {
			small = append(small, t)
		}
	}
	rc := ((c % g) + g) % g
	s = b.buildLinear(small, rc, dt)
	if s.Min < 0 || s.Max >= g {
		return nil, nil, 0, false
	}
	a = b.buildLinear(keep, (c-rc)/g, dt)
	if a.Min < 0 {
		return nil, nil, 0, false
	}
	return a, s, g, true
}

// simplifyGiven simplifies a load's index under its guard: the index is
// only evaluated where valid holds, so every conjunct x < c or c < x of
// valid narrows x's range there. Each such x is replaced by a placeholder
// variable with the narrowed range (underGuard), the index is rebuilt
// (x%125 is x when x < 125; (x*125 + y)/3125 is x/25 when y < 125), and
// the placeholders are put back. The result is kept only when it has fewer
// divisions and modulos, or as many and fewer nodes; it equals idx
// wherever valid holds and is undefined elsewhere, which a guarded load
// never reads.
func (b *Builder) simplifyGiven(idx, valid *Expr) *Expr {
	res, holes, never := b.underGuard(idx, valid)
	if never || len(holes) == 0 {
		return idx
	}
	for i := len(holes) - 1; i >= 0; i-- {
		h := holes[i]
		back := h.x
		if h.lo != 0 {
			back = b.Sub(h.x, b.Int(h.lo))
		}
		res = b.Rebuild(res, func(e *Expr) *Expr {
			if e == h.v {
				return back
			}
			return nil
		}, map[*Expr]*Expr{})
	}
	if dr, di := divModCount(res), divModCount(idx); dr < di || dr == di && size(res) < size(idx) {
		return res
	}
	return idx
}

// boundsGiven bounds idx where valid holds: the bounds of the index
// rebuilt over the guard's narrowed ranges (underGuard). never is true
// when valid can never hold (the index is then never used). With digits,
// a variable the guard reads as digits (v/c, v%c) is split into them
// first (see splitDigits): tighter where the guard bounds the digits, but
// looser where v's range is not a multiple of c, so a caller intersects
// both answers.
func (b *Builder) boundsGiven(idx, valid *Expr, digits bool) (lo, hi int64, never bool) {
	// Into b first: underGuard finds sub-expressions by pointer.
	memo := map[*Expr]*Expr{}
	keep := func(*Expr) *Expr { return nil }
	idx, valid = b.Rebuild(idx, keep, memo), b.Rebuild(valid, keep, memo)
	var res *Expr
	if digits {
		res, never = b.underGuardDigits(idx, valid)
	} else {
		res, _, never = b.underGuard(idx, valid)
	}
	return res.Min, res.Max, never
}

// hole is a placeholder variable of underGuard.
type hole struct {
	v  *Expr // the placeholder variable (x - lo)
	x  *Expr // what it stands for, in terms of earlier placeholders
	lo int64
}

// underGuard rebuilds idx with every sub-expression x that a conjunct
// x < c or c < x of valid narrows replaced by a placeholder variable v
// (x = v + lo, v in [0, hi-lo]); holes lists the placeholders, innermost
// expressions first. The result equals idx wherever valid holds, and its
// bounds are idx's bounds there. never is true when the conjuncts
// contradict each other (valid is never true).
func (b *Builder) underGuard(idx, valid *Expr) (res *Expr, holes []hole, never bool) {
	return b.narrow(idx, valid, false)
}

// underGuardDigits is underGuard for bounds only: before a guarded
// expression is replaced by its placeholder, each variable it reads as
// digits (v/c, v%c, v >= 0) becomes c*q + r everywhere, q and r fresh
// variables, so that a flattened position whose digits the guard bounds
// one by one (a convolution's window over rows p = oy*W + ox: 0 < ky +
// p/W < H+1 and 0 < kx + p%W < W+1) is bounded in the index through its
// digits. The result is not idx (it has variables of its own): only its
// bounds are.
func (b *Builder) underGuardDigits(idx, valid *Expr) (res *Expr, never bool) {
	res, _, never = b.narrow(idx, valid, true)
	return res, never
}

// narrow is underGuard, splitting digits first when digits is set.
func (b *Builder) narrow(idx, valid *Expr, digits bool) (res *Expr, holes []hole, never bool) {
	if idx.IsConst() || !isIndex(idx.DType) {
		return idx, nil, false
	}
	type rng struct {
		x      *Expr
		lo, hi int64
	}
	var rs []rng
	pos := map[*Expr]int{}
	var collect func(c *Expr)
	collect = func(c *Expr) {
		if c.Op == OpAnd {
			collect(c.Src[0])
			collect(c.Src[1])
			return
		}
		if c.Op != OpCmpLt || !isIndex(c.Src[0].DType) {
			return
		}
		x, lo, hi := c.Src[0], int64(math.MinInt64), int64(math.MaxInt64)
		if k, ok := c.Src[1].ConstInt(); ok && !x.IsConst() {
			hi = k - 1
		} else if k, ok := x.ConstInt(); ok && !c.Src[1].IsConst() {
			x, lo = c.Src[1], k+1
		} else {
			return
		}
		i, ok := pos[x]
		if !ok {
			i = len(rs)
			pos[x] = i
			rs = append(rs, rng{x, x.Min, x.Max})
		}
		rs[i].lo, rs[i].hi = max(rs[i].lo, lo), min(rs[i].hi, hi)
	}
	collect(valid)
	narrowed := false
	for _, r := range rs {
		narrowed = narrowed || r.lo > r.x.Min || r.hi < r.x.Max
	}
	if !narrowed {
		return idx, nil, false
	}
	// Inner expressions first, so that (x%25) < 20 is seen in terms of
	// x's placeholder once x < 125 has been applied.
	slices.SortStableFunc(rs, func(p, q rng) int { return size(p.x) - size(q.x) })
	exprs := []*Expr{idx}
	for _, r := range rs {
		exprs = append(exprs, r.x)
	}
	nsplit := 0
	for i, r := range rs {
		x := exprs[1+i]
		for digits {
			v, c := digitOf(x)
			if v == nil {
				break
			}
			// v = c*q + r with q in [0, v.Max/c], r in [0, c-1]: every
			// value of v is one such pair (some pairs are no value of v).
			q := b.Var(&Axis{ID: -1000 - nsplit, Size: v.Max/c + 1})
			rem := b.Var(&Axis{ID: -1001 - nsplit, Size: min(c, v.Max+1)})
			nsplit += 2
			split := b.Add(b.Mul(q, b.Int(c)), rem)
			memo := map[*Expr]*Expr{}
			sub := func(e *Expr) *Expr {
				if e == v {
					return split
				}
				return nil
			}
			for j := range exprs {
				exprs[j] = b.Rebuild(exprs[j], sub, memo)
			}
			x = exprs[1+i]
		}
		lo, hi := max(r.lo, x.Min), min(r.hi, x.Max)
		if x.IsConst() || (lo == x.Min && hi == x.Max) || x.DType != Index {
			continue
		}
		if lo > hi {
			return idx, nil, true // never valid; the load yields 0 whatever the index
		}
		v := b.Var(&Axis{ID: -1 - i, Size: hi - lo + 1})
		p := v
		if lo != 0 {
			p = b.Add(v, b.Int(lo))
		}
		holes = append(holes, hole{v, x, lo})
		sub := substLinear(b, x, p)
		memo := map[*Expr]*Expr{}
		for j := range exprs {
			if j != 1+i {
				exprs[j] = b.Rebuild(exprs[j], sub, memo)
			}
		}
	}
	return exprs[0], holes, false
}

// digitOf finds in x a variable read as a digit, v/c or v%c with c > 1
// and v in [0, c) or beyond (v >= 0: truncation is the floor); nil when
// there is none.
func digitOf(x *Expr) (v *Expr, c int64) {
	Walk([]*Expr{x}, func(e *Expr) {
		if v != nil || (e.Op != OpDiv && e.Op != OpMod) || e.Src[0].Op != OpVar || e.Src[0].Min < 0 {
			return
		}
		if k, ok := e.Src[1].ConstInt(); ok && k > 1 && e.Src[0].Max >= k {
			v, c = e.Src[0], k
		}
	})
	return v, c
}

// substLinear returns a Rebuild function that replaces x by p, also inside
// sums that contain all of x's terms with the same coefficients times one
// factor m: with x = i*24 + j, the index i*24 + j + 3 (a PAD's offset)
// becomes p + 3, and (i*24 + j)*256 + 5 (a flattened row) p*256 + 5. A
// scaled variable x = i*2 is replaced in the products of i by multiples of
// 2 too: i*98 + j becomes p*49 + j (the pieces of a concatenation whose
// two axes merge_axes joined into i).
func substLinear(b *Builder, x, p *Expr) func(*Expr) *Expr {
	xs, xc := normalize(addTerms(nil, x, 1))
	scaled := len(xs) == 1 && xc == 0 && xs[0].k != 1
	linear := len(xs) > 1 || xc != 0 || scaled
	return func(e *Expr) *Expr {
		if e == x {
			return p
		}
		if !linear || (e.Op != OpAdd && !(scaled && e.Op == OpMul)) || e.DType != x.DType {
			return nil
		}
		es, ec := normalize(addTerms(nil, e, 1))
		coef := map[*Expr]int64{}
		for _, t := range es {
			coef[t.e] = t.k
		}
		var m int64
		if len(xs) > 0 {
			if c := coef[xs[0].e]; c%xs[0].k == 0 {
				m = c / xs[0].k
			}
		} else if xc != 0 && ec%xc == 0 {
			m = ec / xc
		}
		if m == 0 {
			return nil
		}
		for _, t := range xs {
			if coef[t.e] != t.k*m {
				return nil
			}
			delete(coef, t.e)
		}
		rest := make([]term, 0, len(coef))
		for _, t := range es {
			if _, ok := coef[t.e]; ok {
				rest = append(rest, t)
			}
		}
		return b.Add(b.Mul(p, b.Int(m)), b.buildLinear(rest, ec-xc*m, e.DType))
	}
}

// size counts the nodes of an expression DAG.
func size(e *Expr) int {
	n := 0
	Walk([]*Expr{e}, func(*Expr) { n++ })
	return n
}

func divModCount(e *Expr) int {
	n := 0
	Walk([]*Expr{e}, func(x *Expr) {
		if (x.Op == OpDiv || x.Op == OpMod) && !x.DType.IsFloat() {
			n++
		}
	})
	return n
}
