package tensorlib

import (
	"errors"
	"fmt"
	"math"

	"go.starlark.net/starlark"

	"tgc/pkg/ir"
	"tgc/pkg/script/pyrt"
	"tgc/pkg/tensor"
)

// Conversions between Python values and tensors: Tensor(nested list) and
// .item() / .tolist().

// fromPython builds a realized tensor from a number or a nested list/tuple
// of numbers. Without dtype, it is float32 if any element is a float, else
// int32 if any is an int, else bool (an empty list is float32).
func fromPython(ctx *tensor.Context, v starlark.Value, dt DTypeArg) (*tensor.Tensor, error) {
	var shape []int
	for x := v; IsSeq(x); {
		n := starlark.Len(x)
		shape = append(shape, n)
		if n == 0 {
			break
		}
		x = x.(starlark.Indexable).Index(0)
	}
	var vals []float64
	hasFloat, hasInt := false, false
	var walk func(x starlark.Value, depth int, path string) error
	walk = func(x starlark.Value, depth int, path string) error {
		if depth < len(shape) {
			if !IsSeq(x) || starlark.Len(x) != shape[depth] {
				return fmt.Errorf("Tensor: the nested list is not rectangular: %s should be a list of %d elements, got %s", path, shape[depth], describe(x))
			}
			seq := x.(starlark.Indexable)
			for i := range seq.Len() {
				if err := walk(seq.Index(i), depth+1, fmt.Sprintf("%s[%d]", path, i)); err != nil {
					return err
				}
			}
			return nil
		}
		switch x := x.(type) {
		case starlark.Bool:
			vals = append(vals, b2f(bool(x)))
		case starlark.Int:
			hasInt = true
			f := float64(x.Float())
			if !dt.set && (f > math.MaxInt32 || f < math.MinInt32) {
				return fmt.Errorf("Tensor: %s = %s does not fit in int32; pass dtype=dtypes.float32", path, x)
			}
			vals = append(vals, f)
		case starlark.Float:
			hasFloat = true
			vals = append(vals, float64(x))
		case *Tensor:
			return fmt.Errorf("Tensor: %s is a Tensor; combine tensors with Tensor.stack or cat", path)
		default:
			if IsSeq(x) {
				return fmt.Errorf("Tensor: the nested list is not rectangular: %s is a list, expected a number", path)
			}
			return fmt.Errorf("Tensor: %s is %s, want a number", path, x.Type())
		}
		return nil
	}
	if err := walk(v, 0, "data"); err != nil {
		return nil, err
	}
	dtype := ir.Bool
	switch {
	case dt.set:
		dtype = dt.dt
	case hasFloat || len(vals) == 0:
		dtype = ir.Float32
	case hasInt:
		dtype = ir.Int32
	}
	return ctx.FromFloats(dtype, shape, vals)
}

// describe names a value for error messages.
func describe(x starlark.Value) string {
	if IsSeq(x) {
		return fmt.Sprintf("a %s of %d elements", x.Type(), starlark.Len(x))
	}
	return "a " + x.Type()
}

// readValues realizes t and returns its elements, warning in trace mode.
func ReadValues(c *pyrt.Call, t *tensor.Tensor) ([]float64, error) {
	if t.Context().Engine() == nil {
		return nil, errors.New("no device: the tensor cannot be computed (no engine is installed)")
	}
	if Tracing(t.Context()) {
		WarnTraceRead(c)
	}
	return t.Floats()
}

// pyValue converts one element to the Python type of its dtype.
func pyValue(dt ir.DType, v float64) starlark.Value {
	switch {
	case dt == ir.Bool:
		return starlark.Bool(v != 0)
	case dt.IsFloat():
		return starlark.Float(v)
	}
	return starlark.MakeInt64(int64(v))
}

// item is t.item(): the single value as a Python number.
func item(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
	if err := c.NoArgs(); err != nil {
		return nil, err
	}
	if t.Numel() != 1 {
		return nil, fmt.Errorf("item: tensor of shape %s has %d elements, item() needs exactly one", tensor.FormatShape(t.Shape()), t.Numel())
	}
	vals, err := ReadValues(c, t)
	if err != nil {
		return nil, err
	}
	return pyValue(t.DType(), vals[0]), nil
}

// tolist is t.tolist(): nested lists (a number for a 0-d tensor).
func tolist(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
	if err := c.NoArgs(); err != nil {
		return nil, err
	}
	vals, err := ReadValues(c, t)
	if err != nil {
		return nil, err
	}
	shape := t.Shape()
	dt := t.DType()
	var build func(depth, off int) starlark.Value
	build = func(depth, off int) starlark.Value {
		if depth == len(shape) {
			return pyValue(dt, vals[off])
		}
		stride := 1
		for _, d := range shape[depth+1:] {
			stride *= d
		}
		elems := make([]starlark.Value, shape[depth])
		for i := range elems {
			elems[i] = build(depth+1, off+i*stride)
		}
		return starlark.NewList(elems)
	}
	return build(0, 0), nil
}
