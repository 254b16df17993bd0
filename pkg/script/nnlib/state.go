package nnlib

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"

	"tgc/pkg/fileaccess"
	"tgc/pkg/ir"
	"tgc/pkg/safetensors"
	"tgc/pkg/script/pyrt"
	"tgc/pkg/script/tensorlib"
	"tgc/pkg/tensor"
)

// nn.state: loading and saving weights in the safetensors format, and
// collecting the tensors of a model made of objects, structs, lists and
// dicts.

// files is the file access of the running script (docs/language.md#file-access);
// without a session, none.
func files(c *pyrt.Call) *fileaccess.Policy {
	if h, ok := pyrt.HostOf(c.Thread).(interface{ Files() *fileaccess.Policy }); ok {
		return h.Files()
	}
	return &fileaccess.Policy{}
}

// warnf prints a warning at the calling script line (once per line).
func warnf(c *pyrt.Call, format string, args ...any) {
	if h, ok := pyrt.HostOf(c.Thread).(interface{ Warnf(string, ...any) }); ok {
		h.Warnf(format, args...)
	}
}

// safeLoad is nn.state.safe_load(path): a dict of name -> Tensor. Weights
// of dtypes tgc does not store (F64, BF16, I64, I16, U16) are converted to
// float32 or int32.
func safeLoad(c *pyrt.Call) (starlark.Value, error) {
	var path string
	if err := c.Unpack("path", &path); err != nil {
		return nil, err
	}
	f, err := files(c).Open(path)
	if err != nil {
		return nil, fmt.Errorf("safe_load: %v", err)
	}
	sts, _, err := safetensors.ReadOpen(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("safe_load: %v", err)
	}
	d := starlark.NewDict(len(sts))
	for _, st := range sts {
		t, err := FromSafetensors(tensorlib.Context(c), st)
		if err != nil {
			return nil, fmt.Errorf("safe_load: %s: tensor %q: %v", path, st.Name, err)
		}
		if b, ok := t.Node().Arg.(*tensor.Buffer); ok {
			b.Name, b.Weight = st.Name, true
		}
		if err := d.SetKey(starlark.String(st.Name), tensorlib.NewTensor(t)); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// FromSafetensors makes a tensor of ctx from a stored one, in its own
// dtype.
func FromSafetensors(ctx *tensor.Context, st safetensors.Tensor) (*tensor.Tensor, error) {
	if dt, ok := ir.DTypeFromSafetensors(st.DType); ok {
		if dt == ir.Bool {
			for i, b := range st.Data {
				if b > 1 {
					return nil, fmt.Errorf("BOOL element %d is %d, not 0 or 1", i, b)
				}
			}
		}
		return ctx.FromBytes(dt, st.Shape, st.Data)
	}
	var names []string
	for _, dt := range ir.AllDTypes {
		names = append(names, dt.SafetensorsName())
	}
	return nil, fmt.Errorf("dtype %s is not supported (tgc has %s)", st.DType, strings.Join(names, ", "))
}

// safeSave is nn.state.safe_save(tensors, path, metadata=None).
func safeSave(c *pyrt.Call) (starlark.Value, error) {
	var dict *starlark.Dict
	var path string
	var meta *starlark.Dict
	if err := c.Unpack("tensors", &dict, "path", &path, "metadata?", &meta); err != nil {
		return nil, err
	}
	names := make([]string, 0, dict.Len())
	ts := make([]*tensor.Tensor, 0, dict.Len())
	for _, kv := range dict.Items() {
		name, ok := starlark.AsString(kv[0])
		if !ok {
			return nil, fmt.Errorf("safe_save: keys must be strings, got %s", kv[0].Type())
		}
		t, ok := kv[1].(*tensorlib.Tensor)
		if !ok {
			return nil, fmt.Errorf("safe_save: %q is %s, want Tensor", name, kv[1].Type())
		}
		names = append(names, name)
		ts = append(ts, t.Tensor())
	}
	var metadata map[string]string
	if meta != nil {
		metadata = map[string]string{}
		for _, kv := range meta.Items() {
			k, ok1 := starlark.AsString(kv[0])
			v, ok2 := starlark.AsString(kv[1])
			if !ok1 || !ok2 {
				return nil, errors.New("safe_save: metadata must map strings to strings")
			}
			metadata[k] = v
		}
	}
	ctx := tensorlib.Context(c)
	if ctx.Engine() == nil {
		return nil, errors.New("safe_save: no device: the tensors cannot be computed (no engine is installed)")
	}
	if _, err := files(c).CheckWrite(path); err != nil {
		return nil, fmt.Errorf("safe_save: %v", err)
	}
	if tensorlib.Tracing(ctx) {
		// tgc emit runs nothing: the tensors become outputs of the plan,
		// and the file (which would hold zeros) is not written.
		warnf(c, "safe_save in trace mode: %s is not written (tgc emit runs nothing); the tensors become outputs of the plan", path)
		if err := tensor.RealizeAll(ts...); err != nil {
			return nil, fmt.Errorf("safe_save: %v", err)
		}
		for _, t := range ts {
			if _, err := t.Bytes(); err != nil {
				return nil, fmt.Errorf("safe_save: %v", err)
			}
		}
		return starlark.None, nil
	}
	if err := tensor.RealizeAll(ts...); err != nil {
		return nil, fmt.Errorf("safe_save: %v", err)
	}
	out := make([]safetensors.Tensor, len(ts))
	for i, t := range ts {
		data, err := t.Bytes()
		if err != nil {
			return nil, fmt.Errorf("safe_save: reading %q: %v", names[i], err)
		}
		out[i] = safetensors.Tensor{Name: names[i], DType: t.DType().SafetensorsName(), Shape: t.Shape(), Data: data}
	}
	data, err := safetensors.Encode(out, metadata)
	if err != nil {
		return nil, fmt.Errorf("safe_save: %v", err)
	}
	if err := files(c).WriteFile(path, data, 0o644); err != nil {
		return nil, fmt.Errorf("safe_save: %v", err)
	}
	return starlark.None, nil
}

// stateDict walks a model (structs, lists, tuples, dicts) and collects its
// tensors under dotted names, like tinygrad's get_state_dict.
func stateDict(v starlark.Value, prefix string, out map[string]*tensorlib.Tensor, seen map[starlark.Value]bool, depth int) error {
	if depth > 64 {
		return errors.New("get_state_dict: the model is nested too deeply (a cycle?)")
	}
	join := func(k string) string {
		if prefix == "" {
			return k
		}
		return prefix + "." + k
	}
	switch v := v.(type) {
	case *tensorlib.Tensor:
		out[prefix] = v
	case *onnxModel:
		for _, n := range v.names {
			if err := stateDict(v.weights[n], join(n), out, seen, depth+1); err != nil {
				return err
			}
		}
	case *layer:
		names, vals := v.tensors()
		for i, n := range names {
			if err := stateDict(vals[i], join(n), out, seen, depth+1); err != nil {
				return err
			}
		}
	case *pyrt.Instance:
		if seen[v] {
			return nil
		}
		seen[v] = true
		names, vals := v.Fields()
		for i, name := range names {
			if err := stateDict(vals[i], join(name), out, seen, depth+1); err != nil {
				return err
			}
		}
	case *starlarkstruct.Struct:
		for _, name := range v.AttrNames() {
			f, err := v.Attr(name)
			if err != nil {
				return err
			}
			if err := stateDict(f, join(name), out, seen, depth+1); err != nil {
				return err
			}
		}
	case starlark.Tuple:
		for i, x := range v {
			if err := stateDict(x, join(fmt.Sprint(i)), out, seen, depth+1); err != nil {
				return err
			}
		}
	case *starlark.List:
		if seen[v] {
			return nil
		}
		seen[v] = true
		for i := range v.Len() {
			if err := stateDict(v.Index(i), join(fmt.Sprint(i)), out, seen, depth+1); err != nil {
				return err
			}
		}
	case *starlark.Dict:
		if seen[v] {
			return nil
		}
		seen[v] = true
		for _, kv := range v.Items() {
			k, ok := starlark.AsString(kv[0])
			if !ok {
				k = kv[0].String()
			}
			if err := stateDict(kv[1], join(k), out, seen, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

func collectState(c *pyrt.Call) (map[string]*tensorlib.Tensor, []string, error) {
	var obj starlark.Value
	prefix := ""
	if err := c.Unpack("obj", &obj, "prefix?", &prefix); err != nil {
		return nil, nil, err
	}
	out := map[string]*tensorlib.Tensor{}
	if err := stateDict(obj, prefix, out, map[starlark.Value]bool{}, 0); err != nil {
		return nil, nil, err
	}
	names := make([]string, 0, len(out))
	for k := range out {
		names = append(names, k)
	}
	sort.Strings(names)
	return out, names, nil
}

// getStateDict is nn.state.get_state_dict(obj): a dict of name -> Tensor.
func getStateDict(c *pyrt.Call) (starlark.Value, error) {
	m, names, err := collectState(c)
	if err != nil {
		return nil, err
	}
	d := starlark.NewDict(len(names))
	for _, n := range names {
		if err := d.SetKey(starlark.String(n), m[n]); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// getParameters is nn.state.get_parameters(obj): the tensors of the model.
func getParameters(c *pyrt.Call) (starlark.Value, error) {
	m, names, err := collectState(c)
	if err != nil {
		return nil, err
	}
	list := make([]starlark.Value, len(names))
	for i, n := range names {
		list[i] = m[n]
	}
	return starlark.NewList(list), nil
}

// loadStateDict is nn.state.load_state_dict(model, state_dict, strict=True):
// every tensor of the model takes the value of the same name (shapes must
// match; dtypes are converted).
func loadStateDict(c *pyrt.Call) (starlark.Value, error) {
	var model starlark.Value
	var sd *starlark.Dict
	strict := true
	if err := c.Unpack("model", &model, "state_dict", &sd, "strict?", &strict); err != nil {
		return nil, err
	}
	own := map[string]*tensorlib.Tensor{}
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
		src, ok := v.(*tensorlib.Tensor)
		if !ok {
			return nil, fmt.Errorf("load_state_dict: %q is %s, want Tensor", n, v.Type())
		}
		dst := own[n].Tensor()
		if fmt.Sprint(src.Tensor().Shape()) != fmt.Sprint(dst.Shape()) {
			return nil, fmt.Errorf("load_state_dict: %q has shape %s, the model's tensor has shape %s", n, tensor.FormatShape(src.Tensor().Shape()), tensor.FormatShape(dst.Shape()))
		}
		if r := dst.Assign(src.Tensor().Cast(dst.DType())); r.Err() != nil {
			return nil, fmt.Errorf("load_state_dict: %q: %v", n, r.Err())
		}
	}
	return starlark.None, nil
}
