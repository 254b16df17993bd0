package tensorlib

import (
	"fmt"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"tgc/pkg/script/pyrt"
	"tgc/pkg/tensor"
)

// Variable(name, min, max) is tinygrad's Variable: an integer known only
// when the kernels run. v.bind(n) gives it a value; a bound variable, plus
// or minus an int, can be a slice bound (x[:, start_pos:start_pos+1]) or a
// shrink bound, and an argument of a TinyJit function, whose replays then
// launch the same kernels with each call's value.

// Var is the Starlark value of a variable, bound or not, plus a constant.
type Var struct {
	s     tensor.SInt
	bound bool
}

var (
	_ starlark.HasAttrs  = Var{}
	_ starlark.HasBinary = Var{}
)

// NewVar wraps a bound variable (the driver of a model script makes them).
func NewVar(s tensor.SInt) Var { return Var{s: s, bound: true} }

// SInt returns the symbolic integer.
func (v Var) SInt() tensor.SInt { return v.s }

func (v Var) String() string        { return v.s.String() }
func (v Var) Type() string          { return "Variable" }
func (v Var) Freeze()               {}
func (v Var) Truth() starlark.Bool  { return starlark.True }
func (v Var) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable type: Variable") }

// VariableFn is the constructor Variable(name, min, max).
func VariableFn(c *pyrt.Call) (starlark.Value, error) {
	var name string
	var lo, hi int
	if err := c.Unpack("name", &name, "min", &lo, "max", &hi); err != nil {
		return nil, err
	}
	v, err := tensor.NewVariable(name, lo, hi)
	if err != nil {
		return nil, err
	}
	return Var{s: tensor.SInt{Var: v}}, nil
}

func (v Var) AttrNames() []string { return []string{"bind", "max", "min", "name", "val"} }

func (v Var) Attr(name string) (starlark.Value, error) {
	switch name {
	case "name":
		return starlark.String(v.s.Var.Name), nil
	case "min":
		return starlark.MakeInt(v.s.Min()), nil
	case "max":
		return starlark.MakeInt(v.s.Max()), nil
	case "val":
		if !v.bound {
			return nil, fmt.Errorf("variable %s is not bound: call .bind(value) first", v.s.Var.Name)
		}
		return starlark.MakeInt(v.s.Value()), nil
	case "bind":
		return pyrt.Builtin("bind", func(c *pyrt.Call) (starlark.Value, error) {
			var val int
			if err := c.Unpack("val", &val); err != nil {
				return nil, err
			}
			if v.bound {
				return nil, fmt.Errorf("variable %s is bound already", v.s.Var.Name)
			}
			s, err := v.s.Var.Bind(val - v.s.C)
			if err != nil {
				return nil, err
			}
			return Var{s: s.Add(v.s.C), bound: true}, nil
		}), nil
	}
	return nil, nil
}

// Binary: a variable plus or minus an int.
func (v Var) Binary(op syntax.Token, y starlark.Value, side starlark.Side) (starlark.Value, error) {
	n, err := ToInt(y)
	if err != nil {
		return nil, nil // unsupported: Starlark reports the operand types
	}
	switch {
	case op == syntax.PLUS:
		return Var{s: v.s.Add(n), bound: v.bound}, nil
	case op == syntax.MINUS && side == starlark.Left:
		return Var{s: v.s.Add(-n), bound: v.bound}, nil
	}
	return nil, nil
}

// sintOf reads an int or a bound variable.
func sintOf(x starlark.Value) (tensor.SInt, error) {
	if v, ok := x.(Var); ok {
		if !v.bound {
			return tensor.SInt{}, fmt.Errorf("variable %s is not bound: call .bind(value) first", v.s.Var.Name)
		}
		return v.s, nil
	}
	n, err := ToInt(x)
	return tensor.Int(n), err
}

// hasVar reports whether an index mentions a variable.
func hasVar(k starlark.Value) bool {
	items := []starlark.Value{k}
	if tup, ok := k.(starlark.Tuple); ok {
		items = tup
	}
	for _, x := range items {
		switch x := x.(type) {
		case Var:
			return true
		case pyrt.Slice:
			for _, b := range []starlark.Value{x.Start, x.Stop, x.Step} {
				if _, ok := b.(Var); ok {
					return true
				}
			}
		}
	}
	return false
}

// symbolicIndex is t[k] for an index with variable bounds: basic slices
// (step 1), ints and Ellipsis only, as a symbolic shrink (the ints' and
// variables' dimensions dropped).
func symbolicIndex(t *tensor.Tensor, k starlark.Value) (*tensor.Tensor, error) {
	items := []starlark.Value{k}
	if tup, ok := k.(starlark.Tuple); ok {
		items = tup
	}
	dims := t.Dims()
	var expanded []starlark.Value
	for i, x := range items {
		if _, ok := x.(pyrt.Ellipsis); ok {
			for range len(dims) - (len(items) - 1) {
				expanded = append(expanded, pyrt.Slice{Start: starlark.None, Stop: starlark.None, Step: starlark.None})
			}
			expanded = append(expanded, items[i+1:]...)
			break
		}
		expanded = append(expanded, x)
	}
	if len(expanded) > len(dims) {
		return nil, fmt.Errorf("index: %d indices for a tensor with %d dimensions", len(expanded), len(dims))
	}
	bounds := make([][2]tensor.SInt, len(dims))
	var keep []int
	for d := range dims {
		bounds[d] = [2]tensor.SInt{tensor.Int(0), dims[d]}
		if d >= len(expanded) {
			keep = append(keep, d)
			continue
		}
		switch x := expanded[d].(type) {
		case pyrt.Slice:
			if x.Step != starlark.None {
				if n, err := ToInt(x.Step); err != nil || n != 1 {
					return nil, fmt.Errorf("index: a slice with a variable bound takes step 1")
				}
			}
			for j, b := range []starlark.Value{x.Start, x.Stop} {
				if b == starlark.None {
					continue
				}
				s, err := sintOf(b)
				if err != nil {
					return nil, fmt.Errorf("index: %v", err)
				}
				if !s.IsSym() && s.C < 0 && !dims[d].IsSym() {
					s = tensor.Int(s.C + dims[d].C)
				}
				bounds[d][j] = s
			}
			keep = append(keep, d)
		case starlark.NoneType:
			return nil, fmt.Errorf("index: None (a new axis) with a variable bound: unsqueeze after indexing instead")
		default:
			s, err := sintOf(x)
			if err != nil {
				return nil, fmt.Errorf("index: %v", err)
			}
			if !s.IsSym() && s.C < 0 && !dims[d].IsSym() {
				s = tensor.Int(s.C + dims[d].C)
			}
			bounds[d] = [2]tensor.SInt{s, s.Add(1)}
		}
	}
	r := t.ShrinkDims(bounds)
	if r.Err() != nil || len(keep) == len(dims) {
		return r, r.Err()
	}
	shape := r.Shape()
	out := make([]int, len(keep))
	for i, d := range keep {
		out[i] = shape[d]
	}
	r = r.Reshape(out...)
	return r, r.Err()
}
