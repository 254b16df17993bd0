package nnlib

import (
	"fmt"
	"sort"

	"go.starlark.net/starlark"

	"tgc/pkg/nn"
	"tgc/pkg/script/pyrt"
	"tgc/pkg/script/tensorlib"
	"tgc/pkg/tensor"
)

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
	wrapped map[*tensor.Tensor]*tensorlib.Tensor // one Starlark value per tensor
	id      uint32
}

var (
	_ starlark.Callable    = (*layer)(nil)
	_ starlark.HasSetField = (*layer)(nil)
)

func newLayer(kind string, forward func(*tensor.Tensor) *tensor.Tensor, fields ...layerField) *layer {
	return &layer{kind: kind, fields: fields, forward: forward, wrapped: map[*tensor.Tensor]*tensorlib.Tensor{}, id: tensorlib.NextID()}
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
	v := tensorlib.NewTensor(t)
	l.wrapped[t] = v
	return v
}

func (l *layer) Attr(name string) (starlark.Value, error) {
	for _, f := range l.fields {
		if f.name == name {
			return l.value(*f.ptr), nil
		}
	}
	return nil, fmt.Errorf("%s", pyrt.UnknownAttr("nn."+l.kind, "attribute", name, l.AttrNames()))
}

func (l *layer) SetField(name string, v starlark.Value) error {
	for _, f := range l.fields {
		if f.name != name {
			continue
		}
		switch x := v.(type) {
		case *tensorlib.Tensor:
			*f.ptr = x.Tensor()
			l.wrapped[x.Tensor()] = x
			return nil
		case starlark.NoneType:
			*f.ptr = nil
			return nil
		}
		return fmt.Errorf("nn.%s.%s must be a Tensor or None, got %s", l.kind, name, v.Type())
	}
	return fmt.Errorf("%s", pyrt.UnknownAttr("nn."+l.kind, "attribute", name, l.AttrNames()))
}

func (l *layer) CallInternal(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (v starlark.Value, err error) {
	c := &pyrt.Call{Thread: th, Name: l.kind, Args: args, Kwargs: kwargs}
	defer pyrt.Recover(c, &err)
	var x tensorlib.TensorArg
	if err := c.Unpack("x", &x); err != nil {
		return nil, err
	}
	if x.Tensor() == nil {
		return nil, fmt.Errorf("%s: the input must be a Tensor", l.kind)
	}
	return tensorlib.Wrap(l.forward(x.Tensor()))
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

func linearFn(c *pyrt.Call) (starlark.Value, error) {
	var in, out tensorlib.IntArg
	bias := true
	if err := c.Unpack("in_features", &in, "out_features", &out, "bias?", &bias); err != nil {
		return nil, err
	}
	if in <= 0 || out <= 0 {
		return nil, fmt.Errorf("Linear: in_features and out_features must be positive, got %d and %d", in, out)
	}
	l := nn.NewLinear(tensorlib.Context(c), int(in), int(out), bias)
	return newLayer("Linear", l.Forward, layerField{"weight", &l.Weight}, layerField{"bias", &l.Bias}), nil
}

func conv2dFn(c *pyrt.Call) (starlark.Value, error) {
	var in, out tensorlib.IntArg
	var kernel tensorlib.PairArg
	stride, padding, dilation := tensorlib.Pair(1), tensorlib.Pair(0), tensorlib.Pair(1)
	groups := tensorlib.IntArg(1)
	bias := true
	if err := c.Unpack("in_channels", &in, "out_channels", &out, "kernel_size", &kernel, "stride?", &stride,
		"padding?", &padding, "dilation?", &dilation, "groups?", &groups, "bias?", &bias); err != nil {
		return nil, err
	}
	l, err := nn.NewConv2d(tensorlib.Context(c), int(in), int(out), kernel.Ints(), tensor.ConvOpts{Groups: int(groups), Stride: stride.Ints(), Padding: padding.Ints(), Dilation: dilation.Ints()}, bias)
	if err != nil {
		return nil, err
	}
	return newLayer("Conv2d", l.Forward, layerField{"weight", &l.Weight}, layerField{"bias", &l.Bias}), nil
}

func batchNormFn(c *pyrt.Call) (starlark.Value, error) {
	var sz tensorlib.IntArg
	eps, momentum := tensorlib.FloatArg(1e-5), tensorlib.FloatArg(0.1)
	affine, track := true, true
	if err := c.Unpack("sz", &sz, "eps?", &eps, "affine?", &affine, "track_running_stats?", &track, "momentum?", &momentum); err != nil {
		return nil, err
	}
	if sz <= 0 {
		return nil, fmt.Errorf("%s: sz must be positive, got %d", c.Name, sz)
	}
	b := nn.NewBatchNormWith(tensorlib.Context(c), int(sz), float64(eps), float64(momentum), affine, track)
	return newLayer("BatchNorm", b.Forward, layerField{"weight", &b.Weight}, layerField{"bias", &b.Bias},
		layerField{"running_mean", &b.RunningMean}, layerField{"running_var", &b.RunningVar},
		layerField{"num_batches_tracked", &b.NumBatchesTracked}), nil
}

func layerNormFn(c *pyrt.Call) (starlark.Value, error) {
	var shape tensorlib.PairArg
	eps := tensorlib.FloatArg(1e-5)
	affine := true
	if err := c.Unpack("normalized_shape", &shape, "eps?", &eps, "elementwise_affine?", &affine); err != nil {
		return nil, err
	}
	l := nn.NewLayerNorm(tensorlib.Context(c), shape.Ints(), float64(eps), affine)
	return newLayer("LayerNorm", l.Forward, layerField{"weight", &l.Weight}, layerField{"bias", &l.Bias}), nil
}

func rmsNormFn(c *pyrt.Call) (starlark.Value, error) {
	var dim tensorlib.IntArg
	eps := tensorlib.FloatArg(1e-6)
	affine := true
	if err := c.Unpack("dim", &dim, "eps?", &eps, "elementwise_affine?", &affine); err != nil {
		return nil, err
	}
	r := nn.NewRMSNorm(tensorlib.Context(c), int(dim), float64(eps), affine)
	return newLayer("RMSNorm", r.Forward, layerField{"weight", &r.Weight}), nil
}

func embeddingFn(c *pyrt.Call) (starlark.Value, error) {
	var vocab, size tensorlib.IntArg
	if err := c.Unpack("vocab_size", &vocab, "embed_size", &size); err != nil {
		return nil, err
	}
	if vocab <= 0 || size <= 0 {
		return nil, fmt.Errorf("Embedding: vocab_size and embed_size must be positive, got %d and %d", vocab, size)
	}
	e := nn.NewEmbedding(tensorlib.Context(c), int(vocab), int(size))
	return newLayer("Embedding", e.Forward, layerField{"weight", &e.Weight}), nil
}
