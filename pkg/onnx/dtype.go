package onnx

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"tgc/pkg/half"
	"tgc/pkg/ir"
)

// DataType is an ONNX element type (TensorProto.DataType). Host values keep
// it, so constants of any numeric type fold at load time even where tgc has
// no such dtype; a value that must reach a device is mapped to tgc's dtype
// of the same name, or refused by name.
type DataType int32

const (
	Undefined  DataType = 0
	Float      DataType = 1
	Uint8      DataType = 2
	Int8       DataType = 3
	Uint16     DataType = 4
	Int16      DataType = 5
	Int32      DataType = 6
	Int64      DataType = 7
	String     DataType = 8
	Bool       DataType = 9
	Float16    DataType = 10
	Double     DataType = 11
	Uint32     DataType = 12
	Uint64     DataType = 13
	Complex64  DataType = 14
	Complex128 DataType = 15
	BFloat16   DataType = 16
)

var dataTypes = [...]struct {
	onnx string // ONNX's name (TensorProto.DataType)
	tgc  string // tgc's (and numpy's) name
	size int
}{
	Undefined:  {"UNDEFINED", "", 0},
	Float:      {"FLOAT", "float32", 4},
	Uint8:      {"UINT8", "uint8", 1},
	Int8:       {"INT8", "int8", 1},
	Uint16:     {"UINT16", "uint16", 2},
	Int16:      {"INT16", "int16", 2},
	Int32:      {"INT32", "int32", 4},
	Int64:      {"INT64", "int64", 8},
	String:     {"STRING", "string", 0},
	Bool:       {"BOOL", "bool", 1},
	Float16:    {"FLOAT16", "float16", 2},
	Double:     {"DOUBLE", "float64", 8},
	Uint32:     {"UINT32", "uint32", 4},
	Uint64:     {"UINT64", "uint64", 8},
	Complex64:  {"COMPLEX64", "complex64", 8},
	Complex128: {"COMPLEX128", "complex128", 16},
	BFloat16:   {"BFLOAT16", "bfloat16", 2},
}

func (d DataType) known() bool { return d >= 0 && int(d) < len(dataTypes) }

// String is ONNX's name (INT64).
func (d DataType) String() string {
	if !d.known() {
		return fmt.Sprintf("data type %d", int32(d))
	}
	return dataTypes[d].onnx
}

// Name is the numpy-style name (float32, int64, ...).
func (d DataType) Name() string {
	if !d.known() || d == Undefined {
		return d.String()
	}
	return dataTypes[d].tgc
}

// Size is the bytes of one element (0 for strings and unknown types).
func (d DataType) Size() int {
	if !d.known() {
		return 0
	}
	return dataTypes[d].size
}

// Numeric says whether the host can hold values of the type (every fixed
// size type but complex ones).
func (d DataType) Numeric() bool {
	return d.known() && d != Undefined && d != String && d != Complex64 && d != Complex128
}

func (d DataType) IsFloat() bool {
	return d == Float || d == Float16 || d == Double || d == BFloat16
}

// IsUnsigned is true for the unsigned integer types.
func (d DataType) IsUnsigned() bool {
	return d == Uint8 || d == Uint16 || d == Uint32 || d == Uint64
}

// IR maps the type to tgc's dtype of the same name, if tgc has it.
func (d DataType) IR() (ir.DType, error) {
	if d.Numeric() {
		if dt, err := ir.ParseDType(d.Name()); err == nil && slices.Contains(ir.AllDTypes, dt) {
			return dt, nil
		}
	}
	return 0, fmt.Errorf("data type %s (%s) is not supported: tgc has %s", d, d.Name(), irNames())
}

func irNames() string {
	s := ""
	for i, dt := range ir.AllDTypes {
		if i > 0 {
			s += ", "
		}
		s += dt.String()
	}
	return s
}

// FromIR is the ONNX type of a tgc dtype.
func FromIR(dt ir.DType) DataType {
	for i, t := range dataTypes {
		if t.tgc == dt.String() {
			return DataType(i)
		}
	}
	return Undefined
}

// getInt and getFloat read element i of little-endian data of type d as an int64 (ints and
// bool) or float64 (floats).
func (d DataType) getInt(data []byte, i int) int64 {
	switch d {
	case Bool, Uint8:
		return int64(data[i])
	case Int8:
		return int64(int8(data[i]))
	case Uint16:
		return int64(binary.LittleEndian.Uint16(data[2*i:]))
	case Int16:
		return int64(int16(binary.LittleEndian.Uint16(data[2*i:])))
	case Int32:
		return int64(int32(binary.LittleEndian.Uint32(data[4*i:])))
	case Uint32:
		return int64(binary.LittleEndian.Uint32(data[4*i:]))
	case Int64, Uint64:
		return int64(binary.LittleEndian.Uint64(data[8*i:]))
	}
	if d.IsFloat() {
		return ir.CastFloatToInt(ir.Int64, d.getFloat(data, i))
	}
	return 0
}

func (d DataType) getFloat(data []byte, i int) float64 {
	switch d {
	case Float:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:])))
	case Double:
		return math.Float64frombits(binary.LittleEndian.Uint64(data[8*i:]))
	case Float16:
		return float64(half.ToFloat32(binary.LittleEndian.Uint16(data[2*i:])))
	case BFloat16:
		return float64(math.Float32frombits(uint32(binary.LittleEndian.Uint16(data[2*i:])) << 16))
	case Uint64:
		return float64(binary.LittleEndian.Uint64(data[8*i:]))
	}
	return float64(d.getInt(data, i))
}

// putInt stores v as element i, wrapping it to the type's width (a float
// type stores the value converted).
func (d DataType) putInt(data []byte, i int, v int64) {
	switch d {
	case Bool:
		data[i] = 0
		if v != 0 {
			data[i] = 1
		}
	case Uint8, Int8:
		data[i] = byte(v)
	case Uint16, Int16:
		binary.LittleEndian.PutUint16(data[2*i:], uint16(v))
	case Int32, Uint32:
		binary.LittleEndian.PutUint32(data[4*i:], uint32(v))
	case Int64, Uint64:
		binary.LittleEndian.PutUint64(data[8*i:], uint64(v))
	default:
		d.putFloat(data, i, float64(v))
	}
}

// putFloat stores v as element i, rounded to the type (ints truncate toward
// zero and saturate, NaN giving 0: the devices' cast).
func (d DataType) putFloat(data []byte, i int, v float64) {
	switch d {
	case Float:
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(float32(v)))
	case Double:
		binary.LittleEndian.PutUint64(data[8*i:], math.Float64bits(v))
	case Float16:
		binary.LittleEndian.PutUint16(data[2*i:], half.FromFloat32(float32(v)))
	case BFloat16:
		binary.LittleEndian.PutUint16(data[2*i:], half.BFloat16FromFloat32(float32(v)))
	case Bool:
		data[i] = 0
		if v != 0 {
			data[i] = 1
		}
	default:
		dt, err := d.IR()
		if err != nil {
			dt = ir.Int64
		}
		d.putInt(data, i, ir.CastFloatToInt(dt, v))
	}
}
