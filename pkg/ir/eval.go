package ir

import (
	"math"

	"tgc/pkg/half"
)

// The scalar semantics of every ALU op, shared by the simplifier's constant
// folding and the GO interpreter, so that both agree with the renderers
// (docs/language.md, "Dtype rules"): floats are computed in float64 and
// rounded to the dtype after each op; integers wrap to their width;
// integer division by zero yields 0 and MIN / -1 wraps to MIN, never a trap;
// float-to-int casts truncate and saturate, NaN giving 0.

// RoundFloat rounds v to a float dtype's precision (round to nearest even).
func RoundFloat(dt DType, v float64) float64 {
	switch dt {
	case Float32:
		return float64(float32(v))
	case Float16:
		return float64(half.ToFloat32(half.FromFloat32(float32(v))))
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

// CastFloatToInt converts a float to an integer dtype: truncation toward
// zero, saturating at the dtype's range; NaN gives 0; bool is v != 0 (NaN
// is true, as in C).
func CastFloatToInt(dt DType, v float64) int64 {
	if dt == Bool {
		if v != 0 {
			return 1
		}
		return 0
	}
	if math.IsNaN(v) {
		return 0
	}
	lo, hi := dt.Range()
	switch t := math.Trunc(v); {
	case t <= float64(lo):
		return lo
	case t >= float64(hi):
		return hi
	default:
		return int64(t)
	}
}
