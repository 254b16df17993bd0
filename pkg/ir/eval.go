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

// FloatOp evaluates an arithmetic op on floats (the op table's Float).
func FloatOp(op Op, dt DType, a, b float64) float64 {
	f := op.Info().Float
	if f == nil {
		panic("ir: FloatOp: not a float op: " + op.String())
	}
	return RoundFloat(dt, f(a, b))
}

// Compare evaluates a comparison on two values of the same family.
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
