package tensorlib

import (
	"errors"
	"fmt"
	"math"

	"go.starlark.net/starlark"

	"tgc/pkg/ir"
	"tgc/pkg/script/pyrt"
	"tgc/pkg/sysmem"
	"tgc/pkg/tensor"
)

// Conversions between Python values and tensors: Tensor(nested list) and
// .item() / .tolist().

// fromPython builds a realized tensor from a number or a nested list/tuple
// of numbers. Without dtype, it is float32 if any element is a float, else
// int32 if any is an int, else bool (an empty list is float32). Integers
// convert exactly (int64 and uint64 included) and must fit the dtype.
func fromPython(c *pyrt.Call, v starlark.Value, dt DTypeArg) (*tensor.Tensor, error) {
	ctx := Context(c)
	var shape []int
	count := uint64(1)
	for x := v; IsSeq(x); {
		n := starlark.Len(x)
		shape = append(shape, n)
		count *= uint64(n)
		if n == 0 {
			break
		}
		x = x.(starlark.Indexable).Index(0)
	}
	// the Python values, then the tensor's bytes
	if err := CheckMemory(c, fmt.Sprintf("Tensor: a list of %d numbers", count), count*(16+8)); err != nil {
		return nil, err
	}
	var elems []starlark.Value
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
		case starlark.Int:
			hasInt = true
		case starlark.Float:
			hasFloat = true
		case *Tensor:
			return fmt.Errorf("Tensor: %s is a Tensor; combine tensors with Tensor.stack or cat", path)
		default:
			if IsSeq(x) {
				return fmt.Errorf("Tensor: the nested list is not rectangular: %s is a list, expected a number", path)
			}
			return fmt.Errorf("Tensor: %s is %s, want a number", path, x.Type())
		}
		elems = append(elems, x)
		return nil
	}
	if err := walk(v, 0, "data"); err != nil {
		return nil, err
	}
	dtype := ir.Bool
	switch {
	case dt.set:
		dtype = dt.dt
	case hasFloat || len(elems) == 0:
		dtype = ir.Float32
	case hasInt:
		dtype = ir.Int32
	}
	data := make([]byte, len(elems)*dtype.Size())
	for i, x := range elems {
		if dtype.IsFloat() {
			f, _ := ToFloat(x)
			tensor.PutValue(data, dtype, i, f)
			continue
		}
		n, err := intElement(x, dtype)
		if err != nil {
			if !dt.set && dtype == ir.Int32 {
				return nil, fmt.Errorf("Tensor: %s = %s does not fit in int32; pass dtype=dtypes.int64 or dtypes.float32", elementPath(shape, i), x)
			}
			return nil, fmt.Errorf("Tensor: %s = %s %v", elementPath(shape, i), x, err)
		}
		tensor.PutInt(data, dtype, i, n)
	}
	return ctx.FromBytes(dtype, shape, data)
}

// intElement converts a Python number to an element of an integer (or
// bool) dtype, exactly; floats are truncated. Out of range is an error.
func intElement(x starlark.Value, dt ir.DType) (int64, error) {
	if dt == ir.Bool {
		f, _ := ToFloat(x)
		return int64(b2f(f != 0)), nil
	}
	lo, hi := dt.ValueRange()
	switch x := x.(type) {
	case starlark.Bool:
		return int64(b2f(bool(x))), nil
	case starlark.Int:
		if v, ok := x.Int64(); ok && dt.Fits(v) {
			return v, nil
		}
		if v, ok := x.Uint64(); ok && dt == ir.Uint64 {
			return int64(v), nil
		}
	case starlark.Float:
		if t := math.Trunc(float64(x)); t >= lo && t <= hi {
			return tensor.WrapFloat(dt, t), nil
		}
	}
	return 0, fmt.Errorf("does not fit %s (%s to %s)", dt, formatInt(lo), formatInt(hi))
}

// formatInt prints an integral float64 (a dtype's range end) as an integer.
func formatInt(v float64) string {
	if v >= 1<<64 { // uint64's end, 2^64-1, is 2^64 as a float64
		return "18446744073709551615"
	}
	if v >= 1<<63 {
		return fmt.Sprint(uint64(v))
	}
	return fmt.Sprint(int64(v))
}

// elementPath is the Python path of flat element i of a nested list of
// the given shape ("data[1][2]"), for error messages.
func elementPath(shape []int, i int) string {
	idx := make([]int, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		if shape[d] > 0 {
			idx[d] = i % shape[d]
			i /= shape[d]
		}
	}
	path := "data"
	for _, k := range idx {
		path += fmt.Sprintf("[%d]", k)
	}
	return path
}

// describe names a value for error messages.
func describe(x starlark.Value) string {
	if IsSeq(x) {
		return fmt.Sprintf("a %s of %d elements", x.Type(), starlark.Len(x))
	}
	return "a " + x.Type()
}

// ReadValues realizes t and returns its elements as float64s (exact but
// for 64-bit integers past 2^53), warning in trace mode.
func ReadValues(c *pyrt.Call, t *tensor.Tensor) ([]float64, error) {
	data, err := readBytes(c, t)
	if err != nil {
		return nil, err
	}
	out := make([]float64, t.Numel())
	for i := range out {
		out[i] = tensor.GetValue(data, t.DType(), i)
	}
	return out, nil
}

// readBytes realizes t and returns its bytes, warning in trace mode.
func readBytes(c *pyrt.Call, t *tensor.Tensor) ([]byte, error) {
	if t.Context().Engine() == nil {
		return nil, errors.New("no device: the tensor cannot be computed (no engine is installed)")
	}
	if Tracing(t.Context()) {
		WarnTraceRead(c)
	}
	if err := CheckMemory(c, fmt.Sprintf("%s: reading the tensor of shape %s (%s)", c.Name, tensor.FormatShape(t.Shape()), t.DType()), uint64(t.Numel())*uint64(8+t.DType().Size())); err != nil {
		return nil, err
	}
	return t.Bytes()
}

// memoryHost is implemented by the session: the memory a script may still
// use (its limit, or what the system has left).
type memoryHost interface {
	MemoryAvailable() (uint64, bool)
}

// CheckMemory refuses to hold more bytes than the script may still use;
// what names the request.
func CheckMemory(c *pyrt.Call, what string, bytes uint64) error {
	h, ok := pyrt.HostOf(c.Thread).(memoryHost)
	if !ok {
		return nil
	}
	if avail, ok := h.MemoryAvailable(); ok && bytes > avail {
		return fmt.Errorf("%s needs %s of memory, and %s is available", what, sysmem.Size(bytes), sysmem.Size(avail))
	}
	return nil
}

// pyValue converts element i of data to the Python type of its dtype
// (integers exactly, uint64 included).
func pyValue(dt ir.DType, data []byte, i int) starlark.Value {
	switch {
	case dt == ir.Bool:
		return starlark.Bool(tensor.GetInt(data, dt, i) != 0)
	case dt.IsFloat():
		return starlark.Float(tensor.GetValue(data, dt, i))
	case dt == ir.Uint64:
		return starlark.MakeUint64(uint64(tensor.GetInt(data, dt, i)))
	}
	return starlark.MakeInt64(tensor.GetInt(data, dt, i))
}

// item is t.item(): the single value as a Python number.
func item(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
	if err := c.NoArgs(); err != nil {
		return nil, err
	}
	if t.Numel() != 1 {
		return nil, fmt.Errorf("item: tensor of shape %s has %d elements, item() needs exactly one", tensor.FormatShape(t.Shape()), t.Numel())
	}
	data, err := readBytes(c, t)
	if err != nil {
		return nil, err
	}
	return pyValue(t.DType(), data, 0), nil
}

// tolist is t.tolist(): nested lists (a number for a 0-d tensor).
func tolist(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
	if err := c.NoArgs(); err != nil {
		return nil, err
	}
	// a Python number per element (about 32 bytes each)
	if err := CheckMemory(c, fmt.Sprintf("tolist: the list of the %d elements of a tensor of shape %s", t.Numel(), tensor.FormatShape(t.Shape())), uint64(t.Numel())*32); err != nil {
		return nil, err
	}
	data, err := readBytes(c, t)
	if err != nil {
		return nil, err
	}
	shape := t.Shape()
	dt := t.DType()
	var build func(depth, off int) starlark.Value
	build = func(depth, off int) starlark.Value {
		if depth == len(shape) {
			return pyValue(dt, data, off)
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
