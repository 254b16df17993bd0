package tensorlib

import (
	"fmt"

	"go.starlark.net/starlark"

	"tgc/pkg/autograd"
	"tgc/pkg/script/pyrt"
	"tgc/pkg/tensor"
)

// The autograd methods of Tensor.

var autogradMethods = map[string]methodFunc{
	"backward":       backwardMethod,
	"gradient":       gradientMethod,
	"detach":         unaryMethod((*tensor.Tensor).Detach),
	"assign":         assignMethod,
	"requires_grad_": requiresGradMethod,
}

// backwardMethod is loss.backward(): gradients accumulate into .grad of
// every tensor that requires grad; it returns the loss.
func backwardMethod(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
	if err := c.NoArgs(); err != nil {
		return nil, err
	}
	if err := autograd.Backward(t); err != nil {
		return nil, err
	}
	return c.Self, nil
}

// gradientMethod is loss.gradient(*targets): the gradients as a list,
// without touching .grad.
func gradientMethod(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
	if len(c.Kwargs) > 0 {
		return nil, fmt.Errorf("gradient: unexpected keyword argument %s", c.Kwargs[0][0])
	}
	if len(c.Args) == 0 {
		return nil, fmt.Errorf("gradient: needs at least one target tensor")
	}
	targets, err := TensorList(c, c.Args)
	if err != nil {
		return nil, err
	}
	gs, err := autograd.Gradient(t, targets)
	if err != nil {
		return nil, err
	}
	out := make([]starlark.Value, len(gs))
	for i, g := range gs {
		out[i] = NewTensor(g)
	}
	return starlark.NewList(out), nil
}

// assignMethod is t.assign(x): t takes x's value (same shape and dtype; a
// number fills t). It returns t.
func assignMethod(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
	var x starlark.Value
	if err := c.Unpack("x", &x); err != nil {
		return nil, err
	}
	var v *tensor.Tensor
	if xt, ok := x.(*Tensor); ok {
		v = xt.t
	} else {
		f, err := ToFloat(x)
		if err != nil {
			return nil, fmt.Errorf("assign: got %s, want Tensor or number", x.Type())
		}
		v = t.Context().Full(t.Shape(), f, t.DType())
	}
	if r := t.Assign(v); r.Err() != nil {
		return nil, r.Err()
	}
	return c.Self, nil
}

// requiresGradMethod is t.requires_grad_(requires_grad=True); returns t.
func requiresGradMethod(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
	b := true
	if err := c.Unpack("requires_grad?", &b); err != nil {
		return nil, err
	}
	t.SetRequiresGrad(b)
	return c.Self, nil
}
