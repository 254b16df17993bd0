package tensorlib

import (
	"fmt"

	"go.starlark.net/starlark"

	"tgc/pkg/script/pyrt"
	"tgc/pkg/tensor"
)

// indexItems converts a Python index (an int, a slice, None, Ellipsis, or a
// tuple of those) into tensor.Index entries.
func indexItems(k starlark.Value) ([]tensor.IndexItem, error) {
	if tup, ok := k.(starlark.Tuple); ok {
		items := make([]tensor.IndexItem, len(tup))
		for i, x := range tup {
			it, err := indexItem(x)
			if err != nil {
				return nil, err
			}
			items[i] = it
		}
		return items, nil
	}
	it, err := indexItem(k)
	if err != nil {
		return nil, err
	}
	return []tensor.IndexItem{it}, nil
}

func indexItem(x starlark.Value) (tensor.IndexItem, error) {
	switch x := x.(type) {
	case starlark.Int, starlark.Bool:
		n, err := ToInt(x)
		if err != nil {
			return tensor.IndexItem{}, fmt.Errorf("index: %v", err)
		}
		return tensor.IntIndex(n), nil
	case starlark.NoneType:
		return tensor.NewAxisIndex(), nil
	case pyrt.Ellipsis:
		return tensor.EllipsisIndex(), nil
	case pyrt.Slice:
		var bounds [3]*int
		for i, b := range []starlark.Value{x.Start, x.Stop, x.Step} {
			if b == starlark.None {
				continue
			}
			n, err := ToInt(b)
			if err != nil {
				return tensor.IndexItem{}, fmt.Errorf("index: slice bounds must be ints or None: %v", err)
			}
			bounds[i] = &n
		}
		if bounds[2] != nil && *bounds[2] == 0 {
			return tensor.IndexItem{}, fmt.Errorf("index: slice step cannot be zero")
		}
		return tensor.SliceIndex(bounds[0], bounds[1], bounds[2]), nil
	case *Tensor:
		return tensor.IndexItem{}, fmt.Errorf("index: indexing with a Tensor is not supported; use t.gather(dim, index) or one_hot")
	}
	return tensor.IndexItem{}, fmt.Errorf("index: got %s, want int, slice, None or ... (Ellipsis)", x.Type())
}
