package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
)

// value reads a value of type t.
func (c *cursor) value(t ValueType, field string, depth int) (Value, error) {
	if t == TypeArray {
		a, err := c.array(field, depth)
		return Value{TypeArray, a}, err
	}
	if t.size() == 0 {
		return Value{}, fmt.Errorf("%s: unknown value type %d", field, uint32(t))
	}
	if t == TypeString {
		s, err := c.str(field)
		return Value{t, s}, err
	}
	p, err := c.take(uint64(t.size()), field)
	if err != nil {
		return Value{}, err
	}
	v, err := scalar(t, p, field)
	return Value{t, v}, err
}

// scalar decodes a fixed-size value from p.
func scalar(t ValueType, p []byte, field string) (any, error) {
	le := binary.LittleEndian
	switch t {
	case TypeUint8:
		return p[0], nil
	case TypeInt8:
		return int8(p[0]), nil
	case TypeUint16:
		return le.Uint16(p), nil
	case TypeInt16:
		return int16(le.Uint16(p)), nil
	case TypeUint32:
		return le.Uint32(p), nil
	case TypeInt32:
		return int32(le.Uint32(p)), nil
	case TypeFloat32:
		return math.Float32frombits(le.Uint32(p)), nil
	case TypeBool:
		if p[0] > 1 {
			return nil, fmt.Errorf("%s: bool byte is %d, not 0 or 1", field, p[0])
		}
		return p[0] == 1, nil
	case TypeUint64:
		return le.Uint64(p), nil
	case TypeInt64:
		return int64(le.Uint64(p)), nil
	case TypeFloat64:
		return math.Float64frombits(le.Uint64(p)), nil
	}
	return nil, fmt.Errorf("%s: unknown value type %d", field, uint32(t))
}

// array reads an array value: element type, count, elements. The count is
// checked against the rest of the file (at the element type's smallest
// encoding) before the slice is allocated.
func (c *cursor) array(field string, depth int) (Array, error) {
	if depth >= maxNesting {
		return Array{}, fmt.Errorf("%s: arrays nested more than %d deep", field, maxNesting)
	}
	et, err := c.u32(field + " array type")
	if err != nil {
		return Array{}, err
	}
	elem := ValueType(et)
	size := elem.size()
	if size == 0 {
		return Array{}, fmt.Errorf("%s: unknown array element type %d", field, et)
	}
	n, err := c.count(field+" array length", size)
	if err != nil {
		return Array{}, err
	}
	a := Array{Elem: elem}
	switch elem {
	case TypeString:
		v := make([]string, n)
		for i := range v {
			if v[i], err = c.str(""); err != nil {
				return Array{}, fmt.Errorf("%s[%d]: %w", field, i, err)
			}
		}
		a.Values = v
	case TypeArray:
		v := make([]Array, n)
		for i := range v {
			if v[i], err = c.array(field+"[]", depth+1); err != nil {
				return Array{}, fmt.Errorf("%w (element %d)", err, i)
			}
		}
		a.Values = v
	default:
		p, _ := c.take(uint64(n*size), field) // count checked the length
		if a.Values, err = scalars(elem, p, n, field); err != nil {
			return Array{}, err
		}
	}
	return a, nil
}

// scalars decodes n fixed-size values of type t from p.
func scalars(t ValueType, p []byte, n int, field string) (any, error) {
	le := binary.LittleEndian
	switch t {
	case TypeUint8:
		return append([]uint8(nil), p...), nil
	case TypeInt8:
		return fill(n, func(i int) int8 { return int8(p[i]) }), nil
	case TypeUint16:
		return fill(n, func(i int) uint16 { return le.Uint16(p[2*i:]) }), nil
	case TypeInt16:
		return fill(n, func(i int) int16 { return int16(le.Uint16(p[2*i:])) }), nil
	case TypeUint32:
		return fill(n, func(i int) uint32 { return le.Uint32(p[4*i:]) }), nil
	case TypeInt32:
		return fill(n, func(i int) int32 { return int32(le.Uint32(p[4*i:])) }), nil
	case TypeFloat32:
		return fill(n, func(i int) float32 { return math.Float32frombits(le.Uint32(p[4*i:])) }), nil
	case TypeBool:
		for i, x := range p {
			if x > 1 {
				return nil, fmt.Errorf("%s[%d]: bool byte is %d, not 0 or 1", field, i, x)
			}
		}
		return fill(n, func(i int) bool { return p[i] == 1 }), nil
	case TypeUint64:
		return fill(n, func(i int) uint64 { return le.Uint64(p[8*i:]) }), nil
	case TypeInt64:
		return fill(n, func(i int) int64 { return int64(le.Uint64(p[8*i:])) }), nil
	case TypeFloat64:
		return fill(n, func(i int) float64 { return math.Float64frombits(le.Uint64(p[8*i:])) }), nil
	}
	return nil, fmt.Errorf("%s: unknown array element type %d", field, uint32(t))
}

func fill[T any](n int, at func(i int) T) []T {
	v := make([]T, n)
	for i := range v {
		v[i] = at(i)
	}
	return v
}
