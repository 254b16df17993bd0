package ir

import "math"

// The scalar semantics of every ALU op, shared by the simplifier's constant
// folding and the GO interpreter, so that both agree with the C renderer:
// floats are computed in float64 and rounded to the dtype after each op;
// integers wrap to their width; division by zero yields 0 rather than trap.

// RoundFloat rounds v to the precision of a float dtype. float16 is
// computed in float32 (it is a storage type), so it rounds like float32.
func RoundFloat(dt DType, v float64) float64 {
	if dt == Float32 || dt == Float16 {
		return float64(float32(v))
	}
	return v
}

// FloatOp evaluates an arithmetic op on floats.
func FloatOp(op Op, dt DType, a, b float64) float64 {
	var r float64
	switch op {
	case OpNeg:
		r = -a
	case OpRecip:
		r = 1 / a
	case OpExp2:
		r = math.Exp2(a)
	case OpLog2:
		r = math.Log2(a)
	case OpSin:
		r = math.Sin(a)
	case OpSqrt:
		r = math.Sqrt(a)
	case OpTrunc:
		r = math.Trunc(a)
	case OpAdd:
		r = a + b
	case OpSub:
		r = a - b
	case OpMul:
		r = a * b
	case OpDiv:
		r = a / b
	case OpMod:
		r = math.Mod(a, b)
	case OpMax:
		if a > b {
			r = a
		} else {
			r = b
		}
	default:
		panic("ir: FloatOp: not a float op: " + op.String())
	}
	return RoundFloat(dt, r)
}

// Compare evaluates a comparison on two values of the same family.
func Compare(op Op, a, b float64) bool {
	switch op {
	case OpCmpLt:
		return a < b
	case OpCmpNe:
		return a != b
	case OpCmpEq:
		return a == b
	}
	panic("ir: Compare: not a comparison: " + op.String())
}

// IntOp evaluates an op on integers (and bools, as 0/1) of dtype dt.
func IntOp(op Op, dt DType, a, b int64) int64 {
	var r int64
	switch op {
	case OpNeg:
		r = -a
	case OpNot:
		if a == 0 {
			r = 1
		}
	case OpAdd:
		r = a + b
	case OpSub:
		r = a - b
	case OpMul:
		r = a * b
	case OpDiv:
		if b != 0 {
			r = a / b
		}
	case OpMod:
		if b != 0 {
			r = a % b
		}
	case OpMax:
		r = max(a, b)
	case OpAnd:
		r = a & b
	case OpOr:
		r = a | b
	case OpXor:
		r = a ^ b
	case OpTrunc:
		r = a
	default:
		panic("ir: IntOp: not an int op: " + op.String())
	}
	return dt.Wrap(r)
}

// CastValue converts a value between dtypes with C semantics. Values of
// float dtypes travel as float64, of int dtypes as int64.
func CastFloatToInt(dt DType, v float64) int64 {
	if dt == Bool {
		if v != 0 {
			return 1
		}
		return 0
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	t := math.Trunc(v)
	if t > math.MaxInt64/2 || t < math.MinInt64/2 {
		return 0
	}
	return dt.Wrap(int64(t))
}
