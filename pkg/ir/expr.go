package ir

import (
	"fmt"
	"math"
)

// AxisKind says how a loop axis is iterated.
type AxisKind uint8

const (
	AxisGlobal AxisKind = iota // one iteration per output element; the outermost is split across cores
	AxisReduce                 // accumulated by a Reduce expression
)

// Axis is one loop of a kernel. Axes are compared by pointer.
type Axis struct {
	ID   int
	Size int64 // the trip count; for a symbolic axis, the largest it can be
	Kind AxisKind
	// Sym, when not nil, makes the trip count a launch-time value: a
	// dimension that depends on a variable (the attended length
	// start_pos+1). Size bounds it, so index bounds stay sound.
	Sym *SymBound
}

// Bound prints the trip count for dumps: the size, or the symbolic count
// with its largest value.
func (a *Axis) Bound() string {
	if a.Sym == nil {
		return fmt.Sprint(a.Size)
	}
	return fmt.Sprintf("%s(<=%d)", a.Sym, a.Size)
}

// IsSym is true for an axis whose trip count is known only at launch.
func (a *Axis) IsSym() bool { return a.Sym != nil }

// SymBound is a symbolic trip count: vars[Param] + Add.
type SymBound struct {
	Param int
	Add   int64
}

func (s *SymBound) String() string {
	switch {
	case s.Add > 0:
		return fmt.Sprintf("vars[%d]+%d", s.Param, s.Add)
	case s.Add < 0:
		return fmt.Sprintf("vars[%d]-%d", s.Param, -s.Add)
	}
	return fmt.Sprintf("vars[%d]", s.Param)
}

// Trip is the axis's trip count for a launch's vars.
func (a *Axis) Trip(vars []int64) int64 {
	if a.Sym == nil {
		return a.Size
	}
	if a.Sym.Param >= len(vars) {
		return 0
	}
	return min(max(vars[a.Sym.Param]+a.Sym.Add, 0), a.Size)
}

// ParamArg is the argument of an OpParam: vars[Index], a launch-time
// integer known to lie in [Min, Max] (a variable's range, so the
// simplifier and the bounds treat it like an axis). Name is for dumps.
type ParamArg struct {
	Index    int
	Name     string
	Min, Max int64
}

// Name is the loop variable's name in rendered source.
func (a *Axis) Name() string {
	if a.Kind == AxisReduce {
		return fmt.Sprintf("ridx%d", a.ID)
	}
	return fmt.Sprintf("gidx%d", a.ID)
}

// ReduceArg is the argument of an OpReduce expression: the reduction and the
// loops it owns. The value is accumulated over all of Axes.
type ReduceArg struct {
	Op   Op // OpSum or OpMaxReduce
	Axes []*Axis
}

// Expr is a node of a kernel's scalar expression DAG. Exprs are interned by
// a Builder: structurally equal expressions are the same pointer, which
// gives common-subexpression elimination for free. Never mutate one.
type Expr struct {
	Op    Op
	DType DType
	Src   []*Expr
	// Arg: OpConst float64 (floats) or int64 (ints, bool); OpVar *Axis;
	// OpParam ParamArg; OpLoad/OpStore int (buffer index); OpReduce *ReduceArg.
	Arg any
	// Min and Max bound the value of integer and bool expressions (inclusive).
	Min, Max int64
	id       int // creation order, for stable output
}

func (e *Expr) IsConst() bool { return e.Op == OpConst }

// ConstInt returns the value of an integer constant.
func (e *Expr) ConstInt() (int64, bool) {
	if e.Op != OpConst {
		return 0, false
	}
	v, ok := e.Arg.(int64)
	return v, ok
}

// ConstFloat returns the value of a constant as float64.
func (e *Expr) ConstFloat() float64 {
	switch v := e.Arg.(type) {
	case float64:
		return v
	case int64:
		return e.DType.IntToFloat(v)
	}
	return 0
}

type floatBits uint64 // map key for float constants: keeps -0 apart from 0

type exprKey struct {
	op      Op
	dt      DType
	arg     any
	a, b, c *Expr
}

// Builder interns expressions and simplifies them as they are built (smart
// constructors), so every expression it returns is already in simplified
// form. One Builder per kernel.
type Builder struct {
	m map[exprKey]*Expr
	n int
}

func NewBuilder() *Builder { return &Builder{m: map[exprKey]*Expr{}} }

// raw interns a node without simplification, computing its bounds.
func (b *Builder) raw(op Op, dt DType, arg any, src ...*Expr) *Expr {
	k := exprKey{op: op, dt: dt, arg: arg}
	if f, ok := arg.(float64); ok {
		k.arg = floatBits(math.Float64bits(f))
	}
	if len(src) > 0 {
		k.a = src[0]
	}
	if len(src) > 1 {
		k.b = src[1]
	}
	if len(src) > 2 {
		k.c = src[2]
	}
	if e, ok := b.m[k]; ok {
		return e
	}
	e := &Expr{Op: op, DType: dt, Src: src, Arg: arg, id: b.n}
	b.n++
	e.Min, e.Max = bounds(e)
	b.m[k] = e
	return e
}

// Const makes a constant of the given dtype (integers are truncated and
// wrapped to the dtype; float constants are rounded to the dtype).
func (b *Builder) Const(dt DType, v float64) *Expr {
	switch {
	case dt.IsFloat():
		return b.raw(OpConst, dt, RoundFloat(dt, v))
	case dt == Bool:
		if v != 0 {
			return b.raw(OpConst, dt, int64(1))
		}
		return b.raw(OpConst, dt, int64(0))
	}
	return b.raw(OpConst, dt, dt.Wrap(int64(v)))
}

// ConstInt makes an integer (or bool) constant of dt, wrapped to its width.
func (b *Builder) ConstInt(dt DType, v int64) *Expr { return b.raw(OpConst, dt, dt.Wrap(v)) }

// Int makes an index constant.
func (b *Builder) Int(v int64) *Expr { return b.raw(OpConst, Index, v) }

// True is the bool constant true.
func (b *Builder) True() *Expr { return b.raw(OpConst, Bool, int64(1)) }

func (b *Builder) Var(a *Axis) *Expr { return b.raw(OpVar, Index, a) }

// Param is vars[i], an integer of any value (a random stream's seed).
func (b *Builder) Param(i int) *Expr {
	lo, hi := Index.Range()
	return b.ParamIn(ParamArg{Index: i, Min: lo, Max: hi})
}

// ParamIn is a launch-time integer within a known range (a variable).
func (b *Builder) ParamIn(p ParamArg) *Expr { return b.raw(OpParam, Index, p) }

// ParamIndex is the vars index of an OpParam.
func (e *Expr) ParamIndex() int { return e.Arg.(ParamArg).Index }

// Rand is a uniform float32 in [0, 1) hashed from (seed, counter, idx).
func (b *Builder) Rand(idx, seed, ctr *Expr) *Expr {
	return b.raw(OpRand, Float32, nil, idx, seed, ctr)
}

// Reduce accumulates v over arg's axes (a one-hot sum becomes a gather,
// gather.go).
func (b *Builder) Reduce(arg *ReduceArg, v *Expr) *Expr {
	if g := b.gatherReduce(arg, v); g != nil {
		return g
	}
	return b.raw(OpReduce, v.DType, arg, v)
}

// Load reads buffer buf at idx; when valid is not nil and not always true,
// the load is guarded and yields 0 where valid is false.
func (b *Builder) Load(buf int, dt DType, idx, valid *Expr) *Expr {
	if valid == nil || (valid.IsConst() && valid.Arg.(int64) == 1) {
		return b.raw(OpLoad, dt, buf, idx)
	}
	if valid.IsConst() { // never valid
		return b.Const(dt, 0)
	}
	return b.raw(OpLoad, dt, buf, b.simplifyGiven(idx, valid), valid)
}

func (b *Builder) Store(buf int, idx, val *Expr) *Expr {
	return b.raw(OpStore, val.DType, buf, idx, val)
}

// Bitcast reads x's bits as dt (of the same size).
func (b *Builder) Bitcast(dt DType, x *Expr) *Expr {
	if x.DType == dt {
		return x
	}
	if x.IsConst() {
		var f float64
		var i int64
		if x.DType.IsFloat() {
			f = x.ConstFloat()
		} else {
			i, _ = x.ConstInt()
		}
		f, i = FromBits(dt, Bits(x.DType, f, i))
		if dt.IsFloat() {
			return b.raw(OpConst, dt, f)
		}
		return b.raw(OpConst, dt, i)
	}
	return b.raw(OpBitcast, dt, nil, x)
}

// Cast converts x to dt.
func (b *Builder) Cast(dt DType, x *Expr) *Expr {
	if x.DType == dt {
		return x
	}
	// (int)(0 < v) is v itself when v is 0 or 1.
	if x.Op == OpCmpLt && !dt.IsFloat() && x.Src[0].IsConst() && x.Src[0].ConstFloat() == 0 {
		if v := x.Src[1]; !v.DType.IsFloat() && v.Min >= 0 && v.Max <= 1 {
			return b.Cast(dt, v)
		}
	}
	if x.IsConst() {
		switch {
		case dt.IsFloat():
			return b.Const(dt, x.ConstFloat())
		case x.DType.IsFloat():
			return b.raw(OpConst, dt, CastFloatToInt(dt, x.ConstFloat()))
		}
		v, _ := x.ConstInt()
		return b.raw(OpConst, dt, dt.Wrap(v))
	}
	return b.raw(OpCast, dt, nil, x)
}

func (b *Builder) Add(x, y *Expr) *Expr { return b.Alu(OpAdd, x, y) }
func (b *Builder) Mul(x, y *Expr) *Expr { return b.Alu(OpMul, x, y) }
func (b *Builder) Sub(x, y *Expr) *Expr { return b.Alu(OpSub, x, y) }
func (b *Builder) Div(x, y *Expr) *Expr { return b.Alu(OpDiv, x, y) }
func (b *Builder) Mod(x, y *Expr) *Expr { return b.Alu(OpMod, x, y) }
func (b *Builder) Lt(x, y *Expr) *Expr  { return b.Alu(OpCmpLt, x, y) }

// And is logical and of bool expressions; nil means "true".
func (b *Builder) And(x, y *Expr) *Expr {
	if x == nil {
		return y
	}
	if y == nil {
		return x
	}
	return b.Alu(OpAnd, x, y)
}

// Where is a ternary select.
func (b *Builder) Where(c, x, y *Expr) *Expr { return b.Alu(OpWhere, c, x, y) }

// Alu builds an ALU expression, simplified. The result dtype follows the op
// table's rule: bool for comparisons, the values' for WHERE, else the
// first operand's.
func (b *Builder) Alu(op Op, src ...*Expr) *Expr {
	dt := src[0].DType
	switch op.Info().Result {
	case BoolResult:
		dt = Bool
	case Selected:
		dt = src[1].DType
	}
	if e := b.simplify(op, dt, src); e != nil {
		return e
	}
	return b.raw(op, dt, nil, src...)
}

// Rebuild reconstructs e through the builder, applying f to every node
// first (f may return nil to keep the node). It is how passes substitute
// variables and re-simplify.
func (b *Builder) Rebuild(e *Expr, f func(*Expr) *Expr, memo map[*Expr]*Expr) *Expr {
	if r, ok := memo[e]; ok {
		return r
	}
	if r := f(e); r != nil {
		memo[e] = r
		return r
	}
	src := make([]*Expr, len(e.Src))
	for i, s := range e.Src {
		src[i] = b.Rebuild(s, f, memo)
	}
	var r *Expr
	switch {
	case e.Op.IsALU() && e.Op != OpCast && e.Op != OpBitcast:
		r = b.Alu(e.Op, src...)
	case e.Op == OpCast:
		r = b.Cast(e.DType, src[0])
	case e.Op == OpBitcast:
		r = b.Bitcast(e.DType, src[0])
	case e.Op == OpLoad:
		var valid *Expr
		if len(src) > 1 {
			valid = src[1]
		}
		r = b.Load(e.Arg.(int), e.DType, src[0], valid)
	case e.Op == OpConst:
		r = b.raw(OpConst, e.DType, e.Arg)
	default:
		r = b.raw(e.Op, e.DType, e.Arg, src...)
	}
	memo[e] = r
	return r
}

// Walk visits every expression reachable from roots once, sources first
// (a topological order), in a deterministic order.
func Walk(roots []*Expr, visit func(*Expr)) { walkPruned(roots, nil, visit) }

// walkPruned is Walk that neither visits nor enters the expressions prune
// accepts (nil prunes nothing).
func walkPruned(roots []*Expr, prune func(*Expr) bool, visit func(*Expr)) {
	seen := map[*Expr]bool{}
	var rec func(*Expr)
	rec = func(e *Expr) {
		if seen[e] || (prune != nil && prune(e)) {
			return
		}
		seen[e] = true
		for _, s := range e.Src {
			rec(s)
		}
		visit(e)
	}
	for _, r := range roots {
		rec(r)
	}
}

// WalkPre visits each distinct node under roots once, a node before its
// sources, and goes into a node's sources only when enter returns true
// for it (a search that stops at reduces or at what it matched).
func WalkPre(roots []*Expr, enter func(*Expr) bool) {
	seen := map[*Expr]bool{}
	var rec func(*Expr)
	rec = func(e *Expr) {
		if seen[e] {
			return
		}
		seen[e] = true
		if enter(e) {
			for _, s := range e.Src {
				rec(s)
			}
		}
	}
	for _, r := range roots {
		rec(r)
	}
}

// bounds computes a sound [min, max] for integer and bool expressions.
func bounds(e *Expr) (int64, int64) {
	if e.DType.IsFloat() {
		return 0, 0
	}
	lo, hi := e.DType.Range()
	if e.DType == Uint64 { // bit patterns: no order to bound
		return lo, hi
	}
	// A bound at the saturation limit may stand for any larger value.
	clamp := func(a, b int64) (int64, int64) {
		if a < lo || b > hi || a > b || a <= -satLimit || b >= satLimit {
			return lo, hi
		}
		return a, b
	}
	s := e.Src
	switch e.Op {
	case OpConst:
		v := e.Arg.(int64)
		return v, v
	case OpVar:
		return 0, e.Arg.(*Axis).Size - 1
	case OpParam:
		p := e.Arg.(ParamArg)
		return p.Min, p.Max
	case OpAdd:
		return clamp(satAdd(s[0].Min, s[1].Min), satAdd(s[0].Max, s[1].Max))
	case OpSub:
		return clamp(satAdd(s[0].Min, -s[1].Max), satAdd(s[0].Max, -s[1].Min))
	case OpMul:
		p := []int64{satMul(s[0].Min, s[1].Min), satMul(s[0].Min, s[1].Max), satMul(s[0].Max, s[1].Min), satMul(s[0].Max, s[1].Max)}
		return clamp(minOf(p), maxOf(p))
	case OpDiv: // truncating: monotonic in x for a constant divisor
		if c := s[1].Min; c != 0 && c == s[1].Max {
			if c > 0 {
				return clamp(s[0].Min/c, s[0].Max/c)
			}
			return clamp(s[0].Max/c, s[0].Min/c)
		}
		m := max(satNeg(s[0].Min), s[0].Max) // |x/y| <= |x| (x/0 is 0)
		return clamp(-m, m)
	case OpMod: // sign of the dividend, |x%y| < |y|, |x%y| <= |x|
		m := min(max(satNeg(s[1].Min), s[1].Max)-1, max(satNeg(s[0].Min), s[0].Max))
		if s[0].Min >= 0 {
			return clamp(0, m)
		}
		return clamp(-m, m)
	case OpMax:
		return max(s[0].Min, s[1].Min), max(s[0].Max, s[1].Max)
	case OpWhere:
		if !e.DType.IsFloat() {
			return min(s[1].Min, s[2].Min), max(s[1].Max, s[2].Max)
		}
	case OpNeg:
		return clamp(satNeg(s[0].Max), satNeg(s[0].Min))
	case OpCast:
		if !s[0].DType.IsFloat() && s[0].Min >= lo && s[0].Max <= hi {
			return s[0].Min, s[0].Max
		}
	}
	return lo, hi
}

const satLimit = math.MaxInt64 / 4

// satNeg is -a, saturating like satAdd.
func satNeg(a int64) int64 { return satAdd(0, -max(a, -satLimit)) }

func satAdd(a, b int64) int64 {
	r := a + b
	if r > satLimit {
		return satLimit
	}
	if r < -satLimit {
		return -satLimit
	}
	return r
}

func satMul(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	r := a * b
	if r/b != a || r > satLimit || r < -satLimit {
		if (a < 0) != (b < 0) {
			return -satLimit
		}
		return satLimit
	}
	return r
}

func minOf(v []int64) int64 {
	m := v[0]
	for _, x := range v[1:] {
		m = min(m, x)
	}
	return m
}

func maxOf(v []int64) int64 {
	m := v[0]
	for _, x := range v[1:] {
		m = max(m, x)
	}
	return m
}

// MayWrap says whether an integer ADD, SUB, MUL, NEG or DIV of a user dtype
// can leave the dtype's range, so that its value wraps (docs/language.md,
// "Dtype rules"): the operands' bounds decide. A renderer computes such an
// op in unsigned arithmetic and narrows the result; any other op is plain C.
func (e *Expr) MayWrap() bool {
	// unsigned int and wider unsigned types wrap in C itself
	if !e.DType.IsInt() || e.DType == Index || e.DType == Uint32 || e.DType == Uint64 {
		return false
	}
	lo, hi := e.DType.Range()
	s := e.Src
	var a, b int64
	switch e.Op {
	case OpAdd:
		a, b = satAdd(s[0].Min, s[1].Min), satAdd(s[0].Max, s[1].Max)
	case OpSub:
		a, b = satAdd(s[0].Min, -s[1].Max), satAdd(s[0].Max, -s[1].Min)
	case OpMul:
		p := []int64{satMul(s[0].Min, s[1].Min), satMul(s[0].Min, s[1].Max), satMul(s[0].Max, s[1].Min), satMul(s[0].Max, s[1].Max)}
		a, b = minOf(p), maxOf(p)
	case OpNeg:
		a, b = satNeg(s[0].Max), satNeg(s[0].Min)
	case OpDiv: // only MIN / -1 leaves the range
		return lo < 0 && s[0].Min == lo && s[1].Min <= -1 && s[1].Max >= -1
	default:
		return false
	}
	return a < lo || b > hi || a <= -satLimit || b >= satLimit
}
