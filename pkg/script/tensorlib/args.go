package tensorlib

import (
	"fmt"
	"math"

	"go.starlark.net/starlark"

	"tgc/pkg/ir"
	"tgc/pkg/script/pyrt"
	"tgc/pkg/tensor"
)

// Argument conversion: unpackers for starlark.UnpackArgs and helpers that
// turn Python values into shapes, axes, dtypes and tensors. Every error
// names what was expected and what was given.

// toInt converts an int (or bool) value.
func ToInt(v starlark.Value) (int, error) {
	switch v := v.(type) {
	case starlark.Int:
		i, ok := v.Int64()
		if !ok || i > math.MaxInt32 || i < math.MinInt32 {
			return 0, fmt.Errorf("integer %s out of range", v)
		}
		return int(i), nil
	case starlark.Bool:
		if v {
			return 1, nil
		}
		return 0, nil
	}
	return 0, fmt.Errorf("got %s, want int", v.Type())
}

// toFloat converts an int, float or bool value.
func ToFloat(v starlark.Value) (float64, error) {
	switch v := v.(type) {
	case starlark.Float:
		return float64(v), nil
	case starlark.Int:
		return float64(v.Float()), nil
	case starlark.Bool:
		if v {
			return 1, nil
		}
		return 0, nil
	}
	return 0, fmt.Errorf("got %s, want float", v.Type())
}

// intList converts a tuple or list of ints.
func intList(v starlark.Value) ([]int, error) {
	var elems []starlark.Value
	switch v := v.(type) {
	case starlark.Tuple:
		elems = v
	case *starlark.List:
		for i := range v.Len() {
			elems = append(elems, v.Index(i))
		}
	default:
		return nil, fmt.Errorf("got %s, want tuple of ints", v.Type())
	}
	out := make([]int, len(elems))
	for i, e := range elems {
		n, err := ToInt(e)
		if err != nil {
			return nil, fmt.Errorf("element %d: %v", i, err)
		}
		out[i] = n
	}
	return out, nil
}

// isSeq reports whether v is a tuple or list.
func IsSeq(v starlark.Value) bool {
	switch v.(type) {
	case starlark.Tuple, *starlark.List:
		return true
	}
	return false
}

// varInts reads tinygrad's "shape, *args" convention: f(2, 3) or f((2, 3)).
func varInts(name string, args starlark.Tuple) ([]int, error) {
	if len(args) == 1 && IsSeq(args[0]) {
		s, err := intList(args[0])
		if err != nil {
			return nil, fmt.Errorf("%s: %v", name, err)
		}
		return s, nil
	}
	out := make([]int, len(args))
	for i, a := range args {
		n, err := ToInt(a)
		if err != nil {
			return nil, fmt.Errorf("%s: argument %d: %v", name, i+1, err)
		}
		out[i] = n
	}
	return out, nil
}

// axisArg is an axis= argument: None (all axes), an int, or a tuple of ints.
type axisArg struct {
	axes []int // nil: all
	set  bool
}

func (a *axisArg) Unpack(v starlark.Value) error {
	if v == starlark.None {
		return nil
	}
	if IsSeq(v) {
		axes, err := intList(v)
		if err != nil {
			return err
		}
		a.axes, a.set = axes, true
		if len(axes) == 0 {
			a.axes = []int{}
		}
		return nil
	}
	n, err := ToInt(v)
	if err != nil {
		return fmt.Errorf("got %s, want int, tuple of ints or None", v.Type())
	}
	a.axes, a.set = []int{n}, true
	return nil
}

// IntArg is an int argument that also accepts bools.
type IntArg int

func (a *IntArg) Unpack(v starlark.Value) error {
	n, err := ToInt(v)
	*a = IntArg(n)
	return err
}

// FloatArg is a float argument that also accepts ints.
type FloatArg float64

func (a *FloatArg) Unpack(v starlark.Value) error {
	f, err := ToFloat(v)
	*a = FloatArg(f)
	return err
}

// PairArg is an int or a pair of ints (kernel sizes, strides, paddings).
type PairArg struct{ v []int }

// Ints is the value: one int or several.
func (a PairArg) Ints() []int { return a.v }

// Pair is a PairArg with a default value.
func Pair(def ...int) PairArg { return PairArg{def} }

func (a *PairArg) Unpack(v starlark.Value) error {
	if IsSeq(v) {
		l, err := intList(v)
		a.v = l
		return err
	}
	n, err := ToInt(v)
	if err != nil {
		return fmt.Errorf("got %s, want int or tuple of ints", v.Type())
	}
	a.v = []int{n}
	return nil
}

// DTypeArg is a dtype= argument: a dtypes.X value or its name.
type DTypeArg struct {
	dt  ir.DType
	set bool
}

// DType is the dtype given, and whether one was.
func (a DTypeArg) DType() (ir.DType, bool) { return a.dt, a.set }

func (a *DTypeArg) Unpack(v starlark.Value) error {
	switch v := v.(type) {
	case starlark.NoneType:
		return nil
	case DType:
		a.dt, a.set = v.dt, true
		return nil
	case starlark.String:
		dt, err := ir.ParseDType(string(v))
		if err != nil {
			return err
		}
		a.dt, a.set = dt, true
		return nil
	}
	return fmt.Errorf("got %s, want a dtype such as dtypes.float32", v.Type())
}

// TensorArg is an argument that must be a Tensor.
type TensorArg struct{ t *tensor.Tensor }

// Tensor is the tensor given, or nil for None.
func (a TensorArg) Tensor() *tensor.Tensor { return a.t }

func (a *TensorArg) Unpack(v starlark.Value) error {
	if v == starlark.None {
		return nil
	}
	t, ok := v.(*Tensor)
	if !ok {
		return fmt.Errorf("got %s, want Tensor", v.Type())
	}
	a.t = t.t
	return nil
}

// operand converts the other side of a binary op: a tensor, or a Python
// number made into a constant of like's dtype (tinygrad's rule: an int keeps
// the tensor's dtype, a float makes an int tensor float32). It returns nil,
// nil for values that are neither.
func operand(like *tensor.Tensor, v starlark.Value) (*tensor.Tensor, error) {
	switch v := v.(type) {
	case *Tensor:
		return v.t, nil
	case starlark.Int:
		if i, ok := v.Int64(); ok {
			return like.ScalarInt(i, false), nil
		}
		if u, ok := v.Uint64(); ok {
			return like.ScalarInt(int64(u), true), nil
		}
		return like.Scalar(float64(v.Float()), false), nil
	case starlark.Bool:
		if like.DType() == ir.Bool {
			return like.Const(b2f(bool(v)), ir.Bool), nil
		}
		return like.Scalar(b2f(bool(v)), false), nil
	case starlark.Float:
		return like.Scalar(float64(v), true), nil
	}
	return nil, nil
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// pyConst makes a scalar tensor from a Python number with tinygrad's
// default dtypes: bool, int32, float32.
func pyConst(ctx *tensor.Context, v starlark.Value) (*tensor.Tensor, error) {
	switch v := v.(type) {
	case starlark.Bool:
		return ctx.Const(b2f(bool(v)), ir.Bool), nil
	case starlark.Int:
		if i, ok := v.Int64(); ok && ir.Int32.Fits(i) {
			return ctx.ConstInt(i, ir.Int32), nil
		}
		return nil, fmt.Errorf("%s does not fit int32 (-2147483648 to 2147483647): make it a tensor of a wider dtype", v)
	case starlark.Float:
		return ctx.Const(float64(v), ir.Float32), nil
	}
	return nil, fmt.Errorf("got %s, want Tensor or number", v.Type())
}

// tensorOrScalar converts an operand of a method (x.maximum(0.5)): a
// tensor, or a number made relative to self.
func tensorOrScalar(c *pyrt.Call, self *tensor.Tensor, v starlark.Value, what string) (*tensor.Tensor, error) {
	t, err := operand(self, v)
	if err != nil {
		return nil, err
	}
	if t == nil {
		return nil, fmt.Errorf("%s: for parameter %s: got %s, want Tensor or number", c.Name, what, v.Type())
	}
	return t, nil
}

// pair2 broadcasts an int-or-pair argument to n entries.
func pairN(name, what string, v []int, n int) ([]int, error) {
	switch len(v) {
	case n:
		return v, nil
	case 1:
		out := make([]int, n)
		for i := range out {
			out[i] = v[0]
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s: %s must be an int or a tuple of %d ints, got %d values", name, what, n, len(v))
}
