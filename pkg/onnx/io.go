package onnx

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"tgc/pkg/npy"
	"tgc/pkg/safetensors"
	"tgc/pkg/tensor"
)

// Input files: .npy (numpy), .pb (a serialized TensorProto, as in ONNX's
// test data) and .safetensors (tensors matched to inputs by name).

// safetensors names of the ONNX types.
var stNames = map[DataType]string{
	Float: "F32", Float16: "F16", BFloat16: "BF16", Double: "F64", Bool: "BOOL",
	Int8: "I8", Uint8: "U8", Int16: "I16", Uint16: "U16", Int32: "I32", Uint32: "U32", Int64: "I64", Uint64: "U64",
}

// typeByName maps a numpy-style name (float32, int64, ...) to its type.
func typeByName(name string) (DataType, bool) {
	for i := range dataTypes {
		if t := DataType(i); t.Numeric() && t.Name() == name {
			return t, true
		}
	}
	return Undefined, false
}

// ReadArrayFile reads one tensor from a .npy or .pb file.
func ReadArrayFile(path string) (*Array, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".npy":
		a, err := npy.ReadFile(path)
		if err != nil {
			return nil, err
		}
		t, ok := typeByName(a.DType)
		if !ok {
			return nil, fmt.Errorf("%s: dtype %s is not supported", path, a.DType)
		}
		return &Array{Type: t, Shape: a.Shape, Data: a.Data}, nil
	case ".pb":
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		_, a, err := DecodeTensor(data, filepath.Dir(path))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return a, nil
	}
	return nil, fmt.Errorf("%s: input files are .npy, .pb (TensorProto) or .safetensors", path)
}

// readSafetensors reads every tensor of a .safetensors file.
func readSafetensors(path string) (map[string]*Array, []string, error) {
	ts, _, err := safetensors.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	out := map[string]*Array{}
	var names []string
	for _, t := range ts {
		typ := Undefined
		for k, v := range stNames {
			if v == t.DType {
				typ = k
			}
		}
		if typ == Undefined {
			return nil, nil, fmt.Errorf("%s: tensor %q has dtype %s, which tgc does not read", path, t.Name, t.DType)
		}
		out[t.Name] = &Array{Type: typ, Shape: t.Shape, Data: t.Data}
		names = append(names, t.Name)
	}
	return out, names, nil
}

// ReadInputs binds --input arguments to the model's inputs: "name=file" by
// name, "file" in the order of the graph's inputs not yet bound, and a
// .safetensors file binds each of its tensors to the input of that name.
func (m *Model) ReadInputs(specs []string) (map[string]Input, error) {
	inputs := map[string]Input{}
	var positional []*Array
	var posFiles []string
	for _, spec := range specs {
		name, path, named := strings.Cut(spec, "=")
		if !named {
			name, path = "", spec
		}
		if named && name == "" {
			return nil, fmt.Errorf("--input %q: empty input name", spec)
		}
		if strings.EqualFold(filepath.Ext(path), ".safetensors") {
			arrs, names, err := readSafetensors(path)
			if err != nil {
				return nil, err
			}
			if named {
				a, ok := arrs[name]
				if !ok && len(arrs) == 1 {
					a = arrs[names[0]]
				} else if !ok {
					return nil, fmt.Errorf("--input %s: %s has no tensor named %q (it has %s)", spec, path, name, strings.Join(names, ", "))
				}
				if err := m.bindInput(inputs, name, a); err != nil {
					return nil, err
				}
				continue
			}
			for _, n := range names {
				if !m.HasInput(n) {
					return nil, fmt.Errorf("%s: tensor %q is not an input of %s; the inputs are:\n%s", path, n, m.Name, m.InputList())
				}
				if err := m.bindInput(inputs, n, arrs[n]); err != nil {
					return nil, err
				}
			}
			continue
		}
		a, err := ReadArrayFile(path)
		if err != nil {
			return nil, err
		}
		if named {
			if err := m.bindInput(inputs, name, a); err != nil {
				return nil, err
			}
		} else {
			positional = append(positional, a)
			posFiles = append(posFiles, path)
		}
	}
	i := 0
	for _, vi := range m.Inputs {
		if i == len(positional) {
			break
		}
		if _, ok := inputs[vi.Name]; ok {
			continue
		}
		inputs[vi.Name] = Input{Array: positional[i]}
		i++
	}
	if i < len(positional) {
		return nil, fmt.Errorf("--input %s: the model has %d inputs, all of them bound already", posFiles[i], len(m.Inputs))
	}
	return inputs, nil
}

func (m *Model) bindInput(inputs map[string]Input, name string, a *Array) error {
	if !m.HasInput(name) {
		return fmt.Errorf("--input %s: %s has no input named %q; the inputs are:\n%s", name, m.Name, name, m.InputList())
	}
	if _, dup := inputs[name]; dup {
		return fmt.Errorf("--input %s is given twice", name)
	}
	inputs[name] = Input{Array: a}
	return nil
}

// ParseShapes reads --input-shape values "name=1,3,224,224".
func ParseShapes(specs []string) (map[string][]int, error) {
	out := map[string][]int{}
	for _, s := range specs {
		name, dims, ok := strings.Cut(s, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("--input-shape %q: expected NAME=D1,D2,...", s)
		}
		shape := []int{}
		if dims != "" {
			for _, d := range strings.Split(dims, ",") {
				v, err := strconv.Atoi(strings.TrimSpace(d))
				if err != nil || v < 0 {
					return nil, fmt.Errorf("--input-shape %q: %q is not a dimension", s, d)
				}
				shape = append(shape, v)
			}
		}
		if _, err := numel(shape); err != nil {
			return nil, fmt.Errorf("--input-shape %q: %v", s, err)
		}
		out[name] = shape
	}
	return out, nil
}

// ParseDims reads --dim values "batch=8".
func ParseDims(specs []string) (map[string]int, error) {
	out := map[string]int{}
	for _, s := range specs {
		name, v, ok := strings.Cut(s, "=")
		n, err := strconv.Atoi(v)
		if !ok || name == "" || err != nil || n < 0 || n > maxElements {
			return nil, fmt.Errorf("--dim %q: expected NAME=SIZE", s)
		}
		out[name] = n
	}
	return out, nil
}

// Placeholders makes input tensors without data (for tgc emit): each
// input's shape comes from shapes, else from its declaration with symbolic
// dimensions bound by dims. A missing shape is an error that lists them.
func (m *Model) Placeholders(ctx *tensor.Context, shapes map[string][]int, dims map[string]int) (map[string]Input, error) {
	for name := range shapes {
		if !m.HasInput(name) {
			return nil, fmt.Errorf("--input-shape %s: %s has no input named %q; the inputs are:\n%s", name, m.Name, name, m.InputList())
		}
	}
	inputs := map[string]Input{}
	for _, vi := range m.Inputs {
		shape, ok := shapes[vi.Name]
		if !ok {
			if !vi.HasShape {
				return nil, fmt.Errorf("input %q has no declared shape: give it with --input-shape %s=D1,D2,...", vi.Name, vi.Name)
			}
			for _, d := range vi.Dims {
				switch {
				case d.Value >= 0:
					shape = append(shape, d.Value)
				case d.Param != "" && dims[d.Param] > 0:
					shape = append(shape, dims[d.Param])
				default:
					return nil, fmt.Errorf("input %q is %s: give its shape with --input-shape %s=... or its dimension %q with --dim", vi.Name, vi.ShapeString(), vi.Name, d)
				}
			}
		}
		typ := vi.Type
		if typ == Undefined {
			typ = Float
		}
		dt, err := typ.IR()
		if err != nil {
			return nil, fmt.Errorf("input %q: %w", vi.Name, err)
		}
		t := ctx.FromDevice(dt, shape, nil)
		t.Node().Realized().Name = vi.Name
		inputs[vi.Name] = Input{Tensor: t}
	}
	return inputs, nil
}

// RealizeOutputs computes the outputs in one schedule and reads them.
func RealizeOutputs(outs []*tensor.Tensor) ([]*Array, error) {
	var nonEmpty []*tensor.Tensor
	for _, t := range outs {
		if t.Numel() > 0 {
			nonEmpty = append(nonEmpty, t)
		}
	}
	if len(nonEmpty) > 0 {
		if err := tensor.RealizeAll(nonEmpty...); err != nil {
			return nil, err
		}
	}
	res := make([]*Array, len(outs))
	for i, t := range outs {
		a, err := ArrayFrom(t)
		if err != nil {
			return nil, err
		}
		res[i] = a
	}
	return res, nil
}

// WriteOutputs writes named arrays to a .safetensors file, or one array to
// a .npy file.
func WriteOutputs(path string, names []string, arrs []*Array) error {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".safetensors":
		var ts []safetensors.Tensor
		for i, a := range arrs {
			ts = append(ts, safetensors.Tensor{Name: names[i], DType: stNames[a.Type], Shape: slices.Clone(a.Shape), Data: a.Data})
		}
		return safetensors.WriteFile(path, ts, nil)
	case ".npy":
		if len(arrs) != 1 {
			return fmt.Errorf("%s: a .npy file holds one output, the model has %d (use .safetensors)", path, len(arrs))
		}
		b, err := npy.Encode(&npy.Array{DType: arrs[0].Type.Name(), Shape: arrs[0].Shape, Data: arrs[0].Data})
		if err != nil {
			return err
		}
		return os.WriteFile(path, b, 0o644)
	}
	return fmt.Errorf("%s: outputs are written as .safetensors (or .npy for one output)", path)
}
