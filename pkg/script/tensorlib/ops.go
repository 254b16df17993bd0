package tensorlib

import (
	"fmt"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"tgc/pkg/ir"
	"tgc/pkg/script/pyrt"
	"tgc/pkg/tensor"
)

// The builtins behind Python syntax that Starlark cannot express through
// its Value interfaces (the frontend routes comparisons, slices and
// conditions to them), bool(), and the dtypes module.

// ErrTruth is the message for a tensor used as a condition.
const ErrTruth = "the truth value of a Tensor is ambiguous: compare its value instead, e.g. t.item() > 0 or (t > 0).sum().item() > 0"

// Bool is bool(x), failing for tensors like Python's.
func Bool(c *pyrt.Call) (starlark.Value, error) {
	var x starlark.Value = starlark.False
	if err := c.Unpack("x?", &x); err != nil {
		return nil, err
	}
	if _, ok := x.(*Tensor); ok {
		return nil, fmt.Errorf("bool: %s", ErrTruth)
	}
	return x.Truth(), nil
}

// Truth guards conditions: it returns its argument, or fails for tensors.
func Truth(c *pyrt.Call) (starlark.Value, error) {
	if len(c.Args) != 1 {
		return nil, fmt.Errorf("%s: want 1 argument", c.Name)
	}
	if _, ok := c.Args[0].(*Tensor); ok {
		return nil, fmt.Errorf("%s", ErrTruth)
	}
	return c.Args[0], nil
}

var cmpOps = map[string]syntax.Token{
	"<": syntax.LT, "<=": syntax.LE, ">": syntax.GT, ">=": syntax.GE, "==": syntax.EQL, "!=": syntax.NEQ,
}

// Cmp implements a comparison: a bool tensor when either side is a tensor,
// else Starlark's own comparison.
func Cmp(c *pyrt.Call) (starlark.Value, error) {
	if len(c.Args) != 3 {
		return nil, fmt.Errorf("%s: want 3 arguments", c.Name)
	}
	opname, _ := starlark.AsString(c.Args[0])
	op, ok := cmpOps[opname]
	if !ok && opname != "is" && opname != "is not" {
		return nil, fmt.Errorf("%s: unknown comparison %q", c.Name, opname)
	}
	x, y := c.Args[1], c.Args[2]
	switch opname {
	case "is":
		return starlark.Bool(pyrt.Identical(x, y)), nil
	case "is not":
		return starlark.Bool(!pyrt.Identical(x, y)), nil
	}
	xt, xok := x.(*Tensor)
	yt, yok := y.(*Tensor)
	if !xok && !yok {
		b, err := starlark.Compare(op, x, y)
		if err != nil {
			return nil, err
		}
		return starlark.Bool(b), nil
	}
	var a, b *tensor.Tensor
	var err error
	if xok {
		a = xt.t
		b, err = operand(a, y)
	} else {
		b = yt.t
		a, err = operand(b, x)
	}
	if err != nil {
		return nil, err
	}
	if a == nil || b == nil {
		// Tensor vs. a non-number: Python's == falls back to identity.
		switch op {
		case syntax.EQL:
			return starlark.False, nil
		case syntax.NEQ:
			return starlark.True, nil
		}
		return nil, fmt.Errorf("cannot compare %s %s %s", x.Type(), opname, y.Type())
	}
	switch op {
	case syntax.LT:
		return Wrap(a.Lt(b))
	case syntax.LE:
		return Wrap(a.Le(b))
	case syntax.GT:
		return Wrap(a.Gt(b))
	case syntax.GE:
		return Wrap(a.Ge(b))
	case syntax.EQL:
		return Wrap(a.Eq(b))
	default:
		return Wrap(a.Ne(b))
	}
}

// GetSlice implements x[lo:hi:step] for tensors and Starlark sequences.
func GetSlice(c *pyrt.Call) (starlark.Value, error) {
	if len(c.Args) != 4 {
		return nil, fmt.Errorf("%s: want 4 arguments", c.Name)
	}
	x := c.Args[0]
	s := pyrt.Slice{Start: c.Args[1], Stop: c.Args[2], Step: c.Args[3]}
	if t, ok := x.(*Tensor); ok {
		if hasVar(s) {
			r, err := symbolicIndex(t.t, s)
			if err != nil {
				return nil, err
			}
			return Wrap(r)
		}
		items, err := indexItems(s)
		if err != nil {
			return nil, err
		}
		return Wrap(t.t.Index(items))
	}
	return pyrt.SliceSequence(x, s)
}

// DTypes is the module dtypes.
var DTypes = func() *pyrt.Module {
	m := starlark.StringDict{}
	for _, dt := range ir.AllDTypes {
		m[dt.String()] = DType{dt}
	}
	for _, alias := range ir.DTypeAliases() {
		dt, _ := ir.ParseDType(alias)
		m[alias] = DType{dt}
	}
	m["is_float"] = pyrt.Builtin("is_float", func(c *pyrt.Call) (starlark.Value, error) {
		var d DTypeArg
		if err := c.Unpack("dtype", &d); err != nil {
			return nil, err
		}
		return starlark.Bool(d.dt.IsFloat()), nil
	})
	m["is_int"] = pyrt.Builtin("is_int", func(c *pyrt.Call) (starlark.Value, error) {
		var d DTypeArg
		if err := c.Unpack("dtype", &d); err != nil {
			return nil, err
		}
		return starlark.Bool(d.dt.IsInt()), nil
	})
	return pyrt.NewModule("dtypes", m)
}()

// unknownAttr is the message for a missing Tensor member: a method unless
// the suggestion is a property such as shape.
func unknownAttr(name string, names []string) string {
	what := "method"
	if _, isProp := properties[pyrt.Nearest(name, names)]; isProp {
		what = "attribute"
	}
	return pyrt.UnknownAttr("Tensor", what, name, names)
}
