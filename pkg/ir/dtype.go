// Package ir holds what the tensor graph and the kernel IR share (dtypes and
// the op vocabulary) and the kernel IR itself: loops, scalar expressions, the
// symbolic simplifier and the optimization pass table.
package ir

import (
	"fmt"
	"math"
	"strings"
)

// DType is a scalar element type. The order is the promotion order within
// each family (see Promote).
type DType uint8

const (
	Bool DType = iota
	Int8
	Uint8
	Int32
	// Index is the type of index arithmetic (loop variables, offsets,
	// runtime vars). It is never stored in a buffer: a renderer writes it
	// as a 32-bit int when every index expression of the kernel fits in
	// int32, else as a 64-bit int (Kernel.WideIndex).
	Index
	Float16
	Float32
)

// dtypeInfo is the one table of dtype facts; the renderers keep their
// spellings of each dtype beside their dialect.
var dtypeInfo = [...]struct {
	name     string
	size     int
	st       string // safetensors name ("" when not a storage type)
	float    bool
	unsigned bool
}{
	Bool:    {"bool", 1, "BOOL", false, true},
	Int8:    {"int8", 1, "I8", false, false},
	Uint8:   {"uint8", 1, "U8", false, true},
	Int32:   {"int32", 4, "I32", false, false},
	Index:   {"index", 8, "", false, false},
	Float16: {"float16", 2, "F16", true, false},
	Float32: {"float32", 4, "F32", true, false},
}

// AllDTypes lists the user-facing storage types.
var AllDTypes = []DType{Bool, Int8, Uint8, Int32, Float16, Float32}

func (d DType) String() string { return dtypeInfo[d].name }

// Size is the storage size of one element in bytes.
func (d DType) Size() int { return dtypeInfo[d].size }

func (d DType) IsFloat() bool { return dtypeInfo[d].float }

// IsInt is true for integer types (bool excluded, Index included).
func (d DType) IsInt() bool { return d != Bool && !d.IsFloat() }

// IsUnsigned is true for unsigned integers and bool.
func (d DType) IsUnsigned() bool { return dtypeInfo[d].unsigned }

// SafetensorsName is the dtype's name in the safetensors header.
func (d DType) SafetensorsName() string { return dtypeInfo[d].st }

// DTypeFromSafetensors maps a safetensors dtype name to a DType.
func DTypeFromSafetensors(s string) (DType, bool) {
	for i, info := range dtypeInfo {
		if info.st != "" && info.st == s {
			return DType(i), true
		}
	}
	return 0, false
}

// dtypeAliases are tinygrad's other spellings of the storage types.
var dtypeAliases = map[string]DType{
	"char": Int8, "uchar": Uint8, "int": Int32, "half": Float16,
	"float": Float32, "default_float": Float32, "default_int": Int32,
}

// ParseDType accepts the tinygrad spellings ("float32", "float", "int", ...).
func ParseDType(s string) (DType, error) {
	if dt, ok := dtypeAliases[s]; ok {
		return dt, nil
	}
	var names []string
	for _, dt := range AllDTypes {
		if dt.String() == s {
			return dt, nil
		}
		names = append(names, dt.String())
	}
	return 0, fmt.Errorf("unknown dtype %q (have %s)", s, strings.Join(names, ", "))
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

// Range is the value range of an integer (or bool) dtype. Index is bounded
// well inside int64 so that bounds arithmetic on it cannot overflow.
func (d DType) Range() (lo, hi int64) {
	switch d {
	case Bool:
		return 0, 1
	case Int8:
		return math.MinInt8, math.MaxInt8
	case Uint8:
		return 0, math.MaxUint8
	case Int32:
		return math.MinInt32, math.MaxInt32
	}
	return -satLimit, satLimit
}

// Wrap truncates an integer to the width of the dtype, the way C stores it
// (two's complement); bool is v != 0.
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

// Fits says whether the integer v is a value of the integer dtype d.
func (d DType) Fits(v int64) bool {
	lo, hi := d.Range()
	return v >= lo && v <= hi
}
