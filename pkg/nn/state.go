package nn

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"unicode"

	"tgc/pkg/ir"
	"tgc/pkg/safetensors"
	"tgc/pkg/tensor"
)

// StateDict walks a model (pointers, structs, slices, arrays, maps with
// string or int keys) and returns its tensors under dotted names, like
// tinygrad's get_state_dict: struct field names become snake_case
// ("RunningMean" → "running_mean", "L1" → "l1"), a field tag `nn:"name"`
// renames and `nn:"-"` skips, slice elements are numbered. Nil tensors are
// left out.
func StateDict(model any) map[string]*tensor.Tensor {
	out := map[string]*tensor.Tensor{}
	walk(reflect.ValueOf(model), "", out, map[uintptr]bool{}, 0)
	return out
}

// Parameters returns the tensors of a model in name order (tinygrad's
// get_parameters), without duplicates.
func Parameters(model any) []*tensor.Tensor {
	sd := StateDict(model)
	names := make([]string, 0, len(sd))
	for n := range sd {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []*tensor.Tensor
	seen := map[*tensor.Tensor]bool{}
	for _, n := range names {
		if t := sd[n]; !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// LoadStateDict assigns the tensors of sd to the model's tensors of the
// same names. Shapes must match; dtypes are converted. With strict, a
// model tensor missing from sd is an error (extra entries in sd are always
// ignored, as in tinygrad).
func LoadStateDict(model any, sd map[string]*tensor.Tensor, strict bool) error {
	own := StateDict(model)
	names := make([]string, 0, len(own))
	for n := range own {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t := own[n]
		v, ok := sd[n]
		if !ok {
			if strict {
				return fmt.Errorf("load_state_dict: %q is missing from the state dict", n)
			}
			continue
		}
		if err := v.Err(); err != nil {
			return fmt.Errorf("load_state_dict: %q: %w", n, err)
		}
		if fmt.Sprint(v.Shape()) != fmt.Sprint(t.Shape()) {
			return fmt.Errorf("load_state_dict: %q has shape %s, the model's tensor has shape %s", n, tensor.FormatShape(v.Shape()), tensor.FormatShape(t.Shape()))
		}
		if r := t.Assign(v.Cast(t.DType())); r.Err() != nil {
			return fmt.Errorf("load_state_dict: %q: %w", n, r.Err())
		}
	}
	return nil
}

var tensorType = reflect.TypeOf((*tensor.Tensor)(nil))

func walk(v reflect.Value, prefix string, out map[string]*tensor.Tensor, seen map[uintptr]bool, depth int) {
	if depth > 64 || !v.IsValid() {
		return
	}
	join := func(k string) string {
		if prefix == "" {
			return k
		}
		return prefix + "." + k
	}
	if v.Type() == tensorType {
		if !v.IsNil() {
			out[prefix] = v.Interface().(*tensor.Tensor)
		}
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() || seen[v.Pointer()] {
			return
		}
		seen[v.Pointer()] = true
		walk(v.Elem(), prefix, out, seen, depth+1)
	case reflect.Interface:
		walk(v.Elem(), prefix, out, seen, depth+1)
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name := snake(f.Name)
			if tag, ok := f.Tag.Lookup("nn"); ok {
				if tag == "-" {
					continue
				}
				name = tag
			}
			walk(v.Field(i), join(name), out, seen, depth+1)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			walk(v.Index(i), join(fmt.Sprint(i)), out, seen, depth+1)
		}
	case reflect.Map:
		keys := v.MapKeys()
		for _, k := range keys {
			var name string
			switch k.Kind() {
			case reflect.String:
				name = k.String()
			case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
				name = fmt.Sprint(k.Int())
			default:
				continue
			}
			walk(v.MapIndex(k), join(name), out, seen, depth+1)
		}
	}
}

// snake converts a Go field name to tinygrad's attribute spelling:
// RunningMean → running_mean, NumBatchesTracked → num_batches_tracked,
// L1 → l1, BN2 → bn2.
func snake(s string) string {
	r := []rune(s)
	var sb strings.Builder
	for i, c := range r {
		if unicode.IsUpper(c) {
			prevLower := i > 0 && unicode.IsLower(r[i-1])
			nextLower := i > 0 && i+1 < len(r) && unicode.IsUpper(r[i-1]) && unicode.IsLower(r[i+1])
			if prevLower || nextLower {
				sb.WriteByte('_')
			}
			sb.WriteRune(unicode.ToLower(c))
			continue
		}
		sb.WriteRune(c)
	}
	return sb.String()
}

// SafeSave realizes the tensors of sd (one schedule) and writes them to a
// safetensors file.
func SafeSave(path string, sd map[string]*tensor.Tensor) error {
	names := make([]string, 0, len(sd))
	ts := make([]*tensor.Tensor, 0, len(sd))
	for n := range sd {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		ts = append(ts, sd[n])
	}
	if err := tensor.RealizeAll(ts...); err != nil {
		return fmt.Errorf("safe_save: %w", err)
	}
	out := make([]safetensors.Tensor, len(ts))
	for i, t := range ts {
		data, err := t.Bytes()
		if err != nil {
			return fmt.Errorf("safe_save: reading %q: %w", names[i], err)
		}
		out[i] = safetensors.Tensor{Name: names[i], DType: t.DType().SafetensorsName(), Shape: t.Shape(), Data: data}
	}
	return safetensors.WriteFile(path, out, nil)
}

// SafeLoad reads a safetensors file of tgc's dtypes into a state dict of
// tensors in ctx.
func SafeLoad(ctx *tensor.Context, path string) (map[string]*tensor.Tensor, error) {
	sts, _, err := safetensors.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("safe_load: %w", err)
	}
	out := make(map[string]*tensor.Tensor, len(sts))
	for _, st := range sts {
		dt, ok := ir.DTypeFromSafetensors(st.DType)
		if !ok {
			return nil, fmt.Errorf("safe_load: %s: tensor %q has dtype %s, which tgc does not store", path, st.Name, st.DType)
		}
		t, err := ctx.FromBytes(dt, st.Shape, st.Data)
		if err != nil {
			return nil, fmt.Errorf("safe_load: %s: tensor %q: %w", path, st.Name, err)
		}
		out[st.Name] = t
	}
	return out, nil
}
