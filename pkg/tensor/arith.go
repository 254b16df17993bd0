package tensor

import (
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
	return t.Const(v, dt)
}

func binary(name string, op ir.Op, a, b *Tensor) *Tensor {
	if e := firstErr(a, b); e != nil {
		return e
	}
	return alu(name, op, ir.Promote(a.DType(), b.DType()), a, b)
}

func (t *Tensor) Add(o *Tensor) *Tensor { return binary("add", ir.OpAdd, t, o) }
func (t *Tensor) Sub(o *Tensor) *Tensor { return binary("sub", ir.OpSub, t, o) }
func (t *Tensor) Mul(o *Tensor) *Tensor { return binary("mul", ir.OpMul, t, o) }

// Maximum is the elementwise max.
func (t *Tensor) Maximum(o *Tensor) *Tensor { return binary("maximum", ir.OpMax, t, o) }

// Minimum is -max(-a, -b).
func (t *Tensor) Minimum(o *Tensor) *Tensor {
	if e := firstErr(t, o); e != nil {
		return e
	}
	if t.DType() == ir.Bool || o.DType() == ir.Bool {
		return t.Mul(o)
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
func (t *Tensor) And(o *Tensor) *Tensor { return binary("and", ir.OpAnd, t, o) }
func (t *Tensor) Or(o *Tensor) *Tensor  { return binary("or", ir.OpOr, t, o) }
func (t *Tensor) Xor(o *Tensor) *Tensor { return binary("xor", ir.OpXor, t, o) }

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

// Sum reduces over axes (all when none given). Small ints and bool sum in
// int32 and float16 accumulates in float32, as tinygrad does.
func (t *Tensor) Sum(keepdim bool, axes ...int) *Tensor {
	if t.err != nil {
		return t
	}
	if axes == nil {
		axes = allAxes(t.Ndim())
	}
	x := t
	switch x.DType() {
	case ir.Bool, ir.Int8, ir.Uint8:
		x = x.Cast(ir.Int32)
	case ir.Float16:
		return x.Cast(ir.Float32).Sum(keepdim, axes...).Cast(ir.Float16)
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
