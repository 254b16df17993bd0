package tensorlib

import (
	"fmt"

	"go.starlark.net/starlark"

	"tgc/pkg/script/pyrt"
	"tgc/pkg/tensor"
)

// Tensor functions added with the ONNX importer: prod, topk, sort,
// conv_transpose2d and Tensor.einsum (tinygrad's signatures).

var extraMethods = map[string]methodFunc{
	"prod":             reduceMethod((*tensor.Tensor).Prod),
	"topk":             topkMethod,
	"sort":             sortMethod,
	"conv_transpose2d": convTranspose2dMethod,
}

// topkMethod is t.topk(k, dim=-1, largest=True, sorted_=True): a tuple of
// the values and their indices (int32); the order is always sorted.
func topkMethod(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
	var k IntArg
	dim := IntArg(-1)
	largest, sorted := true, true
	if err := c.Unpack("k", &k, "dim?", &dim, "largest?", &largest, "sorted_?", &sorted); err != nil {
		return nil, err
	}
	v, i := t.TopK(int(k), int(dim), largest)
	return tensorTuple([]*tensor.Tensor{v, i})
}

// sortMethod is t.sort(dim=-1, descending=False): a tuple of the sorted
// values and the indices (int32) they came from; stable.
func sortMethod(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
	dim := IntArg(-1)
	descending := false
	if err := c.Unpack("dim?", &dim, "descending?", &descending); err != nil {
		return nil, err
	}
	v, i := t.Sort(int(dim), descending)
	return tensorTuple([]*tensor.Tensor{v, i})
}

// convTranspose2dMethod is t.conv_transpose2d(weight, bias=None, groups=1,
// stride=1, dilation=1, padding=0, output_padding=0).
func convTranspose2dMethod(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
	var w, b TensorArg
	groups := IntArg(1)
	stride, dilation, padding, outPad := PairArg{[]int{1}}, PairArg{[]int{1}}, PairArg{[]int{0}}, PairArg{[]int{0}}
	if err := c.Unpack("weight", &w, "bias?", &b, "groups?", &groups, "stride?", &stride, "dilation?", &dilation, "padding?", &padding, "output_padding?", &outPad); err != nil {
		return nil, err
	}
	if w.t == nil {
		return nil, fmt.Errorf("conv_transpose2d: for parameter weight: got None, want Tensor")
	}
	return Wrap(t.ConvTranspose2d(w.t, b.t, tensor.ConvTransposeOpts{Groups: int(groups), Stride: stride.v, Dilation: dilation.v, Padding: padding.v, OutputPadding: outPad.v}))
}

// einsumFn is Tensor.einsum(formula, *operands) (a list of operands works
// too).
func einsumFn(c *pyrt.Call) (starlark.Value, error) {
	if len(c.Args) == 0 {
		return nil, fmt.Errorf("einsum: missing the formula")
	}
	f, ok := starlark.AsString(c.Args[0])
	if !ok {
		return nil, fmt.Errorf("einsum: the formula must be a string, got %s", c.Args[0].Type())
	}
	args := c.Args[1:]
	if len(args) == 1 && IsSeq(args[0]) {
		args = SeqElems(args[0])
	}
	ts, err := TensorList(c, args)
	if err != nil {
		return nil, err
	}
	return Wrap(tensor.Einsum(f, ts...))
}
