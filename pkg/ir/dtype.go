// Package ir holds what the tensor graph and the kernel IR share (dtypes and
// the op vocabulary) and the kernel IR itself: loops, scalar expressions, the
// symbolic simplifier and the optimization pass table.
package ir

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// DType is a scalar element type.
type DType uint8

const (
	Bool DType = iota
	Int8
	Uint8
	Int16
	Uint16
	Int32
	Uint32
	Int64
	Uint64
	// Index is the type of index arithmetic (loop variables, offsets,
	// runtime vars). It is never stored in a buffer: a renderer writes it
	// as a 32-bit int when every index expression of the kernel fits in
	// int32, else as a 64-bit int (Kernel.WideIndex).
	Index
	Float16
	// BFloat16 is a storage type like Float16: computed in float32 and
	// rounded to bfloat16 (nearest even) after every op.
	BFloat16
	Float32
	Float64
)

// dtypeInfo is the one table of dtype facts: a new dtype is a row here (and
// a spelling in each renderer's type table). parents are the dtypes one
// step up tinygrad's promotion lattice (see Promote).
var dtypeInfo = [...]struct {
	name     string
	size     int
	st       string // safetensors name ("" when not a storage type)
	float    bool
	unsigned bool
	parents  []DType
}{
	Bool:     {"bool", 1, "BOOL", false, true, []DType{Int8, Uint8}},
	Int8:     {"int8", 1, "I8", false, false, []DType{Int16}},
	Uint8:    {"uint8", 1, "U8", false, true, []DType{Int16, Uint16}},
	Int16:    {"int16", 2, "I16", false, false, []DType{Int32}},
	Uint16:   {"uint16", 2, "U16", false, true, []DType{Int32, Uint32}},
	Int32:    {"int32", 4, "I32", false, false, []DType{Int64}},
	Uint32:   {"uint32", 4, "U32", false, true, []DType{Int64, Uint64}},
	Int64:    {"int64", 8, "I64", false, false, []DType{Float16, BFloat16}},
	Uint64:   {"uint64", 8, "U64", false, true, []DType{Float16, BFloat16}},
	Index:    {"index", 8, "", false, false, nil},
	Float16:  {"float16", 2, "F16", true, false, []DType{Float32}},
	BFloat16: {"bfloat16", 2, "BF16", true, false, []DType{Float32}},
	Float32:  {"float32", 4, "F32", true, false, []DType{Float64}},
	Float64:  {"float64", 8, "F64", true, false, nil},
}

// AllDTypes lists the user-facing storage types, in promotion order.
var AllDTypes = []DType{Bool, Int8, Uint8, Int16, Uint16, Int32, Uint32, Int64, Uint64, Float16, BFloat16, Float32, Float64}

func (d DType) String() string { return dtypeInfo[d].name }

// Size is the storage size of one element in bytes.
func (d DType) Size() int { return dtypeInfo[d].size }

func (d DType) IsFloat() bool { return dtypeInfo[d].float }

// Bits is the width of a value of the dtype.
func (d DType) Bits() int { return 8 * dtypeInfo[d].size }

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
	"char": Int8, "uchar": Uint8, "short": Int16, "ushort": Uint16, "int": Int32,
	"uint": Uint32, "long": Int64, "ulong": Uint64, "half": Float16, "float": Float32,
	"double": Float64, "default_float": Float32, "default_int": Int32,
}

// DTypeAliases lists the alias spellings ParseDType accepts, sorted.
func DTypeAliases() []string {
	var names []string
	for n := range dtypeAliases {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
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

// upward is d and every dtype above it in the promotion lattice.
func upward(d DType) map[DType]bool {
	up := map[DType]bool{d: true}
	for todo := []DType{d}; len(todo) > 0; {
		x := todo[0]
		todo = todo[1:]
		for _, p := range dtypeInfo[x].parents {
			if !up[p] {
				up[p] = true
				todo = append(todo, p)
			}
		}
	}
	return up
}

// Promote returns the least upper bound of two dtypes in tinygrad's
// promotion lattice: bool < int8 < int16 < int32 < int64, bool < uint8 <
// uint16 < uint32 < uint64, uintN < int2N, (u)int64 < float16, bfloat16 <
// float32 < float64. Where two bounds are incomparable (int64 with uint64,
// float16 with bfloat16 only meet above) the first in AllDTypes order wins,
// as in tinygrad: int8 with uint8 is int16, int64 with uint64 is float16.
func Promote(a, b DType) DType {
	if a == b {
		return a
	}
	ua, ub := upward(a), upward(b)
	var common []DType
	for _, d := range AllDTypes {
		if ua[d] && ub[d] {
			common = append(common, d)
		}
	}
	for _, c := range common { // the one below all the others
		least := true
		for _, o := range common {
			least = least && upward(c)[o]
		}
		if least {
			return c
		}
	}
	return common[0]
}

// Range is the value range of an integer (or bool) dtype. Index is bounded
// well inside int64 so that bounds arithmetic on it cannot overflow.
// uint64 holds its values as int64 bit patterns: its range is all of int64
// (bounds say nothing about its unsigned order).
func (d DType) Range() (lo, hi int64) {
	switch d {
	case Bool:
		return 0, 1
	case Int8:
		return math.MinInt8, math.MaxInt8
	case Uint8:
		return 0, math.MaxUint8
	case Int16:
		return math.MinInt16, math.MaxInt16
	case Uint16:
		return 0, math.MaxUint16
	case Int32:
		return math.MinInt32, math.MaxInt32
	case Uint32:
		return 0, math.MaxUint32
	case Int64, Uint64:
		return math.MinInt64, math.MaxInt64
	}
	return -satLimit, satLimit
}

// Compute is the dtype arithmetic on d happens in: the 16-bit floats are
// storage types computed in float32.
func (d DType) Compute() DType {
	if d == Float16 || d == BFloat16 {
		return Float32
	}
	return d
}

// SumDType is the dtype a sum of d accumulates in (tinygrad's
// sum_acc_dtype): bool and small signed ints in int32, small unsigned ints
// in uint32, 16-bit floats in float32.
func (d DType) SumDType() DType {
	switch {
	case d == Bool || d == Int8 || d == Int16:
		return Int32
	case d == Uint8 || d == Uint16:
		return Uint32
	}
	return d.Compute()
}

// ValueRange is the range of an integer (or bool) dtype's values as
// float64s (for uint64: 0 to 2^64-1).
func (d DType) ValueRange() (lo, hi float64) {
	if d == Uint64 {
		return 0, math.MaxUint64
	}
	l, h := d.Range()
	return float64(l), float64(h)
}

// Wrap truncates an integer to the width of the dtype, the way C stores it
// (two's complement); bool is v != 0. uint64 values are int64 bit patterns.
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
	case Int16:
		return int64(int16(v))
	case Uint16:
		return int64(uint16(v))
	case Int32:
		return int64(int32(v))
	case Uint32:
		return int64(uint32(v))
	}
	return v
}

// Fits says whether the integer v is a value of the integer dtype d (for
// uint64: whether the int64 v is one, that is v >= 0).
func (d DType) Fits(v int64) bool {
	if d == Uint64 {
		return v >= 0
	}
	lo, hi := d.Range()
	return v >= lo && v <= hi
}

// IntToFloat is an integer value of dtype d (uint64: a bit pattern) as a
// float64.
func (d DType) IntToFloat(v int64) float64 {
	if d == Uint64 {
		return float64(uint64(v))
	}
	return float64(v)
}
