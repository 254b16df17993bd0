package onnx

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"tgc/pkg/tensor"
)

// Array is a tensor held on the host: initializers, constants, input files
// and the values folded at load time (shapes and what is computed from
// them).
type Array struct {
	Type  DataType
	Shape []int
	Data  []byte // little-endian, Numel()*Type.Size() bytes
}

// maxElements bounds every tensor tgc builds from a file (tgc's own limit).
const maxElements = math.MaxInt32

// numel is the product of dims, or an error when a dimension is negative or
// the product is too large to allocate.
func numel(dims []int) (int, error) {
	n := 1
	for _, d := range dims {
		if d < 0 {
			return 0, fmt.Errorf("negative dimension in shape %s", tensor.FormatShape(dims))
		}
		if d > 0 && n > maxElements/d {
			return 0, fmt.Errorf("shape %s has more than 2^31 elements", tensor.FormatShape(dims))
		}
		n *= d
	}
	return n, nil
}

// NewArray is a zero-filled array.
func NewArray(t DataType, shape []int) *Array {
	n, _ := numel(shape)
	return &Array{Type: t, Shape: slices.Clone(shape), Data: make([]byte, n*t.Size())}
}

// Numel is the number of elements.
func (a *Array) Numel() int {
	n := 1
	for _, d := range a.Shape {
		n *= d
	}
	return n
}

func (a *Array) Int(i int) int64     { return a.Type.getInt(a.Data, i) }
func (a *Array) Float(i int) float64 { return a.Type.getFloat(a.Data, i) }
func (a *Array) SetInt(i int, v int64) {
	a.Type.putInt(a.Data, i, v)
}
func (a *Array) SetFloat(i int, v float64) { a.Type.putFloat(a.Data, i, v) }

// Ints returns every element as an int64.
func (a *Array) Ints() []int64 {
	v := make([]int64, a.Numel())
	for i := range v {
		v[i] = a.Int(i)
	}
	return v
}

// Floats returns every element as a float64.
func (a *Array) Floats() []float64 {
	v := make([]float64, a.Numel())
	for i := range v {
		v[i] = a.Float(i)
	}
	return v
}

// ArrayOfInts is a 1-D (or shaped) int64 array.
func ArrayOfInts(t DataType, shape []int, v []int64) *Array {
	a := NewArray(t, shape)
	for i, x := range v {
		a.SetInt(i, x)
	}
	return a
}

// ArrayOfFloats is an array of type t holding v.
func ArrayOfFloats(t DataType, shape []int, v []float64) *Array {
	a := NewArray(t, shape)
	for i, x := range v {
		a.SetFloat(i, x)
	}
	return a
}

// Tensor makes the array a realized buffer of ctx named name.
func (a *Array) Tensor(ctx *tensor.Context, name string, weight bool) (*tensor.Tensor, error) {
	dt, err := a.Type.IR()
	if err != nil {
		return nil, err
	}
	t, err := ctx.FromBytes(dt, a.Shape, a.Data)
	if err != nil {
		return nil, err
	}
	if b := t.Node().Realized(); b != nil {
		b.Name, b.Weight = name, weight
	}
	return t, nil
}

// ArrayFrom reads a tensor's value (realizing it) into an array.
func ArrayFrom(t *tensor.Tensor) (*Array, error) {
	if t.Err() != nil {
		return nil, t.Err()
	}
	typ := FromIR(t.DType())
	if t.Numel() == 0 { // nothing to compute (tgc does not realize empty tensors)
		return NewArray(typ, t.Shape()), nil
	}
	if err := t.Realize().Err(); err != nil {
		return nil, err
	}
	e := t.Context().Engine()
	if e == nil {
		return nil, errors.New("the tensor's context has no engine to read it")
	}
	data, err := e.Read(t.Node())
	if err != nil {
		return nil, err
	}
	if typ == Undefined {
		return nil, fmt.Errorf("internal: no ONNX type for %s", t.DType())
	}
	return &Array{Type: typ, Shape: t.Shape(), Data: slices.Clone(data)}, nil
}
