package ir

import "math"

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
		return float64(Float16ToFloat32(Float16FromFloat32(float32(v))))
	case BFloat16:
		return float64(BFloat16ToFloat32(BFloat16FromFloat32(float32(v))))
	}
	return v
}

// FloatOp evaluates an arithmetic op on floats (the op table's Float).
func FloatOp(op Op, dt DType, a, b float64) float64 {
	f := op.Info().Float
	if f == nil {
		panic("ir: FloatOp: not a float op: " + op.String())
	}
	return RoundFloat(dt, f(a, b))
}

// CompareInt evaluates a comparison of two integers of dtype dt (the op
// table's CmpInt; uint64 values are bit patterns, compared unsigned).
func CompareInt(op Op, dt DType, a, b int64) bool {
	f := op.Info().CmpInt
	if f == nil {
		panic("ir: CompareInt: not a comparison: " + op.String())
	}
	if dt == Uint64 { // flipping the sign bit maps unsigned order onto signed
		a, b = a^math.MinInt64, b^math.MinInt64
	}
	return f(a, b)
}

// Compare evaluates a comparison on two floats.
func Compare(op Op, a, b float64) bool {
	f := op.Info().Cmp
	if f == nil {
		panic("ir: Compare: not a comparison: " + op.String())
	}
	return f(a, b)
}

// IntOp evaluates an op on integers (and bools, as 0/1) of dtype dt (the
// op table's Int), wrapped to dt.
func IntOp(op Op, dt DType, a, b int64) int64 {
	f := op.Info().Int
	if f == nil {
		panic("ir: IntOp: not an int op: " + op.String())
	}
	return dt.Wrap(f(dt, a, b))
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
		return uint64(Float16FromFloat32(float32(f)))
	case BFloat16:
		return uint64(BFloat16FromFloat32(float32(f)))
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
		return float64(Float16ToFloat32(uint16(b))), 0
	case BFloat16:
		return float64(BFloat16ToFloat32(uint16(b))), 0
	}
	return 0, dt.Wrap(int64(b))
}
