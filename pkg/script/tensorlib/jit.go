package tensorlib

import (
	"fmt"

	"go.starlark.net/starlark"

	"tgc/pkg/realize"
	"tgc/pkg/script/pyrt"
	"tgc/pkg/tensor"
)

// TinyJit(fn) wraps a function of tensors in realize.Jit: call 0 runs it,
// call 1 captures its kernel launches, later calls replay them on the new
// inputs without running the function. Its arguments must be Tensors; it
// returns a Tensor, a tuple or list of Tensors, or None, the same each call.

func TinyJit(c *pyrt.Call) (starlark.Value, error) {
	var fn starlark.Value
	if err := c.Unpack("fn", &fn); err != nil {
		return nil, err
	}
	f, ok := fn.(starlark.Callable)
	if !ok {
		return nil, fmt.Errorf("TinyJit: fn must be a function, got %s", fn.Type())
	}
	j := &jitValue{fn: f, id: NextID()}
	j.jit = realize.NewJit(Context(c), pyrt.DisplayName(f), j.run)
	return j, nil
}

type jitValue struct {
	fn     starlark.Callable
	jit    *realize.Jit
	thread *starlark.Thread
	self   starlark.Value // the instance of the call of a method, or nil
	kind   string         // what fn returned: "Tensor", "tuple", "list" or "NoneType"
	id     uint32
}

var (
	_ starlark.Callable = (*jitValue)(nil)
	_ pyrt.Binder       = (*jitValue)(nil)
)

func (j *jitValue) String() string        { return "<TinyJit " + j.Name() + ">" }
func (j *jitValue) Type() string          { return "TinyJit" }
func (j *jitValue) Name() string          { return pyrt.DisplayName(j.fn) }
func (j *jitValue) Freeze()               {}
func (j *jitValue) Truth() starlark.Bool  { return starlark.True }
func (j *jitValue) Hash() (uint32, error) { return j.id, nil }

// run is the Go side of a call of fn: the Starlark function itself.
func (j *jitValue) run(inputs []*tensor.Tensor) ([]*tensor.Tensor, error) {
	var args starlark.Tuple
	if j.self != nil {
		args = append(args, j.self)
	}
	for _, x := range inputs {
		if v, ok := x.BoundVar(); ok {
			args = append(args, NewVar(v))
			continue
		}
		args = append(args, NewTensor(x))
	}
	v, err := starlark.Call(j.thread, j.fn, args, nil)
	if err != nil {
		return nil, err
	}
	var outs []*tensor.Tensor
	kind := v.Type()
	switch x := v.(type) {
	case *Tensor:
		outs = []*tensor.Tensor{x.t}
	case starlark.NoneType:
	case starlark.Tuple, *starlark.List:
		for i, e := range SeqElems(x) {
			t, ok := e.(*Tensor)
			if !ok {
				return nil, fmt.Errorf("TinyJit %s: returned %s with a %s at index %d; it may return a Tensor, a tuple or list of Tensors, or None", j.Name(), kind, e.Type(), i)
			}
			outs = append(outs, t.t)
		}
	default:
		return nil, fmt.Errorf("TinyJit %s: returned a %s; it may return a Tensor, a tuple or list of Tensors, or None", j.Name(), kind)
	}
	if j.kind != "" && j.kind != kind {
		return nil, fmt.Errorf("TinyJit %s: returned a %s, but a %s before", j.Name(), kind, j.kind)
	}
	j.kind = kind
	return outs, nil
}

// Bind makes @TinyJit on a method work: the instance is passed to the
// function but is not an input of the capture (as tinygrad's TinyJit.__get__;
// the capture is shared by every instance).
func (j *jitValue) Bind(self starlark.Value) starlark.Value { return &boundJit{j: j, self: self} }

type boundJit struct {
	j    *jitValue
	self starlark.Value
}

func (b *boundJit) String() string        { return "<bound TinyJit " + b.j.Name() + ">" }
func (b *boundJit) Type() string          { return "TinyJit" }
func (b *boundJit) Name() string          { return b.j.Name() }
func (b *boundJit) Freeze()               {}
func (b *boundJit) Truth() starlark.Bool  { return starlark.True }
func (b *boundJit) Hash() (uint32, error) { return b.j.id, nil }
func (b *boundJit) CallInternal(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	prev := b.j.self
	b.j.self = b.self
	defer func() { b.j.self = prev }()
	return b.j.CallInternal(th, args, kwargs)
}

func (j *jitValue) CallInternal(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (v starlark.Value, err error) {
	c := &pyrt.Call{Thread: th, Name: j.Name(), Args: args, Kwargs: kwargs}
	defer pyrt.Recover(c, &err)
	if len(kwargs) > 0 {
		return nil, fmt.Errorf("TinyJit %s: keyword arguments are not supported (pass the tensors positionally)", j.Name())
	}
	inputs := make([]*tensor.Tensor, len(args))
	for i, a := range args {
		if v, ok := a.(Var); ok && v.bound {
			inputs[i] = Context(c).VarTensor(v.s)
			continue
		}
		t, ok := a.(*Tensor)
		if !ok {
			return nil, fmt.Errorf("TinyJit %s: argument %d is a %s; a captured function takes Tensors and bound Variables only (other values would be frozen at capture)", j.Name(), i, a.Type())
		}
		inputs[i] = t.t
	}
	prev := j.thread
	j.thread = th
	defer func() { j.thread = prev }()
	outs, err := j.jit.Call(inputs...)
	if err != nil {
		return nil, err
	}
	vals := make([]starlark.Value, len(outs))
	for i, o := range outs {
		vals[i] = NewTensor(o)
	}
	switch j.kind {
	case "Tensor":
		return vals[0], nil
	case "tuple":
		return starlark.Tuple(vals), nil
	case "list":
		return starlark.NewList(vals), nil
	}
	return starlark.None, nil
}
