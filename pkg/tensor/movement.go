package tensor

import (
	"slices"

	"tgc/pkg/ir"
)

// Movement functions built on the movement primitives: all of them are
// views (reshape, permute, expand, pad, shrink), except Cat, which selects
// among zero-padded views so that it fuses into its consumer.

// Transpose swaps dimensions d0 and d1 (tinygrad's defaults are 1, 0).
func (t *Tensor) Transpose(d0, d1 int) *Tensor {
	if t.err != nil {
		return t
	}
	a, e := resolveDim("transpose", d0, t.Ndim())
	if e != nil {
		return e
	}
	b, e := resolveDim("transpose", d1, t.Ndim())
	if e != nil {
		return e
	}
	if t.Ndim() == 0 {
		return t
	}
	order := allAxes(t.Ndim())
	order[a], order[b] = order[b], order[a]
	return t.Permute(order...)
}

// T is Transpose(1, 0), so it needs at least 2 dimensions.
func (t *Tensor) T() *Tensor {
	if t.err != nil {
		return t
	}
	if t.Ndim() < 2 {
		return errorf("T", "needs a tensor with at least 2 dimensions, got shape %s", FormatShape(t.node.Shape))
	}
	return t.Transpose(1, 0)
}

// Flatten merges dimensions startDim..endDim (inclusive; tinygrad's
// defaults are 0, -1) into one. A 0-d tensor flattens to shape (1,).
func (t *Tensor) Flatten(startDim, endDim int) *Tensor {
	if t.err != nil {
		return t
	}
	s, e := resolveDim("flatten", startDim, t.Ndim())
	if e != nil {
		return e
	}
	en, e := resolveDim("flatten", endDim, t.Ndim())
	if e != nil {
		return e
	}
	if t.Ndim() == 0 {
		return t.Reshape(1)
	}
	if s > en {
		return errorf("flatten", "start_dim %d comes after end_dim %d for shape %s", startDim, endDim, FormatShape(t.node.Shape))
	}
	shape := t.Shape()
	merged := prod(shape[s : en+1])
	out := append(append(slices.Clone(shape[:s]), merged), shape[en+1:]...)
	return t.Reshape(out...)
}

// Unflatten splits dimension dim into sizes (one may be -1).
func (t *Tensor) Unflatten(dim int, sizes ...int) *Tensor {
	if t.err != nil {
		return t
	}
	d, e := normAxis("unflatten", dim, t.Ndim())
	if e != nil {
		return e
	}
	shape := t.Shape()
	out := append(append(slices.Clone(shape[:d]), sizes...), shape[d+1:]...)
	r := t.Reshape(out...)
	if r.err != nil {
		return errorf("unflatten", "cannot split dimension %d of size %d of shape %s into %s", d, shape[d], FormatShape(shape), FormatShape(sizes))
	}
	return r
}

// Squeeze drops dimension *dim if it has size 1 (else returns t), or every
// size-1 dimension when dim is nil.
func (t *Tensor) Squeeze(dim *int) *Tensor {
	if t.err != nil {
		return t
	}
	shape := t.Shape()
	if dim == nil {
		var out []int
		for _, s := range shape {
			if s != 1 {
				out = append(out, s)
			}
		}
		return t.Reshape(out...)
	}
	d, e := resolveDim("squeeze", *dim, t.Ndim())
	if e != nil {
		return e
	}
	if t.Ndim() == 0 || shape[d] != 1 {
		return t
	}
	return t.Reshape(slices.Delete(shape, d, d+1)...)
}

// Unsqueeze inserts a size-1 dimension at dim (-ndim-1 <= dim <= ndim).
func (t *Tensor) Unsqueeze(dim int) *Tensor {
	if t.err != nil {
		return t
	}
	d, e := normAxis("unsqueeze", dim, t.Ndim()+1)
	if e != nil {
		return e
	}
	return t.Reshape(slices.Insert(t.Shape(), d, 1)...)
}

// Repeat tiles t reps[i] times along each dimension (numpy's tile; reps
// may have more entries than t has dimensions, which adds leading ones).
// It is reshape (a size-1 axis before each repeated one), expand, reshape.
func (t *Tensor) Repeat(reps ...int) *Tensor {
	if t.err != nil {
		return t
	}
	if len(reps) < t.Ndim() {
		return errorf("repeat", "repeats %v need at least one entry per dimension of shape %s", reps, FormatShape(t.node.Shape))
	}
	base := append(ones(len(reps)-t.Ndim()), t.node.Shape...)
	var unsq, exp, final []int
	for i, r := range reps {
		if r < 0 {
			return errorf("repeat", "negative repeat %d in %v", r, reps)
		}
		s := base[i]
		if r == 1 {
			unsq, exp = append(unsq, s), append(exp, s)
		} else {
			unsq, exp = append(unsq, 1, s), append(exp, r, s)
		}
		final = append(final, r*s)
	}
	return t.Reshape(unsq...).Expand(exp...).Reshape(final...)
}

// RepeatInterleave repeats each element repeats times along dim (nil =
// the flattened tensor).
func (t *Tensor) RepeatInterleave(repeats int, dim *int) *Tensor {
	if t.err != nil {
		return t
	}
	if repeats < 0 {
		return errorf("repeat_interleave", "negative repeats %d", repeats)
	}
	x, d := t, 0
	if dim == nil {
		x = t.Flatten(0, -1)
	} else {
		var e *Tensor
		if d, e = resolveDim("repeat_interleave", *dim, t.Ndim()); e != nil {
			return e
		}
		if t.Ndim() == 0 {
			x = t.Reshape(1)
		}
	}
	shp := x.Shape()
	withOne := slices.Insert(slices.Clone(shp), d+1, 1)
	expanded := slices.Insert(slices.Clone(shp), d+1, repeats)
	return x.Reshape(withOne...).Expand(expanded...).Flatten(d, d+1)
}

// Cat concatenates t and others along dim. Each input is zero-padded to
// the output's extent along dim and the results are added, so the
// concatenation is a fused elementwise expression, not a copy.
func (t *Tensor) Cat(dim int, others ...*Tensor) *Tensor {
	if e := firstErr(append([]*Tensor{t}, others...)...); e != nil {
		return e
	}
	if t.Ndim() == 0 {
		return errorf("cat", "zero-dimensional tensor cannot be concatenated")
	}
	d, e := normAxis("cat", dim, t.Ndim())
	if e != nil {
		return e
	}
	all := append([]*Tensor{t}, others...)
	total := 0
	for _, o := range all {
		if o.Ndim() != t.Ndim() {
			return errorf("cat", "tensors must have the same number of dimensions: %s and %s", FormatShape(t.node.Shape), FormatShape(o.node.Shape))
		}
		for i := range o.node.Shape {
			if i != d && o.node.Shape[i] != t.node.Shape[i] {
				return errorf("cat", "shapes %s and %s differ in dimension %d (concatenating along %d)", FormatShape(t.node.Shape), FormatShape(o.node.Shape), i, d)
			}
		}
		total += o.node.Shape[d]
	}
	// Each piece is padded to the full size and selected where it lies (not
	// added to the zeros of the others' pads: -0.0 + 0.0 is +0.0).
	dt := t.DType()
	for _, o := range others {
		dt = ir.Promote(dt, o.DType())
	}
	var out *Tensor
	off := 0
	for _, o := range all {
		pads := make([][2]int, o.Ndim())
		n := o.node.Shape[d]
		pads[d] = [2]int{off, total - off - n}
		off += n
		p := o.Cast(dt).padZero(pads)
		if out == nil {
			out = p
		} else {
			inside := t.node.ctx.Full(o.Shape(), 1, ir.Bool).padZero(pads)
			out = inside.Where(p, out)
		}
	}
	return out
}

// Stack joins tensors of equal shape along a new dimension dim.
func Stack(dim int, ts ...*Tensor) *Tensor {
	if len(ts) == 0 {
		return errorf("stack", "needs at least one tensor")
	}
	if e := firstErr(ts...); e != nil {
		return e
	}
	d, e := normAxis("stack", dim, ts[0].Ndim()+1)
	if e != nil {
		return e
	}
	us := make([]*Tensor, len(ts))
	for i, x := range ts {
		if !slices.Equal(x.node.Shape, ts[0].node.Shape) {
			return errorf("stack", "all tensors must have the same shape, got %s and %s", FormatShape(ts[0].node.Shape), FormatShape(x.node.Shape))
		}
		us[i] = x.Unsqueeze(d)
	}
	return us[0].Cat(d, us[1:]...)
}

// SplitSizes cuts t along dim into pieces of the given sizes, which must
// add up to the dimension. On error the result is one error tensor.
func (t *Tensor) SplitSizes(sizes []int, dim int) []*Tensor {
	if t.err != nil {
		return []*Tensor{t}
	}
	d, e := normAxis("split", dim, t.Ndim())
	if e != nil {
		return []*Tensor{e}
	}
	if t.Ndim() == 0 {
		return []*Tensor{errorf("split", "cannot split a 0-d tensor")}
	}
	total := 0
	for _, s := range sizes {
		if s < 0 {
			return []*Tensor{errorf("split", "negative size in %v", sizes)}
		}
		total += s
	}
	if total != t.node.Shape[d] {
		return []*Tensor{errorf("split", "sizes %v add up to %d, dimension %d of shape %s has %d", sizes, total, d, FormatShape(t.node.Shape), t.node.Shape[d])}
	}
	out := make([]*Tensor, len(sizes))
	off := 0
	for i, s := range sizes {
		out[i] = t.Shrink(shrinkDim(t.node.Shape, d, off, off+s))
		off += s
	}
	return out
}

// Split cuts t along dim into pieces of size (the last may be smaller).
func (t *Tensor) Split(size, dim int) []*Tensor {
	if t.err != nil {
		return []*Tensor{t}
	}
	d, e := normAxis("split", dim, t.Ndim())
	if e != nil {
		return []*Tensor{e}
	}
	if size <= 0 {
		return []*Tensor{errorf("split", "split size must be positive, got %d", size)}
	}
	if t.Ndim() == 0 {
		return []*Tensor{errorf("split", "cannot split a 0-d tensor")}
	}
	n := t.node.Shape[d]
	var sizes []int
	for i := 0; i < max(1, n); i += size {
		sizes = append(sizes, min(size, n-i))
	}
	return t.SplitSizes(sizes, d)
}

// Chunk cuts t along dim into n pieces of ceil(size/n) (fewer if they run
// out), like tinygrad's chunk.
func (t *Tensor) Chunk(n, dim int) []*Tensor {
	if t.err != nil {
		return []*Tensor{t}
	}
	if n <= 0 {
		return []*Tensor{errorf("chunk", "number of chunks must be positive, got %d", n)}
	}
	d, e := normAxis("chunk", dim, t.Ndim())
	if e != nil {
		return []*Tensor{e}
	}
	if t.Ndim() == 0 {
		return []*Tensor{errorf("chunk", "cannot chunk a 0-d tensor")}
	}
	sz := t.node.Shape[d]
	if sz == 0 {
		return t.SplitSizes(make([]int, n), d)
	}
	return t.Split((sz+n-1)/n, d)
}
