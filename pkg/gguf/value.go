package gguf

import (
	"fmt"
	"math"
)

// ValueType is the type of a metadata value, numbered as in the file.
type ValueType uint32

// The metadata value types of GGUF.
const (
	TypeUint8   ValueType = 0
	TypeInt8    ValueType = 1
	TypeUint16  ValueType = 2
	TypeInt16   ValueType = 3
	TypeUint32  ValueType = 4
	TypeInt32   ValueType = 5
	TypeFloat32 ValueType = 6
	TypeBool    ValueType = 7
	TypeString  ValueType = 8
	TypeArray   ValueType = 9
	TypeUint64  ValueType = 10
	TypeInt64   ValueType = 11
	TypeFloat64 ValueType = 12
)

var typeNames = [...]string{"uint8", "int8", "uint16", "int16", "uint32", "int32",
	"float32", "bool", "string", "array", "uint64", "int64", "float64"}

func (t ValueType) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return fmt.Sprintf("value type %d", uint32(t))
}

// size is the encoded size of a scalar of type t; strings and arrays report
// their smallest encoding (an empty one). 0 means t is not a valid type.
func (t ValueType) size() int {
	switch t {
	case TypeUint8, TypeInt8, TypeBool:
		return 1
	case TypeUint16, TypeInt16:
		return 2
	case TypeUint32, TypeInt32, TypeFloat32:
		return 4
	case TypeUint64, TypeInt64, TypeFloat64, TypeString:
		return 8
	case TypeArray:
		return 12
	}
	return 0
}

// Value is one metadata value. Data holds it as the Go type matching Type:
// uint8, int8, uint16, int16, uint32, int32, float32, bool, string, uint64,
// int64, float64, or Array.
type Value struct {
	Type ValueType
	Data any
}

// Array is an array value. Values is a slice of the element type's Go type
// ([]uint8 ... []string), or []Array for an array of arrays (each of which
// has its own element type).
type Array struct {
	Elem   ValueType
	Values any
}

// Len returns the number of elements.
func (a Array) Len() int {
	switch v := a.Values.(type) {
	case []uint8:
		return len(v)
	case []int8:
		return len(v)
	case []uint16:
		return len(v)
	case []int16:
		return len(v)
	case []uint32:
		return len(v)
	case []int32:
		return len(v)
	case []float32:
		return len(v)
	case []bool:
		return len(v)
	case []string:
		return len(v)
	case []uint64:
		return len(v)
	case []int64:
		return len(v)
	case []float64:
		return len(v)
	case []Array:
		return len(v)
	}
	return 0
}

// Constructors, for writing files.

func Uint8(v uint8) Value     { return Value{TypeUint8, v} }
func Int8(v int8) Value       { return Value{TypeInt8, v} }
func Uint16(v uint16) Value   { return Value{TypeUint16, v} }
func Int16(v int16) Value     { return Value{TypeInt16, v} }
func Uint32(v uint32) Value   { return Value{TypeUint32, v} }
func Int32(v int32) Value     { return Value{TypeInt32, v} }
func Float32(v float32) Value { return Value{TypeFloat32, v} }
func Bool(v bool) Value       { return Value{TypeBool, v} }
func String(v string) Value   { return Value{TypeString, v} }
func Uint64(v uint64) Value   { return Value{TypeUint64, v} }
func Int64(v int64) Value     { return Value{TypeInt64, v} }
func Float64(v float64) Value { return Value{TypeFloat64, v} }

// ArrayOf returns an array value of the elements, whose element type follows
// from T.
func ArrayOf[T uint8 | int8 | uint16 | int16 | uint32 | int32 | float32 | bool | string | uint64 | int64 | float64 | Array](elems []T) Value {
	t, _ := sliceType(elems)
	return Value{TypeArray, Array{Elem: t, Values: elems}}
}

// sliceType returns the element type of a Go slice that can be an Array's
// Values.
func sliceType(values any) (ValueType, bool) {
	switch values.(type) {
	case []uint8:
		return TypeUint8, true
	case []int8:
		return TypeInt8, true
	case []uint16:
		return TypeUint16, true
	case []int16:
		return TypeInt16, true
	case []uint32:
		return TypeUint32, true
	case []int32:
		return TypeInt32, true
	case []float32:
		return TypeFloat32, true
	case []bool:
		return TypeBool, true
	case []string:
		return TypeString, true
	case []uint64:
		return TypeUint64, true
	case []int64:
		return TypeInt64, true
	case []float64:
		return TypeFloat64, true
	case []Array:
		return TypeArray, true
	}
	return 0, false
}

// asInt returns an integer value as int64 (ok false for other types or a
// uint64 above MaxInt64).
func asInt(v Value) (int64, bool) {
	switch x := v.Data.(type) {
	case uint8:
		return int64(x), true
	case int8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case int16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case int32:
		return int64(x), true
	case uint64:
		if x > math.MaxInt64 {
			return 0, false
		}
		return int64(x), true
	case int64:
		return x, true
	}
	return 0, false
}

// ints converts an integer array's values to int64.
func ints(a Array) ([]int64, bool) {
	out := make([]int64, a.Len())
	conv := func(get func(i int) int64) []int64 {
		for i := range out {
			out[i] = get(i)
		}
		return out
	}
	switch v := a.Values.(type) {
	case []uint8:
		return conv(func(i int) int64 { return int64(v[i]) }), true
	case []int8:
		return conv(func(i int) int64 { return int64(v[i]) }), true
	case []uint16:
		return conv(func(i int) int64 { return int64(v[i]) }), true
	case []int16:
		return conv(func(i int) int64 { return int64(v[i]) }), true
	case []uint32:
		return conv(func(i int) int64 { return int64(v[i]) }), true
	case []int32:
		return conv(func(i int) int64 { return int64(v[i]) }), true
	case []int64:
		return conv(func(i int) int64 { return v[i] }), true
	case []uint64:
		for i, x := range v {
			if x > math.MaxInt64 {
				return nil, false
			}
			out[i] = int64(x)
		}
		return out, true
	}
	return nil, false
}
