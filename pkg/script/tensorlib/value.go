package tensorlib

import (
	"fmt"
	"slices"
	"sort"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// Tensor is the Starlark value of a tensor. It always holds a tensor without
// an error: every op's error is raised as a Starlark error at the call.
type Tensor struct {
	t  *tensor.Tensor
	id uint32 // identity hash: tensors are hashable by identity, like Python's
}

// NewTensor wraps a tensor (which must not carry an error).
func NewTensor(t *tensor.Tensor) *Tensor { return &Tensor{t: t, id: NextID()} }

// Tensor returns the wrapped tensor.
func (v *Tensor) Tensor() *tensor.Tensor { return v.t }

var (
	_ starlark.HasAttrs    = (*Tensor)(nil)
	_ starlark.HasSetField = (*Tensor)(nil)
	_ starlark.HasBinary   = (*Tensor)(nil)
	_ starlark.HasUnary    = (*Tensor)(nil)
	_ starlark.Mapping     = (*Tensor)(nil)
	_ starlark.Sequence    = (*Tensor)(nil)
)

func (v *Tensor) String() string {
	return fmt.Sprintf("<Tensor shape=%s dtype=%s>", tensor.FormatShape(v.t.Shape()), v.t.DType())
}
func (v *Tensor) Type() string { return "Tensor" }
func (v *Tensor) Freeze()      {}

// Truth is never consulted for conditions: the rewriter routes if/while/
// not/and/or through __truth__, which fails for tensors. Builtins that call
// Truth directly (any, all, filter-like code) see every tensor as true.
func (v *Tensor) Truth() starlark.Bool       { return starlark.True }
func (v *Tensor) Hash() (uint32, error)      { return v.id, nil }
func (v *Tensor) Len() int                   { return lenOf(v.t) }
func (v *Tensor) Iterate() starlark.Iterator { return &rowIter{t: v} }

func lenOf(t *tensor.Tensor) int {
	if t.Ndim() == 0 {
		return 0
	}
	return t.Shape()[0]
}

// rowIter iterates over the first dimension, like Python's iter(tensor).
type rowIter struct {
	t *Tensor
	i int
}

func (it *rowIter) Next(p *starlark.Value) bool {
	if it.i >= lenOf(it.t.t) {
		return false
	}
	r := it.t.t.Index([]tensor.IndexItem{tensor.IntIndex(it.i)})
	if r.Err() != nil {
		return false
	}
	*p = NewTensor(r)
	it.i++
	return true
}
func (it *rowIter) Done() {}

// Attr returns a property or a bound method.
func (v *Tensor) Attr(name string) (starlark.Value, error) {
	if p, ok := properties[name]; ok {
		return p(v)
	}
	if _, ok := methods[name]; ok {
		return starlark.NewBuiltin(name, callMethod).BindReceiver(v), nil
	}
	return nil, fmt.Errorf("%s", unknownAttr(name, v.AttrNames()))
}

// AttrNames lists the properties and methods, sorted.
func (v *Tensor) AttrNames() []string { return slices.Clone(tensorAttrNames) }

// tensorAttrNames are the properties and methods, sorted.
var tensorAttrNames = func() []string {
	var names []string
	for n := range properties {
		names = append(names, n)
	}
	for n := range methods {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}()

// SetField allows t.requires_grad = True.
func (v *Tensor) SetField(name string, val starlark.Value) error {
	switch name {
	case "requires_grad":
		switch b := val.(type) {
		case starlark.Bool:
			v.t.SetRequiresGrad(bool(b))
			return nil
		case starlark.NoneType:
			v.t.SetRequiresGrad(false)
			return nil
		}
		return fmt.Errorf("requires_grad must be a bool, got %s", val.Type())
	case "grad":
		switch g := val.(type) {
		case *Tensor:
			v.t.Grad = g.t
			return nil
		case starlark.NoneType:
			v.t.Grad = nil
			return nil
		}
		return fmt.Errorf("grad must be a Tensor or None, got %s", val.Type())
	}
	if _, ok := properties[name]; ok {
		return fmt.Errorf("cannot assign to Tensor.%s: it is read-only", name)
	}
	return fmt.Errorf("%s", unknownAttr(name, tensorAttrNames))
}

// properties are the attributes that are values, not methods.
var properties = map[string]func(v *Tensor) (starlark.Value, error){
	"shape":         func(v *Tensor) (starlark.Value, error) { return dimsTuple(v.t), nil },
	"dtype":         func(v *Tensor) (starlark.Value, error) { return DType{v.t.DType()}, nil },
	"ndim":          func(v *Tensor) (starlark.Value, error) { return starlark.MakeInt(v.t.Ndim()), nil },
	"T":             func(v *Tensor) (starlark.Value, error) { return Wrap(v.t.T()) },
	"requires_grad": func(v *Tensor) (starlark.Value, error) { return starlark.Bool(v.t.RequiresGrad), nil },
	"grad": func(v *Tensor) (starlark.Value, error) {
		if v.t.Grad == nil {
			return starlark.None, nil
		}
		return NewTensor(v.t.Grad), nil
	},
	"device": func(v *Tensor) (starlark.Value, error) { return starlark.String(DeviceName(v.t.Context())), nil },
}

// dimsTuple is a tensor's shape: ints, and a bound Variable for each
// dimension that depends on one (start_pos+1).
func dimsTuple(t *tensor.Tensor) starlark.Tuple {
	dims := t.Dims()
	out := make(starlark.Tuple, len(dims))
	for i, d := range dims {
		if d.IsSym() {
			out[i] = NewVar(d)
		} else {
			out[i] = starlark.MakeInt(d.C)
		}
	}
	return out
}

func shapeTuple(s []int) starlark.Tuple {
	t := make(starlark.Tuple, len(s))
	for i, d := range s {
		t[i] = starlark.MakeInt(d)
	}
	return t
}

// wrap turns an op result into a value, raising the op's error.
func Wrap(t *tensor.Tensor) (starlark.Value, error) {
	if err := t.Err(); err != nil {
		return nil, err
	}
	return NewTensor(t), nil
}

// Binary implements + - * / // % & | ^ << >> with tensors and Python
// numbers on either side.
func (v *Tensor) Binary(op syntax.Token, y starlark.Value, side starlark.Side) (starlark.Value, error) {
	o, err := operand(v.t, y)
	if err != nil {
		return nil, err
	}
	if o == nil {
		return nil, nil // not a tensor or number: Starlark reports the types
	}
	a, b := v.t, o
	if side == starlark.Right {
		a, b = o, v.t
	}
	switch op {
	case syntax.PLUS:
		return Wrap(a.Add(b))
	case syntax.MINUS:
		return Wrap(a.Sub(b))
	case syntax.STAR:
		return Wrap(a.Mul(b))
	case syntax.SLASH:
		return Wrap(a.Div(b))
	case syntax.SLASHSLASH:
		return Wrap(a.FloorDiv(b))
	case syntax.PERCENT:
		return Wrap(a.Mod(b))
	case syntax.AMP:
		return Wrap(a.And(b))
	case syntax.PIPE:
		return Wrap(a.Or(b))
	case syntax.CIRCUMFLEX:
		return Wrap(a.Xor(b))
	case syntax.LTLT, syntax.GTGT:
		if side == starlark.Right { // Starlark itself refuses 2 << t; this is for completeness
			return nil, fmt.Errorf("shift: shifting a Python number by a Tensor is not supported; use Tensor(n).lshift(t)")
		}
		r, err := shift(v.t, y, op == syntax.LTLT)
		if err != nil {
			return nil, err
		}
		return Wrap(r)
	}
	return nil, nil
}

// Unary implements -t, +t and ~t.
func (v *Tensor) Unary(op syntax.Token) (starlark.Value, error) {
	switch op {
	case syntax.MINUS:
		return Wrap(v.t.Neg())
	case syntax.PLUS:
		return v, nil
	case syntax.TILDE:
		return Wrap(bitwiseNot(v.t))
	}
	return nil, nil
}

// Get implements t[index] for ints, slices, None, Ellipsis, tensors and
// tuples of those.
func (v *Tensor) Get(k starlark.Value) (starlark.Value, bool, error) {
	if r, ok, err := tensorIndex(v.t, k); ok { // x[int tensor]: a host gather (datasets.go)
		return r, err == nil, err
	}
	if hasVar(k) {
		t, err := symbolicIndex(v.t, k)
		if err != nil {
			return nil, false, err
		}
		r, err := Wrap(t)
		return r, err == nil, err
	}
	items, err := indexItems(k)
	if err != nil {
		return nil, false, err
	}
	r, err := Wrap(v.t.Index(items))
	return r, err == nil, err
}

// DType is the Starlark value of a dtype (dtypes.float32, ...).
type DType struct{ dt ir.DType }

var (
	_ starlark.Comparable = DType{}
	_ starlark.HasAttrs   = DType{}
)

func (d DType) String() string        { return "dtypes." + d.dt.String() }
func (d DType) Type() string          { return "DType" }
func (d DType) Freeze()               {}
func (d DType) Truth() starlark.Bool  { return starlark.True }
func (d DType) Hash() (uint32, error) { return uint32(d.dt) + 1, nil }
func (d DType) CompareSameType(op syntax.Token, y starlark.Value, _ int) (bool, error) {
	switch op {
	case syntax.EQL:
		return d == y.(DType), nil
	case syntax.NEQ:
		return d != y.(DType), nil
	}
	return false, fmt.Errorf("dtypes are not ordered (%s %s %s)", d, op, y)
}

func (d DType) Attr(name string) (starlark.Value, error) {
	switch name {
	case "itemsize":
		return starlark.MakeInt(d.dt.Size()), nil
	case "name":
		return starlark.String(d.dt.String()), nil
	}
	return nil, nil
}
func (d DType) AttrNames() []string { return []string{"itemsize", "name"} }

// MethodNames, StaticNames and PropertyNames list the Tensor members (for
// the documentation check).
func MethodNames() []string   { return keys(methods) }
func StaticNames() []string   { return keys(statics) }
func PropertyNames() []string { return keys(properties) }

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// FormatSpecHint refuses f"{t:.3f}": a tensor has no format spec.
func (v *Tensor) FormatSpecHint(spec string) string {
	return fmt.Sprintf("a Tensor has no format spec (%q): format t.item() instead", spec)
}
