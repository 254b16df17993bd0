// Package ir holds what the tensor graph and the kernel IR share (dtypes and
// the op vocabulary) and the kernel IR itself: loops, scalar expressions, the
// symbolic simplifier and the optimization pass table.
package ir

import "fmt"

// DType is a scalar element type. The order is the promotion order within
// each family (see Promote).
type DType uint8

const (
	Bool DType = iota
	Int8
	Uint8
	Int32
	Int64 // index math only; not a user-facing storage type
	Float16
	Float32
)

var dtypeInfo = [...]struct {
	name  string
	size  int
	st    string // safetensors name
	float bool
}{
	Bool:    {"bool", 1, "BOOL", false},
	Int8:    {"int8", 1, "I8", false},
	Uint8:   {"uint8", 1, "U8", false},
	Int32:   {"int32", 4, "I32", false},
	Int64:   {"int64", 8, "I64", false},
	Float16: {"float16", 2, "F16", true},
	Float32: {"float32", 4, "F32", true},
}

// AllDTypes lists the user-facing storage types.
var AllDTypes = []DType{Bool, Int8, Uint8, Int32, Float16, Float32}

func (d DType) String() string { return dtypeInfo[d].name }

// Size is the storage size of one element in bytes.
func (d DType) Size() int { return dtypeInfo[d].size }

func (d DType) IsFloat() bool { return dtypeInfo[d].float }

// Bits is the width of a value of the dtype.
func (d DType) Bits() int { return 8 * dtypeInfo[d].size }

// IsInt is true for integer types (bool excluded).
func (d DType) IsInt() bool { return d != Bool && !d.IsFloat() }

func (d DType) IsUnsigned() bool { return d == Uint8 }

// SafetensorsName is the dtype's name in the safetensors header.
func (d DType) SafetensorsName() string { return dtypeInfo[d].st }

// DTypeFromSafetensors maps a safetensors dtype name to a DType.
func DTypeFromSafetensors(s string) (DType, bool) {
	for i, info := range dtypeInfo {
		if info.st == s && DType(i) != Int64 {
			return DType(i), true
		}
	}
	return 0, false
}

// ParseDType accepts the tinygrad spellings ("float32", "float", "int", ...).
func ParseDType(s string) (DType, error) {
	switch s {
	case "bool":
		return Bool, nil
	case "int8", "char":
		return Int8, nil
	case "uint8", "uchar":
		return Uint8, nil
	case "int32", "int":
		return Int32, nil
	case "float16", "half":
		return Float16, nil
	case "float32", "float", "default_float":
		return Float32, nil
	}
	return 0, fmt.Errorf("unknown dtype %q (have bool, int8, uint8, int32, float16, float32)", s)
}

// Promote returns the least upper bound of two dtypes in tinygrad's
// promotion lattice, restricted to the types tgc has: bool < ints < floats;
// mixed int8/uint8 promote to int32 (tinygrad would pick int16).
func Promote(a, b DType) DType {
	switch {
	case a == b:
		return a
	case a == Bool:
		return b
	case b == Bool:
		return a
	case a.IsFloat() || b.IsFloat():
		if a.IsFloat() && b.IsFloat() {
			return max(a, b)
		}
		if a.IsFloat() {
			return a
		}
		return b
	default: // two different ints
		return max(Int32, max(a, b))
	}
}

// Wrap truncates an integer to the width of the dtype, the way C stores it.
func (d DType) Wrap(v int64) int64 {
	switch d {
	case Bool:
		if v != 0 {
			return 1
		}
		return 0
	case Int8:
		return int64(int8(v))
	case Uint8:
		return int64(uint8(v))
	case Int32:
		return int64(int32(v))
	}
	return v
}
