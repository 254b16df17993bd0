package tensor

import (
	"fmt"

	"tgc/pkg/ir"
)

// Basic arithmetic with tinygrad's dtype promotion. Python scalars are
// turned into tensors by Scalar (the frontend does that), then promoted.

// Scalar makes a constant tensor for a Python number used with t:
// an int keeps t's dtype, a float makes an int/bool tensor float32.
func (t *Tensor) Scalar(v float64, isFloat bool) *Tensor {
	if t.err != nil {
		return t
	}
	dt := t.DType()
	if isFloat && !dt.IsFloat() {
		dt = ir.Float32
	}
	if !isFloat && dt == ir.Bool && v != 0 && v != 1 {
		dt = ir.Int32
	}
	if e := checkValue("constant", v, dt); e != nil {
		return e
	}
	return t.Const(v, dt)
}

// ScalarInt is Scalar for an exact Python int (int64 and uint64 tensors
// need more than a float64's 53 bits); uint64 values are int64 bit patterns
// when big is set, v otherwise must fit the dtype.
func (t *Tensor) ScalarInt(v int64, big bool) *Tensor {
	if t.err != nil {
		return t
	}
	dt := t.DType()
	switch {
	case dt.IsFloat():
		if big {
			return t.Const(float64(uint64(v)), dt)
		}
		return t.Const(float64(v), dt)
	case dt == ir.Bool && v != 0 && v != 1:
		dt = ir.Int32
	}
	if big && dt == ir.Uint64 {
		return t.ConstInt(v, dt)
	}
	if big || !dt.Fits(v) {
		lo, hi := dt.ValueRange()
		n := fmt.Sprint(v)
		if big {
			n = fmt.Sprint(uint64(v))
		}
		return errorf("constant", "%s does not fit %s (%s to %s): use a wider dtype", n, dt, formatValue(lo), formatValue(hi))
	}
	return t.ConstInt(v, dt)
}

func binary(name string, op ir.Op, a, b *Tensor) *Tensor {
	if e := firstErr(a, b); e != nil {
		return e
	}
	return alu(name, op, ir.Promote(a.DType(), b.DType()), a, b)
}

// bothBool: the operands promote to bool, whose arithmetic is logic
// (tinygrad's rule, docs/language.md): + is or, * is and, a - b is
// a + (-b), that is a or not b.
func bothBool(a, b *Tensor) bool {
	return firstErr(a, b) == nil && ir.Promote(a.DType(), b.DType()) == ir.Bool
}

func (t *Tensor) Add(o *Tensor) *Tensor {
	if bothBool(t, o) {
		return binary("add", ir.OpOr, t, o)
	}
	return binary("add", ir.OpAdd, t, o)
}

func (t *Tensor) Sub(o *Tensor) *Tensor {
	if bothBool(t, o) {
		return t.Add(o.Neg())
	}
	return binary("sub", ir.OpSub, t, o)
}

func (t *Tensor) Mul(o *Tensor) *Tensor {
	if bothBool(t, o) {
		return binary("mul", ir.OpAnd, t, o)
	}
	return binary("mul", ir.OpMul, t, o)
}

// Maximum is the elementwise max.
func (t *Tensor) Maximum(o *Tensor) *Tensor { return binary("maximum", ir.OpMax, t, o) }

// Minimum is -max(-a, -b) for floats and ~max(~a, ~b) for integers (a
// negation wraps at the minimum and at an unsigned 0; ~ reverses the order
// of every integer).
func (t *Tensor) Minimum(o *Tensor) *Tensor {
	if e := firstErr(t, o); e != nil {
		return e
	}
	if t.DType() == ir.Bool && o.DType() == ir.Bool {
		return t.Mul(o)
	}
	if dt := ir.Promote(t.DType(), o.DType()); !dt.IsFloat() {
		a, b := t.Cast(dt), o.Cast(dt)
		return a.inverse().Maximum(b.inverse()).inverse()
	}
	return t.Neg().Maximum(o.Neg()).Neg()
}

// Div is true division: integer operands give float32 (like tinygrad's /).
func (t *Tensor) Div(o *Tensor) *Tensor {
	if e := firstErr(t, o); e != nil {
		return e
	}
	dt := ir.Promote(t.DType(), o.DType())
	if !dt.IsFloat() {
		dt = ir.Float32
	}
	return alu("div", ir.OpDiv, dt, t, o)
}

// IDiv is C-style truncating integer division (floats are truncated).
func (t *Tensor) IDiv(o *Tensor) *Tensor {
	if e := firstErr(t, o); e != nil {
		return e
	}
	dt := ir.Promote(t.DType(), o.DType())
	if dt.IsFloat() {
		return t.Div(o).Trunc()
	}
	return alu("idiv", ir.OpDiv, dt, t, o)
}

// Mod is C-style remainder for ints (sign of the dividend).
func (t *Tensor) cmod(o *Tensor) *Tensor { return binary("mod", ir.OpMod, t, o) }

// Neg is -x (logical not for bool).
func (t *Tensor) Neg() *Tensor {
	if t.err != nil {
		return t
	}
	if t.DType() == ir.Bool {
		return t.LogicalNot()
	}
	return FromNode(t.like(ir.OpNeg, t.DType(), nil, t.node))
}

// LogicalNot negates a bool tensor (others compare to 0).
func (t *Tensor) LogicalNot() *Tensor {
	if t.err != nil {
		return t
	}
	if t.DType() != ir.Bool {
		return t.Eq(t.Const(0, t.DType()))
	}
	return FromNode(t.like(ir.OpNot, ir.Bool, nil, t.node))
}

// Comparisons return bool tensors.
func (t *Tensor) Lt(o *Tensor) *Tensor { return binary("lt", ir.OpCmpLt, t, o) }
func (t *Tensor) Gt(o *Tensor) *Tensor { return binary("gt", ir.OpCmpLt, o, t) }
func (t *Tensor) Le(o *Tensor) *Tensor { return t.Gt(o).LogicalNot() }
func (t *Tensor) Ge(o *Tensor) *Tensor { return t.Lt(o).LogicalNot() }
func (t *Tensor) Eq(o *Tensor) *Tensor { return binary("eq", ir.OpCmpEq, t, o) }
func (t *Tensor) Ne(o *Tensor) *Tensor { return binary("ne", ir.OpCmpNe, t, o) }

// Bitwise/logical ops on bool and int tensors.
func (t *Tensor) And(o *Tensor) *Tensor { return bitwise("and", ir.OpAnd, t, o) }
func (t *Tensor) Or(o *Tensor) *Tensor  { return bitwise("or", ir.OpOr, t, o) }
func (t *Tensor) Xor(o *Tensor) *Tensor { return bitwise("xor", ir.OpXor, t, o) }

// bitwise refuses operands that promote to a float (int64 with uint64 is
// float16 in tinygrad's lattice).
func bitwise(name string, op ir.Op, a, b *Tensor) *Tensor {
	if e := firstErr(a, b); e != nil {
		return e
	}
	if dt := ir.Promote(a.DType(), b.DType()); dt.IsFloat() {
		return errorf(name, "needs bool or integer tensors, got %s and %s (promoted to %s)", a.DType(), b.DType(), dt)
	}
	return binary(name, op, a, b)
}

// Shl is t << n, Shr t >> n: bitwise shifts of integer tensors in their
// dtype's width (bool shifts as int32), logical for unsigned dtypes and
// arithmetic for signed ones. A count of the width or more, or a negative
// one, gives 0, or -1 for Shr of a negative value: numpy's and Go's rule,
// the same on every device.
func (t *Tensor) Shl(n *Tensor) *Tensor { return shift("lshift", ir.OpShl, t, n) }
func (t *Tensor) Shr(n *Tensor) *Tensor { return shift("rshift", ir.OpShr, t, n) }

func shift(name string, op ir.Op, t, n *Tensor) *Tensor {
	if e := firstErr(t, n); e != nil {
		return e
	}
	dt := ir.Promote(t.DType(), n.DType())
	if dt == ir.Bool {
		dt = ir.Int32
	}
	return alu(name, op, dt, t, n)
}

// Where selects x where t is true, else y.
func (t *Tensor) Where(x, y *Tensor) *Tensor {
	if e := firstErr(t, x, y); e != nil {
		return e
	}
	return alu("where", ir.OpWhere, ir.Promote(x.DType(), y.DType()), t.Cast(ir.Bool), x, y)
}

// The float unary primitives.
func (t *Tensor) Exp2() *Tensor       { return t.unary(ir.OpExp2) }
func (t *Tensor) Log2() *Tensor       { return t.unary(ir.OpLog2) }
func (t *Tensor) Sin() *Tensor        { return t.unary(ir.OpSin) }
func (t *Tensor) Sqrt() *Tensor       { return t.unary(ir.OpSqrt) }
func (t *Tensor) Reciprocal() *Tensor { return t.unary(ir.OpRecip) }

// Trunc rounds toward zero (identity on ints).
func (t *Tensor) Trunc() *Tensor {
	if t.err != nil || !t.DType().IsFloat() {
		return t
	}
	return t.unary(ir.OpTrunc)
}

// Sum reduces over axes (all when none given), accumulating in
// DType.SumDType as tinygrad does: bool and small signed ints in int32,
// small unsigned ints in uint32, 16-bit floats in float32 (cast back).
func (t *Tensor) Sum(keepdim bool, axes ...int) *Tensor {
	if t.err != nil {
		return t
	}
	if axes == nil {
		axes = allAxes(t.Ndim())
	}
	x := t
	if dt := x.DType(); dt.SumDType() != dt {
		if dt.IsFloat() { // 16-bit floats accumulate in float32, round once
			return x.Cast(dt.SumDType()).Sum(keepdim, axes...).Cast(dt)
		}
		x = x.Cast(dt.SumDType())
	}
	return x.reduce("sum", ir.OpSum, axes).squeezeReduced(t, axes, keepdim)
}

// Max reduces with max over axes (all when none given).
func (t *Tensor) Max(keepdim bool, axes ...int) *Tensor {
	if t.err != nil {
		return t
	}
	if axes == nil {
		axes = allAxes(t.Ndim())
	}
	return t.reduce("max", ir.OpMaxReduce, axes).squeezeReduced(t, axes, keepdim)
}

// squeezeReduced drops the reduced axes unless keepdim.
func (r *Tensor) squeezeReduced(src *Tensor, axes []int, keepdim bool) *Tensor {
	if r.err != nil || keepdim {
		return r
	}
	drop := map[int]bool{}
	for _, a := range axes {
		a, _ := normAxis("", a, src.Ndim())
		drop[a] = true
	}
	var shape []int
	for i, d := range r.node.Shape {
		if !drop[i] {
			shape = append(shape, d)
		}
	}
	return r.Reshape(shape...)
}

// Pad pads each dimension by (before, after) with value.
func (t *Tensor) Pad(pads [][2]int, value float64) *Tensor {
	p := t.padZero(pads)
	if value == 0 || p.err != nil || p == t {
		return p
	}
	// Padding with v is where(mask, x, v): mask is a padded ones tensor.
	mask := t.node.ctx.Full(t.Shape(), 1, ir.Bool).padZero(pads)
	return mask.Where(p, t.Const(value, t.DType()))
}
