package nnlib

import (
	"fmt"
	"sort"

	"go.starlark.net/starlark"

	"tgc/pkg/onnx"
	"tgc/pkg/script/pyrt"
	"tgc/pkg/script/tensorlib"
	"tgc/pkg/tensor"
)

// nn.onnx.load(path) loads an ONNX model as a callable: m({"x": t}),
// m(t1, t2) (in the graph's input order) or m(x=t) returns a dict of the
// outputs by name, lazy tensors that compose with the rest of the script.
// The model's float initializers are its parameters (m.weights, and
// nn.state.get_parameters(m)), so a script can fine-tune them.

var onnxModule = pyrt.NewModule("nn.onnx", starlark.StringDict{
	"load": pyrt.Builtin("load", onnxLoad),
})

type onnxModel struct {
	ctx     *tensor.Context // the run that loaded it
	m       *onnx.Model
	path    string
	names   []string // float initializers, sorted
	weights map[string]*tensorlib.Tensor
}

func onnxLoad(c *pyrt.Call) (starlark.Value, error) {
	var path string
	if err := c.Unpack("path", &path); err != nil {
		return nil, err
	}
	m, err := onnx.LoadWith(path, files(c).Open)
	if err != nil {
		return nil, err
	}
	ctx := tensorlib.Context(c)
	om := &onnxModel{ctx: ctx, m: m, path: path, weights: map[string]*tensorlib.Tensor{}}
	for name, a := range m.Init {
		if !a.Type.IsFloat() {
			continue // shapes and indices stay constants, folded on the host
		}
		t, err := a.Tensor(ctx, name, true)
		if err != nil {
			return nil, fmt.Errorf("load: %s: initializer %q: %v", path, name, err)
		}
		om.weights[name] = tensorlib.NewTensor(t)
		om.names = append(om.names, name)
	}
	sort.Strings(om.names)
	return om, nil
}

func (o *onnxModel) String() string        { return fmt.Sprintf("<onnx model %s>", o.path) }
func (o *onnxModel) Type() string          { return "onnx_model" }
func (o *onnxModel) Freeze()               {}
func (o *onnxModel) Truth() starlark.Bool  { return starlark.True }
func (o *onnxModel) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable: onnx_model") }
func (o *onnxModel) Name() string          { return "onnx_model" }

func (o *onnxModel) AttrNames() []string { return []string{"inputs", "outputs", "weights"} }

func (o *onnxModel) Attr(name string) (starlark.Value, error) {
	names := func(vs []onnx.ValueInfo) starlark.Value {
		l := make([]starlark.Value, len(vs))
		for i, v := range vs {
			l[i] = starlark.String(v.Name)
		}
		return starlark.NewList(l)
	}
	switch name {
	case "inputs":
		return names(o.m.Inputs), nil
	case "outputs":
		return names(o.m.Outputs), nil
	case "weights":
		d := starlark.NewDict(len(o.names))
		for _, n := range o.names {
			if err := d.SetKey(starlark.String(n), o.weights[n]); err != nil {
				return nil, err
			}
		}
		return d, nil
	}
	return nil, nil
}

func (o *onnxModel) CallInternal(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	inputs := map[string]onnx.Input{}
	bind := func(name string, v starlark.Value) error {
		t, ok := v.(*tensorlib.Tensor)
		if !ok {
			return fmt.Errorf("%s: input %q must be a Tensor, got %s", o.path, name, v.Type())
		}
		if _, dup := inputs[name]; dup {
			return fmt.Errorf("%s: input %q is given twice", o.path, name)
		}
		inputs[name] = onnx.Input{Tensor: t.Tensor()}
		return nil
	}
	if len(args) == 1 {
		if d, ok := args[0].(*starlark.Dict); ok {
			for _, kv := range d.Items() {
				k, ok := starlark.AsString(kv[0])
				if !ok {
					return nil, fmt.Errorf("%s: input names must be strings, got %s", o.path, kv[0].Type())
				}
				if err := bind(k, kv[1]); err != nil {
					return nil, err
				}
			}
			args = nil
		}
	}
	if len(args) > len(o.m.Inputs) {
		return nil, fmt.Errorf("%s: %d inputs given, the model has %d:\n%s", o.path, len(args), len(o.m.Inputs), o.m.InputList())
	}
	for i, a := range args {
		if err := bind(o.m.Inputs[i].Name, a); err != nil {
			return nil, err
		}
	}
	for _, kv := range kwargs {
		if err := bind(string(kv[0].(starlark.String)), kv[1]); err != nil {
			return nil, err
		}
	}
	weights := map[string]*tensor.Tensor{}
	for n, w := range o.weights {
		weights[n] = w.Tensor()
	}
	outs, err := o.m.Run(o.ctx, inputs, onnx.RunOptions{Weights: weights})
	if err != nil {
		return nil, err
	}
	d := starlark.NewDict(len(outs))
	for i, t := range outs {
		v, err := tensorlib.Wrap(t)
		if err != nil {
			return nil, err
		}
		if err := d.SetKey(starlark.String(o.m.Outputs[i].Name), v); err != nil {
			return nil, err
		}
	}
	return d, nil
}
