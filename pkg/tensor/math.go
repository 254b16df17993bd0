package tensor

import (
	"math"
	"strings"

	"tgc/pkg/ir"
)

// Elementwise math, each function a composition of the ALU primitives with
// tinygrad's formula (tinygrad/mixin/elementwise.py at HEAD), so autograd
// and the scheduler only ever see primitives.

// fscalar is a Python float next to t: an int or bool tensor promotes to
// float32, a float tensor keeps its dtype (tinygrad's const promotion).
func (t *Tensor) fscalar(v float64) *Tensor { return t.Scalar(v, true) }

// iscalar is a Python int next to t: it keeps t's dtype.
func (t *Tensor) iscalar(v float64) *Tensor { return t.Scalar(v, false) }

// broadcastCheck returns the broadcast shape of ts, or an error for op that
// names every shape.
func broadcastCheck(op string, ts ...*Tensor) ([]int, *Tensor) {
	shapes := make([][]int, len(ts))
	for i, t := range ts {
		shapes[i] = t.node.Shape
	}
	shape, ok := BroadcastShape(shapes...)
	if !ok {
		parts := make([]string, len(shapes))
		for i, s := range shapes {
			parts[i] = FormatShape(s)
		}
		return nil, errorf(op, "shapes %s cannot be broadcast together", strings.Join(parts, " and "))
	}
	return shape, nil
}

// viaFloat32 computes f in float32 for a float16 or bfloat16 tensor and
// casts back, as tinygrad does for exp and cos (their constants need
// float32 precision).
func (t *Tensor) viaFloat32(f func(*Tensor) *Tensor) *Tensor {
	if t.err != nil {
		return t
	}
	if dt := t.DType(); dt.Compute() != dt {
		return f(t.Cast(dt.Compute())).Cast(dt)
	}
	return f(t)
}

// Exp is exp2(x/ln2).
func (t *Tensor) Exp() *Tensor {
	return t.viaFloat32(func(x *Tensor) *Tensor { return x.Mul(x.fscalar(1 / math.Ln2)).Exp2() })
}

// Log is log2(x)*ln2.
func (t *Tensor) Log() *Tensor {
	l := t.Log2()
	return l.Mul(l.fscalar(math.Ln2))
}

// Log10 is log2(x)*log10(2).
func (t *Tensor) Log10() *Tensor {
	l := t.Log2()
	return l.Mul(l.fscalar(math.Log10(2)))
}

// Rsqrt is 1/sqrt(x).
func (t *Tensor) Rsqrt() *Tensor { return t.Sqrt().Reciprocal() }

// Cos is sin(pi/2 - x).
func (t *Tensor) Cos() *Tensor {
	return t.viaFloat32(func(x *Tensor) *Tensor { return x.fscalar(math.Pi / 2).Sub(x).Sin() })
}

// Tan is sin(x)/cos(x).
func (t *Tensor) Tan() *Tensor { return t.Sin().Div(t.Cos()) }

// Sigmoid is 1/(1+exp(-x)), written with exp2 as tinygrad does.
func (t *Tensor) Sigmoid() *Tensor {
	e := t.Mul(t.fscalar(-1 / math.Ln2)).Exp2()
	return e.Add(e.fscalar(1)).Reciprocal()
}

// Tanh is 2*sigmoid(2x)-1.
func (t *Tensor) Tanh() *Tensor {
	s := t.Mul(t.fscalar(2)).Sigmoid()
	return s.Mul(s.fscalar(2)).Sub(s.fscalar(1))
}

// Relu is (x>0).where(x, 0): unlike maximum(x, 0) its gradient at 0 is 0.
func (t *Tensor) Relu() *Tensor {
	if t.err != nil {
		return t
	}
	zero := t.iscalar(0)
	return t.Gt(zero).Where(t, zero)
}

// LeakyRelu is (x<0).where(negSlope*x, x); tinygrad's default slope is 0.01.
func (t *Tensor) LeakyRelu(negSlope float64) *Tensor {
	if t.err != nil {
		return t
	}
	return t.Lt(t.iscalar(0)).Where(t.Mul(t.fscalar(negSlope)), t)
}

// Relu6 is relu(x) - relu(x-6).
func (t *Tensor) Relu6() *Tensor { return t.Relu().Sub(t.Sub(t.iscalar(6)).Relu()) }

// Hardswish is x*relu6(x+3)/6.
func (t *Tensor) Hardswish() *Tensor {
	r := t.Add(t.iscalar(3)).Relu6()
	return t.Mul(r).Mul(r.fscalar(1.0 / 6))
}

// Hardsigmoid is relu(alpha*x+beta) - relu(alpha*x+beta-1); torch's
// defaults are alpha=1/6, beta=0.5.
func (t *Tensor) Hardsigmoid(alpha, beta float64) *Tensor {
	y := t.Mul(t.fscalar(alpha)).Add(t.fscalar(beta))
	return y.Relu().Sub(y.Sub(y.fscalar(1)).Relu())
}

// Hardtanh clips to [minVal, maxVal] (defaults -1, 1).
func (t *Tensor) Hardtanh(minVal, maxVal float64) *Tensor { return t.Clip(minVal, maxVal) }

// Gelu is the tanh approximation
// 0.5*x*(1+tanh(sqrt(2/pi)*(x+0.044715*x^3))).
func (t *Tensor) Gelu() *Tensor {
	if t.err != nil {
		return t
	}
	inner := t.Add(t.Pow(t.iscalar(3)).Mul(t.fscalar(0.044715))).Mul(t.fscalar(math.Sqrt(2 / math.Pi)))
	th := inner.Tanh()
	return t.Mul(t.fscalar(0.5)).Mul(th.Add(th.fscalar(1)))
}

// QuickGelu is x*sigmoid(1.702x).
func (t *Tensor) QuickGelu() *Tensor { return t.Mul(t.Mul(t.fscalar(1.702)).Sigmoid()) }

// Silu (swish) is x*sigmoid(x).
func (t *Tensor) Silu() *Tensor { return t.Mul(t.Sigmoid()) }

// Swish is Silu.
func (t *Tensor) Swish() *Tensor { return t.Silu() }

// Elu is relu(x) - alpha*relu(1-exp(x)) (tinygrad's default alpha is 1).
func (t *Tensor) Elu(alpha float64) *Tensor {
	e := t.Exp()
	return t.Relu().Sub(e.fscalar(1).Sub(e).Relu().Mul(e.fscalar(alpha)))
}

// Celu is max(x, 0) + min(alpha*(exp(x/alpha)-1), 0).
func (t *Tensor) Celu(alpha float64) *Tensor {
	e := t.Div(t.fscalar(alpha)).Exp()
	neg := e.Sub(e.fscalar(1)).Mul(e.fscalar(alpha))
	return t.Maximum(t.iscalar(0)).Add(neg.Minimum(neg.iscalar(0)))
}

// Selu is gamma*(x>=0).where(x, alpha*(exp(x)-1)) with alpha=1.67326,
// gamma=1.0507 (tinygrad's constants).
func (t *Tensor) Selu() *Tensor {
	e := t.Exp()
	neg := e.Sub(e.fscalar(1)).Mul(e.fscalar(1.67326))
	r := t.Ge(t.iscalar(0)).Where(t, neg)
	return r.Mul(r.fscalar(1.0507))
}

// Logaddexp is log(exp(a)+exp(b)) computed stably around max(a, b).
func (t *Tensor) Logaddexp(o *Tensor) *Tensor {
	if e := firstErr(t, o); e != nil {
		return e
	}
	if _, e := broadcastCheck("logaddexp", t, o); e != nil {
		return e
	}
	m := t.Maximum(o)
	return t.Sub(m).Exp().Add(o.Sub(m).Exp()).Log().Add(m)
}

// Softplus is (1/beta)*logaddexp(beta*x, 0) (default beta 1).
func (t *Tensor) Softplus(beta float64) *Tensor {
	if t.err != nil {
		return t
	}
	y := t.Mul(t.fscalar(beta))
	r := y.Logaddexp(y.fscalar(0))
	return r.Mul(r.fscalar(1 / beta))
}

// Mish is x*tanh(softplus(x)).
func (t *Tensor) Mish() *Tensor { return t.Mul(t.Softplus(1).Tanh()) }

// Logsigmoid is -softplus(-x).
func (t *Tensor) Logsigmoid() *Tensor { return t.Neg().Softplus(1).Neg() }

// Softsign is x/(1+|x|).
func (t *Tensor) Softsign() *Tensor {
	a := t.Abs()
	return t.Div(a.Add(a.iscalar(1)))
}

// Sinh is (exp(x)-exp(-x))/2.
func (t *Tensor) Sinh() *Tensor {
	d := t.Exp().Sub(t.Neg().Exp())
	return d.Div(d.iscalar(2))
}

// Cosh is (exp(x)+exp(-x))/2.
func (t *Tensor) Cosh() *Tensor {
	d := t.Exp().Add(t.Neg().Exp())
	return d.Div(d.iscalar(2))
}

// Atanh is log((1+x)/(1-x))/2.
func (t *Tensor) Atanh() *Tensor {
	one := t.iscalar(1)
	l := one.Add(t).Div(one.Sub(t)).Log()
	return l.Div(l.iscalar(2))
}

// Asinh is log(x+sqrt(x^2+1)).
func (t *Tensor) Asinh() *Tensor { return t.Add(t.Square().Add(t.iscalar(1)).Sqrt()).Log() }

// Acosh is log(x+sqrt(x^2-1)).
func (t *Tensor) Acosh() *Tensor { return t.Add(t.Square().Sub(t.iscalar(1)).Sqrt()).Log() }

// polyN evaluates sum(c[i]*x^(n-1-i)) by Horner's rule.
func polyN(x *Tensor, coeffs []float64) *Tensor {
	acc := x.Mul(x.fscalar(coeffs[0]))
	for i, c := range coeffs[1:] {
		acc = acc.Add(acc.fscalar(c))
		if i < len(coeffs)-2 {
			acc = acc.Mul(x)
		}
	}
	return acc
}

// Asin uses Abramowitz-Stegun 4.4.46, as tinygrad does.
func (t *Tensor) Asin() *Tensor {
	a := t.Abs()
	p := polyN(a, []float64{-0.0012624911, 0.0066700901, -0.0170881256, 0.0308918810, -0.0501743046, 0.0889789874, -0.2145988016, 1.5707963050})
	x := a.fscalar(math.Pi / 2).Sub(a.fscalar(1).Sub(a).Sqrt().Mul(p))
	return t.Sign().Mul(x)
}

// Acos is pi/2 - asin(x).
func (t *Tensor) Acos() *Tensor {
	a := t.Asin()
	return a.fscalar(math.Pi / 2).Sub(a)
}

// Atan is asin(x/sqrt(1+x^2)).
func (t *Tensor) Atan() *Tensor {
	return t.Div(t.iscalar(1).Add(t.Mul(t)).Sqrt()).Asin()
}

// Erf uses Abramowitz-Stegun 7.1.26, as tinygrad does.
func (t *Tensor) Erf() *Tensor {
	a := t.Abs()
	d := a.Mul(a.fscalar(0.3275911))
	u := d.Add(d.fscalar(1)).Reciprocal()
	p := polyN(u, []float64{1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592})
	e := t.Square().Neg().Exp()
	return t.Sign().Mul(e.fscalar(1).Sub(u.Mul(p).Mul(e)))
}

// Square is x*x.
func (t *Tensor) Square() *Tensor { return t.Mul(t) }

// Sign is -1, 0 or 1 in t's dtype (NaN gives 1, as in tinygrad).
func (t *Tensor) Sign() *Tensor {
	if t.err != nil {
		return t
	}
	dt := t.DType()
	zero := t.Const(0, dt)
	return t.Ne(zero).Where(t.Lt(zero).Where(t.Const(-1, dt), t.Const(1, dt)), zero)
}

// Abs is (x<0).where(-x, x): the same values as tinygrad's x*sign(x) with
// fewer ops (it differs only on -0.0).
func (t *Tensor) Abs() *Tensor {
	if t.err != nil {
		return t
	}
	if t.DType() == ir.Bool || t.DType().IsUnsigned() {
		return t
	}
	return t.Lt(t.iscalar(0)).Where(t.Neg(), t)
}

// Clamp limits t to [lo, hi]; either bound may be nil (but not both). A
// bound is selected with where, so it may be a tensor.
func (t *Tensor) Clamp(lo, hi *Tensor) *Tensor {
	if t.err != nil {
		return t
	}
	if lo == nil && hi == nil {
		return errorf("clip", "at least one of min and max must be given")
	}
	r := t
	if lo != nil {
		if e := firstErr(lo); e != nil {
			return e
		}
		if _, e := broadcastCheck("clip", t, lo); e != nil {
			return e
		}
		r = r.Lt(lo).Where(lo, r)
	}
	if hi != nil {
		if e := firstErr(hi); e != nil {
			return e
		}
		if _, e := broadcastCheck("clip", r, hi); e != nil {
			return e
		}
		r = r.Gt(hi).Where(hi, r)
	}
	return r
}

// Clip limits t to [lo, hi] given as Python numbers: NaN means no bound;
// an integral finite bound is a Python int (keeps an int tensor int), any
// other a Python float.
func (t *Tensor) Clip(lo, hi float64) *Tensor {
	if t.err != nil {
		return t
	}
	bound := func(v float64) *Tensor {
		if math.IsNaN(v) {
			return nil
		}
		return t.Scalar(v, math.IsInf(v, 0) || v != math.Trunc(v))
	}
	return t.Clamp(bound(lo), bound(hi))
}

// Floor rounds toward -inf: trunc, minus one where that rounded up.
func (t *Tensor) Floor() *Tensor {
	if t.err != nil || !t.DType().IsFloat() {
		return t
	}
	b := t.Trunc()
	return t.Lt(b).Where(b.Sub(b.iscalar(1)), b)
}

// Ceil rounds toward +inf: trunc, plus one where that rounded down.
func (t *Tensor) Ceil() *Tensor {
	if t.err != nil || !t.DType().IsFloat() {
		return t
	}
	b := t.Trunc()
	return t.Gt(b).Where(b.Add(b.iscalar(1)), b)
}

// Round rounds half to even (tinygrad's formula).
func (t *Tensor) Round() *Tensor {
	if t.err != nil || !t.DType().IsFloat() {
		return t
	}
	b := t.Trunc().Div(t.fscalar(2))
	evenTrunc := b.Trunc().Eq(b)
	half := t.fscalar(0.5)
	return t.Gt(t.iscalar(0)).Eq(evenTrunc).Where(t.Sub(half).Ceil(), t.Add(half).Floor())
}

// divOperands promotes a and b for an integer-or-float division (bool
// computes as int32) and checks they broadcast.
func divOperands(op string, a, b *Tensor) (*Tensor, *Tensor, *Tensor) {
	if e := firstErr(a, b); e != nil {
		return nil, nil, e
	}
	if _, e := broadcastCheck(op, a, b); e != nil {
		return nil, nil, e
	}
	dt := ir.Promote(a.DType(), b.DType())
	if dt == ir.Bool {
		dt = ir.Int32
	}
	return a.Cast(dt), b.Cast(dt), nil
}

// floorFix is true where C-style truncating division rounded up: a nonzero
// remainder and operands of different signs.
func floorFix(a, b, rem *Tensor) *Tensor {
	zero := a.Const(0, a.DType())
	return rem.Ne(zero).And(a.Lt(zero).Xor(b.Lt(zero)))
}

// FloorDiv is Python's //: floor division for ints, floor(a/b) for floats.
func (t *Tensor) FloorDiv(o *Tensor) *Tensor {
	a, b, e := divOperands("floordiv", t, o)
	if e != nil {
		return e
	}
	if a.DType().IsFloat() {
		return a.Div(b).Floor()
	}
	q := a.IDiv(b)
	return q.Sub(floorFix(a, b, a.cmod(b)).Cast(q.DType()))
}

// Mod is Python's %: the result has the sign of the divisor.
func (t *Tensor) Mod(o *Tensor) *Tensor {
	a, b, e := divOperands("mod", t, o)
	if e != nil {
		return e
	}
	if a.DType().IsFloat() {
		return a.Sub(a.Div(b).Floor().Mul(b))
	}
	r := a.cmod(b)
	return r.Add(floorFix(a, b, r).Where(b, r.Const(0, r.DType())))
}

// Fmod is C's remainder: the result has the sign of the dividend.
func (t *Tensor) Fmod(o *Tensor) *Tensor {
	a, b, e := divOperands("fmod", t, o)
	if e != nil {
		return e
	}
	if a.DType().IsFloat() {
		return a.Sub(a.Div(b).Trunc().Mul(b))
	}
	return a.cmod(b)
}

// constValue reports the value of a tensor that is a broadcast constant.
func constValue(t *Tensor) (float64, bool) {
	n := t.node
	for n.Op == ir.OpReshape || n.Op == ir.OpExpand {
		n = n.Src[0]
	}
	if n.Op != ir.OpConst {
		return 0, false
	}
	f, _ := n.ConstValue()
	return f, true
}

// Pow is t**o with tinygrad's semantics: exp2(o*log2|t|) with the sign
// fixed for a negative base and an integer exponent (NaN for a non-integer
// one) and 0**0 = 1. A constant exponent that is an integer or a half
// integer becomes multiplications (and a sqrt), exact for ints. An int base
// with a float exponent rounds back to the base's int dtype, as in tinygrad.
func (t *Tensor) Pow(o *Tensor) *Tensor {
	if e := firstErr(t, o); e != nil {
		return e
	}
	shape, e := broadcastCheck("pow", t, o)
	if e != nil {
		return e
	}
	dt := ir.Promote(t.DType(), o.DType())
	toBase := func(r *Tensor) *Tensor { // pow(int, float) -> int
		if !t.DType().IsFloat() && dt.IsFloat() {
			return r.Round().Cast(t.DType())
		}
		return r
	}
	if c, ok := constValue(o); ok {
		if !dt.IsFloat() && c < 0 {
			return errorf("pow", "%s tensor of shape %s to the negative integer power %g: the base needs to be float", t.DType(), FormatShape(t.node.Shape), c)
		}
		if r := powConst(t.Cast(dt), c); r != nil {
			return toBase(r).broadcastTo(shape)
		}
	}
	if !dt.IsFloat() { // int ** int: compute in float32, round back
		return xpow(t.Cast(ir.Float32), o.Cast(ir.Float32)).Round().Cast(dt)
	}
	return toBase(xpow(t.Cast(dt), o.Cast(dt)))
}

// powConst builds x**c from multiplications by repeated squaring when c is
// an integer (or a half integer, adding a sqrt); nil when it is neither.
func powConst(x *Tensor, c float64) *Tensor {
	const limit = 1 << 30
	switch {
	case c == 0:
		return x.iscalar(1).broadcastTo(x.node.Shape)
	case c == 1:
		return x
	case c == 2:
		return x.Mul(x)
	case c == 0.5 && x.DType().IsFloat():
		return x.Sqrt()
	case c < 0 && x.DType().IsFloat():
		return powConst(x.Reciprocal(), -c)
	case c > 0 && c <= limit && c == math.Trunc(c):
		h := powConst(x, math.Floor(c/2))
		r := h.Mul(h)
		if math.Mod(c, 2) == 1 {
			r = r.Mul(x)
		}
		return r
	case c > 0 && c <= limit && c-0.5 == math.Trunc(c-0.5) && x.DType().IsFloat():
		return powConst(x, c-0.5).Mul(x.Sqrt())
	}
	return nil
}

// xpow is tinygrad's POW decomposition for float base and exponent.
func xpow(base, exp *Tensor) *Tensor {
	dt := base.DType()
	zero := base.Const(0, dt)
	neg := base.Lt(zero)
	ret := neg.Where(base.Neg(), base).Log2().Mul(exp).Exp2()
	nonInt := exp.Ne(exp.Cast(ir.Int32).Cast(dt))
	odd := exp.Lt(zero).Where(exp.Neg(), exp).Cast(ir.Int32).cmod(base.Const(2, ir.Int32)).Cast(ir.Bool)
	negBase := nonInt.Where(base.Const(math.NaN(), dt), odd.Where(ret.Neg(), ret))
	return base.Eq(zero).And(exp.Eq(zero)).Where(base.Const(1, dt), neg.Where(negBase, ret))
}

// Isnan is x != x.
func (t *Tensor) Isnan() *Tensor { return t.Ne(t) }

// Isinf is x == +inf or x == -inf.
func (t *Tensor) Isinf() *Tensor {
	return t.Eq(t.fscalar(math.Inf(1))).Or(t.Eq(t.fscalar(math.Inf(-1))))
}

// Isfinite is neither inf nor NaN.
func (t *Tensor) Isfinite() *Tensor { return t.Isinf().Or(t.Isnan()).LogicalNot() }

// Lerp is t + (end-t)*weight.
func (t *Tensor) Lerp(end, weight *Tensor) *Tensor {
	if e := firstErr(t, end, weight); e != nil {
		return e
	}
	if _, e := broadcastCheck("lerp", t, end, weight); e != nil {
		return e
	}
	return t.Add(end.Sub(t).Mul(weight))
}
