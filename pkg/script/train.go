package script

import (
	"fmt"
	"sort"

	"go.starlark.net/starlark"

	"tgc/pkg/autograd"
	"tgc/pkg/nn"
	"tgc/pkg/tensor"
)

// Training in .tg: the autograd methods of Tensor, the nn layers as
// callable objects with their tensors as attributes, the optimizers, and
// load_state_dict.

var trainMethods = map[string]methodFunc{
	"backward":       backwardMethod,
	"gradient":       gradientMethod,
	"detach":         unaryMethod((*tensor.Tensor).Detach),
	"assign":         assignMethod,
	"requires_grad_": requiresGradMethod,
}

func init() {
	for k, v := range trainMethods {
		methods[k] = v
	}
}

// backwardMethod is loss.backward(): gradients accumulate into .grad of
// every tensor that requires grad; it returns the loss.
func backwardMethod(c *call, t *tensor.Tensor) (starlark.Value, error) {
	if err := c.noArgs(); err != nil {
		return nil, err
	}
	if err := autograd.Backward(t); err != nil {
		return nil, err
	}
	return c.self, nil
}

// gradientMethod is loss.gradient(*targets): the gradients as a list,
// without touching .grad.
func gradientMethod(c *call, t *tensor.Tensor) (starlark.Value, error) {
	if len(c.kwargs) > 0 {
		return nil, fmt.Errorf("gradient: unexpected keyword argument %s", c.kwargs[0][0])
	}
	if len(c.args) == 0 {
		return nil, fmt.Errorf("gradient: needs at least one target tensor")
	}
	targets, err := tensorList(c, c.args)
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
func assignMethod(c *call, t *tensor.Tensor) (starlark.Value, error) {
	var x starlark.Value
	if err := c.unpack("x", &x); err != nil {
		return nil, err
	}
	var v *tensor.Tensor
	if xt, ok := x.(*Tensor); ok {
		v = xt.t
	} else {
		f, err := toFloat(x)
		if err != nil {
			return nil, fmt.Errorf("assign: got %s, want Tensor or number", x.Type())
		}
		v = tensor.Full(t.Shape(), f, t.DType())
	}
	if r := t.Assign(v); r.Err() != nil {
		return nil, r.Err()
	}
	return c.self, nil
}

// requiresGradMethod is t.requires_grad_(requires_grad=True); returns t.
func requiresGradMethod(c *call, t *tensor.Tensor) (starlark.Value, error) {
	b := true
	if err := c.unpack("requires_grad?", &b); err != nil {
		return nil, err
	}
	t.SetRequiresGrad(b)
	return c.self, nil
}

// ---- layers ----

// layerField is one tensor attribute of a layer.
type layerField struct {
	name string
	ptr  **tensor.Tensor
}

// layer is an nn layer as a Starlark value: callable, with its tensors as
// attributes (settable, e.g. to load weights).
type layer struct {
	kind    string
	fields  []layerField
	forward func(x *tensor.Tensor) *tensor.Tensor
	wrapped map[*tensor.Tensor]*Tensor // one Starlark value per tensor
	id      uint32
}

var (
	_ starlark.Callable    = (*layer)(nil)
	_ starlark.HasSetField = (*layer)(nil)
)

func newLayer(kind string, forward func(*tensor.Tensor) *tensor.Tensor, fields ...layerField) *layer {
	return &layer{kind: kind, fields: fields, forward: forward, wrapped: map[*tensor.Tensor]*Tensor{}, id: tensorIDs.Add(1)}
}

func (l *layer) String() string        { return "<nn." + l.kind + ">" }
func (l *layer) Type() string          { return l.kind }
func (l *layer) Name() string          { return l.kind }
func (l *layer) Freeze()               {}
func (l *layer) Truth() starlark.Bool  { return starlark.True }
func (l *layer) Hash() (uint32, error) { return l.id, nil }

func (l *layer) AttrNames() []string {
	names := make([]string, len(l.fields))
	for i, f := range l.fields {
		names[i] = f.name
	}
	sort.Strings(names)
	return names
}

// value wraps a field's tensor, the same Starlark value each time.
func (l *layer) value(t *tensor.Tensor) starlark.Value {
	if t == nil {
		return starlark.None
	}
	if v, ok := l.wrapped[t]; ok {
		return v
	}
	v := NewTensor(t)
	l.wrapped[t] = v
	return v
}

func (l *layer) Attr(name string) (starlark.Value, error) {
	for _, f := range l.fields {
		if f.name == name {
			return l.value(*f.ptr), nil
		}
	}
	return nil, fmt.Errorf("%s", unknownAttr("nn."+l.kind, name, l.AttrNames()))
}

func (l *layer) SetField(name string, v starlark.Value) error {
	for _, f := range l.fields {
		if f.name != name {
			continue
		}
		switch x := v.(type) {
		case *Tensor:
			*f.ptr = x.t
			l.wrapped[x.t] = x
			return nil
		case starlark.NoneType:
			*f.ptr = nil
			return nil
		}
		return fmt.Errorf("nn.%s.%s must be a Tensor or None, got %s", l.kind, name, v.Type())
	}
	return fmt.Errorf("%s", unknownAttr("nn."+l.kind, name, l.AttrNames()))
}

func (l *layer) CallInternal(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (v starlark.Value, err error) {
	c := &call{in: interpOf(th), name: l.kind, args: args, kwargs: kwargs}
	defer recoverPanic(c, &err)
	var x tensorArg
	if err := c.unpack("x", &x); err != nil {
		return nil, err
	}
	if x.t == nil {
		return nil, fmt.Errorf("%s: the input must be a Tensor", l.kind)
	}
	return wrap(l.forward(x.t))
}

// tensors lists the layer's non-nil tensors in attribute-name order.
func (l *layer) tensors() ([]string, []starlark.Value) {
	var names []string
	var vals []starlark.Value
	for _, n := range l.AttrNames() {
		v, _ := l.Attr(n)
		if v != starlark.None {
			names = append(names, n)
			vals = append(vals, v)
		}
	}
	return names, vals
}

func linearFn(c *call) (starlark.Value, error) {
	var in, out intArg
	bias := true
	if err := c.unpack("in_features", &in, "out_features", &out, "bias?", &bias); err != nil {
		return nil, err
	}
	if in <= 0 || out <= 0 {
		return nil, fmt.Errorf("Linear: in_features and out_features must be positive, got %d and %d", in, out)
	}
	l := nn.NewLinear(int(in), int(out), bias)
	return newLayer("Linear", l.Forward, layerField{"weight", &l.Weight}, layerField{"bias", &l.Bias}), nil
}

func conv2dFn(c *call) (starlark.Value, error) {
	var in, out intArg
	var kernel pairArg
	stride, padding, dilation := pairArg{[]int{1}}, pairArg{[]int{0}}, pairArg{[]int{1}}
	groups := intArg(1)
	bias := true
	if err := c.unpack("in_channels", &in, "out_channels", &out, "kernel_size", &kernel, "stride?", &stride,
		"padding?", &padding, "dilation?", &dilation, "groups?", &groups, "bias?", &bias); err != nil {
		return nil, err
	}
	l, err := nn.NewConv2d(int(in), int(out), kernel.v, tensor.ConvOpts{Groups: int(groups), Stride: stride.v, Padding: padding.v, Dilation: dilation.v}, bias)
	if err != nil {
		return nil, err
	}
	return newLayer("Conv2d", l.Forward, layerField{"weight", &l.Weight}, layerField{"bias", &l.Bias}), nil
}

func batchNormFn(c *call) (starlark.Value, error) {
	var sz intArg
	eps, momentum := floatArg(1e-5), floatArg(0.1)
	affine, track := true, true
	if err := c.unpack("sz", &sz, "eps?", &eps, "affine?", &affine, "track_running_stats?", &track, "momentum?", &momentum); err != nil {
		return nil, err
	}
	if sz <= 0 {
		return nil, fmt.Errorf("%s: sz must be positive, got %d", c.name, sz)
	}
	b := nn.NewBatchNormWith(int(sz), float64(eps), float64(momentum), affine, track)
	return newLayer("BatchNorm", b.Forward, layerField{"weight", &b.Weight}, layerField{"bias", &b.Bias},
		layerField{"running_mean", &b.RunningMean}, layerField{"running_var", &b.RunningVar},
		layerField{"num_batches_tracked", &b.NumBatchesTracked}), nil
}

func layerNormFn(c *call) (starlark.Value, error) {
	var shape pairArg
	eps := floatArg(1e-5)
	affine := true
	if err := c.unpack("normalized_shape", &shape, "eps?", &eps, "elementwise_affine?", &affine); err != nil {
		return nil, err
	}
	l := nn.NewLayerNorm(shape.v, float64(eps), affine)
	return newLayer("LayerNorm", l.Forward, layerField{"weight", &l.Weight}, layerField{"bias", &l.Bias}), nil
}

func rmsNormFn(c *call) (starlark.Value, error) {
	var dim intArg
	eps := floatArg(1e-6)
	affine := true
	if err := c.unpack("dim", &dim, "eps?", &eps, "elementwise_affine?", &affine); err != nil {
		return nil, err
	}
	r := nn.NewRMSNorm(int(dim), float64(eps), affine)
	return newLayer("RMSNorm", r.Forward, layerField{"weight", &r.Weight}), nil
}

func embeddingFn(c *call) (starlark.Value, error) {
	var vocab, size intArg
	if err := c.unpack("vocab_size", &vocab, "embed_size", &size); err != nil {
		return nil, err
	}
	if vocab <= 0 || size <= 0 {
		return nil, fmt.Errorf("Embedding: vocab_size and embed_size must be positive, got %d and %d", vocab, size)
	}
	e := nn.NewEmbedding(int(vocab), int(size))
	return newLayer("Embedding", e.Forward, layerField{"weight", &e.Weight}), nil
}

// ---- optimizers ----

// optimizer is an nn.optim optimizer as a Starlark value.
type optimizer struct {
	kind string
	opt  nn.Optimizer
	lr   *Tensor
}

func (o *optimizer) String() string        { return "<nn.optim." + o.kind + ">" }
func (o *optimizer) Type() string          { return o.kind }
func (o *optimizer) Freeze()               {}
func (o *optimizer) Truth() starlark.Bool  { return starlark.True }
func (o *optimizer) Hash() (uint32, error) { return o.lr.id, nil }
func (o *optimizer) AttrNames() []string   { return []string{"lr", "params", "step", "zero_grad"} }

func (o *optimizer) Attr(name string) (starlark.Value, error) {
	switch name {
	case "lr":
		return o.lr, nil
	case "params":
		ps := o.opt.Params()
		out := make([]starlark.Value, len(ps))
		for i, p := range ps {
			out[i] = NewTensor(p)
		}
		return starlark.NewList(out), nil
	case "zero_grad":
		return builtin("zero_grad", func(c *call) (starlark.Value, error) {
			if err := c.noArgs(); err != nil {
				return nil, err
			}
			o.opt.ZeroGrad()
			return starlark.None, nil
		}), nil
	case "step":
		return builtin("step", func(c *call) (starlark.Value, error) {
			if err := c.noArgs(); err != nil {
				return nil, err
			}
			if tracing() {
				c.in.warnTraceRead()
			}
			return starlark.None, o.opt.Step()
		}), nil
	}
	return nil, fmt.Errorf("%s", unknownAttr("nn.optim."+o.kind, name, o.AttrNames()))
}

// paramList reads the params argument: a list or tuple of Tensors.
func paramList(name string, v starlark.Value) ([]*tensor.Tensor, error) {
	if !isSeq(v) {
		return nil, fmt.Errorf("%s: params must be a list of Tensors (nn.state.get_parameters(model)), got %s", name, v.Type())
	}
	var out []*tensor.Tensor
	for i, x := range seqElems(v) {
		t, ok := x.(*Tensor)
		if !ok {
			return nil, fmt.Errorf("%s: params[%d] is %s, want Tensor", name, i, x.Type())
		}
		out = append(out, t.t)
	}
	return out, nil
}

// optimFn binds nn.optim.SGD/Adam/AdamW. As in tinygrad, a parameter whose
// requires_grad was never set becomes trainable; one set to False (like
// BatchNorm's running statistics) is a buffer the step realizes.
func optimFn(kind string) builtinFunc {
	return func(c *call) (starlark.Value, error) {
		var params starlark.Value
		lr, b1, b2, eps, wd, momentum := floatArg(0.001), floatArg(0.9), floatArg(0.999), floatArg(1e-8), floatArg(0), floatArg(0)
		nesterov := false
		var err error
		switch kind {
		case "SGD":
			err = c.unpack("params", &params, "lr?", &lr, "momentum?", &momentum, "weight_decay?", &wd, "nesterov?", &nesterov)
		case "Adam":
			err = c.unpack("params", &params, "lr?", &lr, "b1?", &b1, "b2?", &b2, "eps?", &eps)
		case "AdamW":
			wd = 0.01
			err = c.unpack("params", &params, "lr?", &lr, "b1?", &b1, "b2?", &b2, "eps?", &eps, "weight_decay?", &wd)
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
		return &optimizer{kind: kind, opt: opt, lr: NewTensor(opt.LR())}, nil
	}
}

// loadStateDict is nn.state.load_state_dict(model, state_dict, strict=True):
// every tensor of the model takes the value of the same name (shapes must
// match; dtypes are converted).
func loadStateDict(c *call) (starlark.Value, error) {
	var model starlark.Value
	var sd *starlark.Dict
	strict := true
	if err := c.unpack("model", &model, "state_dict", &sd, "strict?", &strict); err != nil {
		return nil, err
	}
	own := map[string]*Tensor{}
	if err := stateDict(model, "", own, map[starlark.Value]bool{}, 0); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(own))
	for n := range own {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		v, found, err := sd.Get(starlark.String(n))
		if err != nil {
			return nil, err
		}
		if !found {
			if strict {
				return nil, fmt.Errorf("load_state_dict: %q is missing from the state dict", n)
			}
			continue
		}
		src, ok := v.(*Tensor)
		if !ok {
			return nil, fmt.Errorf("load_state_dict: %q is %s, want Tensor", n, v.Type())
		}
		dst := own[n].t
		if fmt.Sprint(src.t.Shape()) != fmt.Sprint(dst.Shape()) {
			return nil, fmt.Errorf("load_state_dict: %q has shape %s, the model's tensor has shape %s", n, tensor.FormatShape(src.t.Shape()), tensor.FormatShape(dst.Shape()))
		}
		if r := dst.Assign(src.t.Cast(dst.DType())); r.Err() != nil {
			return nil, fmt.Errorf("load_state_dict: %q: %v", n, r.Err())
		}
	}
	return starlark.None, nil
}

func init() {
	m := nnModule.members
	m["Linear"] = builtin("Linear", linearFn)
	m["Conv2d"] = builtin("Conv2d", conv2dFn)
	m["BatchNorm"] = builtin("BatchNorm", batchNormFn)
	m["BatchNorm2d"] = builtin("BatchNorm2d", batchNormFn)
	m["LayerNorm"] = builtin("LayerNorm", layerNormFn)
	m["RMSNorm"] = builtin("RMSNorm", rmsNormFn)
	m["Embedding"] = builtin("Embedding", embeddingFn)
	m["optim"] = &namespace{name: "nn.optim", members: starlark.StringDict{
		"SGD":   builtin("SGD", optimFn("SGD")),
		"Adam":  builtin("Adam", optimFn("Adam")),
		"AdamW": builtin("AdamW", optimFn("AdamW")),
	}}
	m["state"].(*namespace).members["load_state_dict"] = builtin("load_state_dict", loadStateDict)
}
