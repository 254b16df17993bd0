package nnlib

import (
	"fmt"

	"go.starlark.net/starlark"

	"tgc/pkg/nn"
	"tgc/pkg/script/pyrt"
	"tgc/pkg/script/tensorlib"
	"tgc/pkg/tensor"
)

// ---- optimizers ----

// optimizer is an nn.optim optimizer as a Starlark value.
type optimizer struct {
	kind string
	opt  nn.Optimizer
	lr   *tensorlib.Tensor
}

func (o *optimizer) String() string        { return "<nn.optim." + o.kind + ">" }
func (o *optimizer) Type() string          { return o.kind }
func (o *optimizer) Freeze()               {}
func (o *optimizer) Truth() starlark.Bool  { return starlark.True }
func (o *optimizer) Hash() (uint32, error) { return o.lr.Hash() }
func (o *optimizer) AttrNames() []string {
	return []string{"lr", "params", "schedule_step", "step", "zero_grad"}
}

func (o *optimizer) Attr(name string) (starlark.Value, error) {
	switch name {
	case "lr":
		return o.lr, nil
	case "params":
		ps := o.opt.Params()
		out := make([]starlark.Value, len(ps))
		for i, p := range ps {
			out[i] = tensorlib.NewTensor(p)
		}
		return starlark.NewList(out), nil
	case "zero_grad":
		return pyrt.Builtin("zero_grad", func(c *pyrt.Call) (starlark.Value, error) {
			if err := c.NoArgs(); err != nil {
				return nil, err
			}
			o.opt.ZeroGrad()
			return starlark.None, nil
		}), nil
	case "schedule_step":
		// tinygrad's loss.realize(*opt.schedule_step()): the step runs when
		// realize is called with it, computing the loss in its schedule.
		return pyrt.Builtin("schedule_step", func(c *pyrt.Call) (starlark.Value, error) {
			if err := c.NoArgs(); err != nil {
				return nil, err
			}
			return starlark.NewList([]starlark.Value{&pendingStep{o: o, id: tensorlib.NextID()}}), nil
		}), nil
	case "step":
		return pyrt.Builtin("step", func(c *pyrt.Call) (starlark.Value, error) {
			if len(c.Kwargs) > 0 {
				return nil, fmt.Errorf("step: unexpected keyword argument %s", c.Kwargs[0][0])
			}
			// step(*tensors): also realize these (the loss) in the
			// step's schedule, sharing its forward pass.
			extra, err := tensorlib.TensorList(c, c.Args)
			if err != nil {
				return nil, err
			}
			if tensorlib.Tracing(tensorlib.Context(c)) {
				tensorlib.WarnTraceRead(c)
			}
			return starlark.None, o.opt.Step(extra...)
		}), nil
	}
	return nil, fmt.Errorf("%s", pyrt.UnknownAttr("nn.optim."+o.kind, "attribute", name, o.AttrNames()))
}

// paramList reads the params argument: a list or tuple of Tensors.
func paramList(name string, v starlark.Value) ([]*tensor.Tensor, error) {
	if !tensorlib.IsSeq(v) {
		return nil, fmt.Errorf("%s: params must be a list of Tensors (nn.state.get_parameters(model)), got %s", name, v.Type())
	}
	var out []*tensor.Tensor
	for i, x := range tensorlib.SeqElems(v) {
		t, ok := x.(*tensorlib.Tensor)
		if !ok {
			return nil, fmt.Errorf("%s: params[%d] is %s, want Tensor", name, i, x.Type())
		}
		out = append(out, t.Tensor())
	}
	return out, nil
}

// optimFn binds nn.optim.SGD/Adam/AdamW. As in tinygrad, a parameter whose
// requires_grad was never set becomes trainable; one set to False (like
// BatchNorm's running statistics) is a buffer the step realizes.
func optimFn(kind string) pyrt.Func {
	return func(c *pyrt.Call) (starlark.Value, error) {
		var params starlark.Value
		lr, b1, b2, eps, wd, momentum := tensorlib.FloatArg(0.001), tensorlib.FloatArg(0.9), tensorlib.FloatArg(0.999), tensorlib.FloatArg(1e-8), tensorlib.FloatArg(0), tensorlib.FloatArg(0)
		nesterov := false
		var err error
		switch kind {
		case "SGD":
			err = c.Unpack("params", &params, "lr?", &lr, "momentum?", &momentum, "weight_decay?", &wd, "nesterov?", &nesterov)
		case "Adam":
			err = c.Unpack("params", &params, "lr?", &lr, "b1?", &b1, "b2?", &b2, "eps?", &eps)
		case "AdamW":
			wd = 0.01
			err = c.Unpack("params", &params, "lr?", &lr, "b1?", &b1, "b2?", &b2, "eps?", &eps, "weight_decay?", &wd)
		}
		if err != nil {
			return nil, err
		}
		ps, err := paramList(kind, params)
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			if !p.RequiresGradSet() {
				p.SetRequiresGrad(true)
			}
		}
		var opt nn.Optimizer
		switch kind {
		case "SGD":
			opt, err = nn.NewSGD(ps, float64(lr), float64(momentum), float64(wd), nesterov)
		default:
			opt, err = nn.NewAdamW(ps, float64(lr), float64(b1), float64(b2), float64(eps), float64(wd))
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %v", kind, err)
		}
		return &optimizer{kind: kind, opt: opt, lr: tensorlib.NewTensor(opt.LR())}, nil
	}
}

// pendingStep is an optimizer step that runs when a tensor is realized
// with it (tensorlib.StepRealizer).
type pendingStep struct {
	o    *optimizer
	done bool
	id   uint32
}

func (p *pendingStep) String() string        { return "<step of nn.optim." + p.o.kind + ">" }
func (p *pendingStep) Type() string          { return "optimizer step" }
func (p *pendingStep) Freeze()               {}
func (p *pendingStep) Truth() starlark.Bool  { return starlark.True }
func (p *pendingStep) Hash() (uint32, error) { return p.id, nil }

func (p *pendingStep) StepWith(extra []*tensor.Tensor) error {
	if p.done {
		return fmt.Errorf("this schedule_step() was realized already: call opt.schedule_step() for each step")
	}
	p.done = true
	return p.o.opt.Step(extra...)
}
