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
// float16 and bfloat16 round through float32 (their registers are float32:
// a float64 value is rounded twice, on every device alike).
func RoundFloat(dt DType, v float64) float64 {
	switch dt {
	case Float32:
		return float64(float32(v))
	case Float16:
		return float64(half.ToFloat32(half.FromFloat32(float32(v))))
	case BFloat16:
		return float64(half.BFloat16ToFloat32(half.BFloat16FromFloat32(float32(v))))
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

// CompareInt evaluates a comparison of two integers of dtype dt (uint64
// values are bit patterns, compared unsigned).
func CompareInt(op Op, dt DType, a, b int64) bool {
	lt := a < b
	if dt == Uint64 {
		lt = uint64(a) < uint64(b)
	}
	switch op {
	case OpCmpLt:
		return lt
	case OpCmpNe:
		return a != b
	case OpCmpEq:
		return a == b
	}
	panic("ir: CompareInt: not a comparison: " + op.String())
}

// Compare evaluates a comparison on two floats.
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
		switch {
		case b == 0:
		case dt == Uint64:
			r = int64(uint64(a) / uint64(b))
		case b == -1: // MIN / -1 wraps (Go's int64 division does too)
			r = -a
		default:
			r = a / b
		}
	case OpMod:
		switch {
		case b == 0:
		case dt == Uint64:
			r = int64(uint64(a) % uint64(b))
		case b == -1:
		default:
			r = a % b
		}
	case OpMax:
		r = max(a, b)
		if dt == Uint64 {
			r = int64(max(uint64(a), uint64(b)))
		}
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
	if dt == Uint64 { // [0, 2^64-1], as a bit pattern
		switch t := math.Trunc(v); {
		case t <= 0:
			return 0
		case t >= 1<<64:
			return -1
		default:
			return int64(uint64(t))
		}
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

// Bits is the storage bit pattern of a value of dtype dt (floats as
// float64, integers as int64), zero-extended to 64 bits.
func Bits(dt DType, f float64, i int64) uint64 {
	switch dt {
	case Float64:
		return math.Float64bits(f)
	case Float32:
		return uint64(math.Float32bits(float32(f)))
	case Float16:
		return uint64(half.FromFloat32(float32(f)))
	case BFloat16:
		return uint64(half.BFloat16FromFloat32(float32(f)))
	}
	if dt.Size() == 8 {
		return uint64(i)
	}
	return uint64(i) & (1<<(8*dt.Size()) - 1)
}

// FromBits is the value of dtype dt whose storage bits are b: a float (as
// float64) or an integer (as int64, sign-extended for signed dtypes).
func FromBits(dt DType, b uint64) (float64, int64) {
	switch dt {
	case Float64:
		return math.Float64frombits(b), 0
	case Float32:
		return float64(math.Float32frombits(uint32(b))), 0
	case Float16:
		return float64(half.ToFloat32(uint16(b))), 0
	case BFloat16:
		return float64(half.BFloat16ToFloat32(uint16(b))), 0
	}
	return 0, dt.Wrap(int64(b))
}
