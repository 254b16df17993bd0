package tensorlib

import (
	"fmt"

	"go.starlark.net/starlark"

	"tgc/pkg/tensor"
)

// tensorIndex implements x[idx] for an integer tensor idx (tinygrad's
// X_train[samples]): the rows of x at the positions in idx, shape
// idx.shape + x.shape[1:]. It is a gather on the host and a realize point:
// x and idx are computed, the rows are copied into a new realized tensor,
// and no gradient flows back to x. ok is false when k is not a tensor (the
// ordinary index path handles it).
func tensorIndex(x *tensor.Tensor, k starlark.Value) (v starlark.Value, ok bool, err error) {
	it, isT := k.(*Tensor)
	if !isT {
		return nil, false, nil
	}
	idx := it.t
	switch {
	case !idx.DType().IsInt():
		return nil, true, fmt.Errorf("index: indexing with a %s tensor is not supported: the index tensor must be an integer tensor (rows to select), e.g. Tensor.randint(BS, high=X.shape[0])", idx.DType())
	case x.Ndim() == 0:
		return nil, true, fmt.Errorf("index: cannot index a 0-d tensor with a tensor")
	case x.RequiresGrad:
		return nil, true, fmt.Errorf("index: indexing with a tensor gathers rows on the host and has no gradient, but this tensor requires grad: use t.gather(dim, index) or one_hot")
	case x.Context().Engine() == nil:
		return nil, true, fmt.Errorf("index: no device: indexing with a tensor computes the index (no engine is installed)")
	}
	if err := tensor.RealizeAll(x, idx); err != nil {
		return nil, true, err
	}
	data, err := x.Bytes()
	if err != nil {
		return nil, true, err
	}
	ids, err := idx.Floats()
	if err != nil {
		return nil, true, err
	}
	shape := x.Shape()
	rows := shape[0]
	rowBytes := x.DType().Size()
	for _, d := range shape[1:] {
		rowBytes *= d
	}
	if len(data) < rows*rowBytes {
		return nil, true, fmt.Errorf("index: internal: %d bytes for a tensor of shape %s", len(data), tensor.FormatShape(shape))
	}
	out := make([]byte, len(ids)*rowBytes)
	for i, f := range ids {
		r := int(f)
		if r < 0 {
			r += rows
		}
		if r < 0 || r >= rows {
			return nil, true, fmt.Errorf("index: index %d is out of bounds for dimension 0 with size %d", int(f), rows)
		}
		copy(out[i*rowBytes:(i+1)*rowBytes], data[r*rowBytes:(r+1)*rowBytes])
	}
	t, err := x.Context().FromBytes(x.DType(), append(idx.Shape(), shape[1:]...), out)
	if err != nil {
		return nil, true, err
	}
	return NewTensor(t), true, nil
}
