package onnx

import (
	"math"
	"slices"
	"sort"

	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// Indexing operators. A data-dependent index becomes a one-hot mask
// (index == 0..n-1) and a masked sum, so it fuses into one reduce and needs
// no data-dependent loads; indices known at load time become views where
// they can (one index, an arithmetic progression).

var indexOps = map[string]opDef{
	"Gather":          {since: 1, run: one(gatherOp), host: hostGather},
	"GatherElements":  {since: 11, run: one(gatherElements)},
	"GatherND":        {since: 11, run: one(gatherND)},
	"Scatter":         {since: 9, run: one(scatterElements)},
	"ScatterElements": {since: 11, run: one(scatterElements)},
	"ScatterND":       {since: 11, run: one(scatterND)},
	"OneHot":          {since: 9, run: one(oneHot)},
	"TopK":            {since: 1, run: topK},
	"NonZero":         {since: 9, host: hostOnly(nonZero), anyInput: true},
	"Compress":        {since: 9, run: one(compress)},
	"Unique":          {since: 11, host: hostUnique, anyInput: true},
	"ReverseSequence": {since: 10, run: one(reverseSequence)},
	"MaxUnpool":       {since: 9, run: one(maxUnpool)},
}

// normIndex maps negative indices to index+size (int32 arithmetic).
func normIndex(idx *tensor.Tensor, size int) *tensor.Tensor {
	ctx := idx.Context()
	i := idx.Cast(ir.Int32)
	return i.Lt(ctx.Const(0, ir.Int32)).Where(i.Add(ctx.Const(float64(size), ir.Int32)), i)
}

// takeRows picks rows: data (B, M, R...) and int indices (B, I...) give
// (B, I..., R...), row idx[b, i] of batch b, by a one-hot mask over M.
func takeRows(data, idx *tensor.Tensor) *tensor.Tensor {
	ctx := idx.Context()
	ds, is := data.Shape(), idx.Shape()
	b, m := ds[0], ds[1]
	rest := ds[2:]
	r, ni := 1, 1
	for _, d := range rest {
		r *= d
	}
	for _, d := range is[1:] {
		ni *= d
	}
	mask := idx.Reshape(b, ni, 1, 1).Cast(ir.Int32).Eq(ctx.Arange(0, float64(m), 1, ir.Int32).Reshape(1, 1, m, 1))
	x := data.Reshape(b, 1, m, r)
	var out *tensor.Tensor
	if x.DType() == ir.Bool {
		out = mask.And(x).Any(false, 2)
	} else {
		out = mask.Where(x, ctx.Const(0, x.DType())).Sum(false, 2).Cast(x.DType())
	}
	return out.Reshape(append(slices.Clone(is), rest...)...)
}

// takeConst picks along axis with indices known on the host: a view when
// they are one index or an arithmetic progression, else a one-hot mask.
func takeConst(x *tensor.Tensor, axis int, idx []int, shape []int) *tensor.Tensor {
	ctx := x.Context()
	s := x.Shape()
	progression := len(idx) > 0
	step := 1
	if len(idx) > 1 {
		step = idx[1] - idx[0]
	}
	for i := 1; i < len(idx); i++ {
		progression = progression && idx[i]-idx[i-1] == step && step > 0
	}
	var out *tensor.Tensor
	if progression {
		items := make([]tensor.IndexItem, len(s))
		for i := range items {
			items[i] = tensor.SliceIndex(nil, nil, nil)
		}
		start, stop := idx[0], idx[0]+step*len(idx)
		items[axis] = tensor.SliceIndex(&start, &stop, &step)
		out = x.Index(items)
	} else {
		vals := make([]float64, len(idx))
		for i, v := range idx {
			vals[i] = float64(v)
		}
		it, _ := ctx.FromFloats(ir.Int32, []int{len(idx)}, vals)
		out = takeAlong(x, axis, it)
	}
	return out.Reshape(shape...)
}

// gatherShape is Gather's output shape.
func gatherShape(data, idx []int, axis int) []int {
	return append(append(slices.Clone(data[:axis]), idx...), data[axis+1:]...)
}

func gatherOp(n *node) *tensor.Tensor {
	x := n.x(0)
	if n.err != nil {
		return x
	}
	axis := n.axis(n.int("axis", 0), x.Ndim())
	if n.err != nil {
		return x
	}
	s := x.Shape()
	size := s[axis]
	is := n.in[1].shape()
	out := gatherShape(s, is, axis)
	if n.in[1].h != nil { // known indices: check them, and use views where possible
		iv := n.ints(1)
		for i, v := range iv {
			if v < -size || v >= size {
				n.fail("index %d is out of range for axis %d of size %d", v, axis, size)
				return x
			}
			if v < 0 {
				iv[i] = v + size
			}
		}
		return takeConst(x, axis, iv, out)
	}
	return takeAlong(x, axis, normIndex(n.x(1), size)).Reshape(out...)
}

// takeAlong picks along axis at the (non-negative) indices idx: the
// result has idx's elements, flattened, in place of axis.
func takeAlong(x *tensor.Tensor, axis int, idx *tensor.Tensor) *tensor.Tensor {
	s := x.Shape()
	pre, r := 1, 1
	for _, d := range s[:axis] {
		pre *= d
	}
	for _, d := range s[axis+1:] {
		r *= d
	}
	m, ni := s[axis], idx.Numel()
	// (pre, M, rest) as (1, M, pre*rest): every index takes a row of M
	data := x.Reshape(pre, m, r).Permute(1, 0, 2).Reshape(1, m, pre*r)
	y := takeRows(data, idx.Reshape(1, ni)) // (1, I, pre*rest)
	return y.Reshape(ni, pre, r).Permute(1, 0, 2).Reshape(append(append(slices.Clone(s[:axis]), ni), s[axis+1:]...)...)
}

func hostGather(n *node, in []*Array) []*Array {
	if len(in) < 2 || in[1] == nil {
		return nil
	}
	a, ia := in[0], in[1]
	if ia.Type.IsFloat() {
		return nil
	}
	axis := n.axis(n.int("axis", 0), len(a.Shape))
	if n.err != nil {
		return nil
	}
	size := a.Shape[axis]
	iv := ia.Ints()
	for i, v := range iv {
		if v < int64(-size) || v >= int64(size) {
			n.fail("index %d is out of range for axis %d of size %d", v, axis, size)
			return nil
		}
		if v < 0 {
			iv[i] += int64(size)
		}
	}
	out := gatherShape(a.Shape, ia.Shape, axis)
	k := len(ia.Shape)
	return []*Array{gatherArray(a, out, func(idx []int) int {
		off := 0
		for j := range axis {
			off = off*a.Shape[j] + idx[j]
		}
		flat := 0
		for j := range k {
			flat = flat*ia.Shape[j] + idx[axis+j]
		}
		off = off*size + int(iv[flat])
		for j := axis + 1; j < len(a.Shape); j++ {
			off = off*a.Shape[j] + idx[j+k-1]
		}
		return off
	})}
}

func gatherElements(n *node) *tensor.Tensor {
	x, idx := n.x(0), n.x(1)
	if n.err != nil {
		return x
	}
	axis := n.axis(n.int("axis", 0), x.Ndim())
	return x.Gather(axis, normIndex(idx, x.Shape()[axis]))
}

// linearIndex turns the last axis of k-tuples into row numbers of the
// flattened (d0*...*dk-1) leading dimensions.
func linearIndex(idx *tensor.Tensor, dims []int) *tensor.Tensor {
	ctx := idx.Context()
	k := len(dims)
	s := idx.Shape()
	var lin *tensor.Tensor
	stride := 1
	for j := k - 1; j >= 0; j-- {
		b := make([][2]int, len(s))
		for i, d := range s {
			b[i] = [2]int{0, d}
		}
		b[len(s)-1] = [2]int{j, j + 1}
		c := normIndex(idx.Shrink(b), dims[j]).Mul(ctx.Const(float64(stride), ir.Int32))
		if lin == nil {
			lin = c
		} else {
			lin = lin.Add(c)
		}
		stride *= dims[j]
	}
	if lin == nil {
		return ctx.Zeros(append(s[:len(s)-1:len(s)-1], 1), ir.Int32)
	}
	return lin
}

// gatherND: indices (..., k) address the first k dimensions after
// batch_dims; the output is indices.shape[:-1] + data.shape[batch+k:].
func gatherND(n *node) *tensor.Tensor {
	x, idx := n.x(0), n.x(1)
	if n.err != nil {
		return x
	}
	bd := n.int("batch_dims", 0)
	ds, is := x.Shape(), idx.Shape()
	if idx.Ndim() < 1 || bd < 0 || bd >= min(len(ds), len(is)) || !slices.Equal(ds[:bd], is[:bd]) {
		n.fail("indices %s and data %s do not fit batch_dims %d", tensor.FormatShape(is), tensor.FormatShape(ds), bd)
		return x
	}
	k := is[len(is)-1]
	if bd+k > len(ds) {
		n.fail("index tuples of %d exceed data %s after %d batch dimensions", k, tensor.FormatShape(ds), bd)
		return x
	}
	b := 1
	for _, d := range ds[:bd] {
		b *= d
	}
	m := 1
	for _, d := range ds[bd : bd+k] {
		m *= d
	}
	lin := linearIndex(idx, ds[bd:bd+k]) // (batch..., I..., 1)
	data := x.Reshape(append([]int{b, m}, ds[bd+k:]...)...)
	inner := is[bd : len(is)-1]
	y := takeRows(data, lin.Reshape(append([]int{b}, inner...)...))
	return y.Reshape(append(slices.Clone(is[:len(is)-1]), ds[bd+k:]...)...)
}

// scatterCombine writes the masked updates into data: mask (U, M) says
// which update u goes to row m; upd (U, R) and data (M, R).
func scatterCombine(n *node, data, upd, mask *tensor.Tensor, uAxis int) *tensor.Tensor {
	dt := data.DType()
	hit := mask.Any(false, uAxis)
	switch red := n.str("reduction", "none"); red {
	case "none", "add":
		var s *tensor.Tensor
		if dt == ir.Bool {
			s = mask.And(upd).Any(false, uAxis)
		} else {
			s = mask.Where(upd, n.ctx.Const(0, dt)).Sum(false, uAxis).Cast(dt)
		}
		if red == "add" {
			return data.Add(s)
		}
		return hit.Where(s, data)
	case "mul":
		return data.Mul(mask.Where(upd, n.ctx.Const(1, dt)).Prod(false, uAxis).Cast(dt))
	case "max":
		return hit.Where(maxOf(data, mask.Where(upd, n.ctx.Const(lowest(dt), dt)).Max(false, uAxis)), data)
	case "min":
		return hit.Where(minOf(data, mask.Where(upd, n.ctx.Const(highest(dt), dt)).Min(false, uAxis)), data)
	default:
		n.fail("unknown reduction %q", red)
		return data
	}
}

// lowest is the smallest value of dt (-inf for floats).
func lowest(dt ir.DType) float64 {
	switch dt {
	case ir.Bool, ir.Uint8:
		return 0
	case ir.Int8:
		return -128
	case ir.Int32:
		return -1 << 31
	}
	return math.Inf(-1)
}

// highest is the largest value of dt (+inf for floats).
func highest(dt ir.DType) float64 {
	switch dt {
	case ir.Bool:
		return 1
	case ir.Uint8:
		return 255
	case ir.Int8:
		return 127
	case ir.Int32:
		return 1<<31 - 1
	}
	return math.Inf(1)
}

// scatterElements: data[..., idx[i], ...] = updates[i] along axis.
func scatterElements(n *node) *tensor.Tensor {
	x, idx, upd := n.x(0), n.x(1), n.x(2)
	if n.err != nil {
		return x
	}
	axis := n.axis(n.int("axis", 0), x.Ndim())
	ds, is := x.Shape(), idx.Shape()
	if !slices.Equal(is, upd.Shape()) || len(is) != len(ds) {
		n.fail("indices %s and updates %s must have one shape of data's rank %d", tensor.FormatShape(is), tensor.FormatShape(upd.Shape()), len(ds))
		return x
	}
	m := ds[axis]
	// Pad indices (with -1: no row) and updates to data's size on the other axes.
	pads := make([][2]int, len(ds))
	for i := range ds {
		if i != axis {
			if is[i] > ds[i] {
				n.fail("indices %s exceed data %s on axis %d", tensor.FormatShape(is), tensor.FormatShape(ds), i)
				return x
			}
			pads[i] = [2]int{0, ds[i] - is[i]}
		}
	}
	id := normIndex(idx, m).Pad(pads, -1)
	up := upd.Pad(pads, 0)
	// mask (..., U at axis, M at axis+1, ...)
	rng := n.ctx.Arange(0, float64(m), 1, ir.Int32).Reshape(append(append(ones(axis+1), m), ones(len(ds)-axis-1)...)...)
	mask := id.Unsqueeze(axis + 1).Eq(rng)
	return scatterCombine(n, x, up.Unsqueeze(axis+1), mask, axis)
}

// scatterND: updates replace (or combine with) the slices of data that the
// index tuples address.
func scatterND(n *node) *tensor.Tensor {
	x, idx, upd := n.x(0), n.x(1), n.x(2)
	if n.err != nil {
		return x
	}
	ds, is := x.Shape(), idx.Shape()
	if len(is) < 1 {
		n.fail("indices must have at least one dimension")
		return x
	}
	k := is[len(is)-1]
	if k > len(ds) || !slices.Equal(upd.Shape(), append(slices.Clone(is[:len(is)-1]), ds[k:]...)) {
		n.fail("updates %s must be indices %s without the last axis, then data %s from axis %d", tensor.FormatShape(upd.Shape()), tensor.FormatShape(is), tensor.FormatShape(ds), k)
		return x
	}
	m := 1
	for _, d := range ds[:k] {
		m *= d
	}
	r := 1
	for _, d := range ds[k:] {
		r *= d
	}
	u := 1
	for _, d := range is[:len(is)-1] {
		u *= d
	}
	lin := linearIndex(idx, ds[:k]).Reshape(u, 1, 1)
	mask := lin.Eq(n.ctx.Arange(0, float64(m), 1, ir.Int32).Reshape(1, m, 1)) // (U, M, 1)
	out := scatterCombine(n, x.Reshape(m, r), upd.Reshape(u, 1, r), mask, 0)
	return out.Reshape(ds...)
}

func oneHot(n *node) *tensor.Tensor {
	idx := n.x(0)
	depth := int(n.scalar(1))
	vals := n.x(2)
	if n.err != nil {
		return idx
	}
	if depth <= 0 || vals.Numel() != 2 {
		n.fail("depth %d must be positive and values hold (off, on)", depth)
		return idx
	}
	r := idx.Ndim() + 1
	axis := n.axis(n.int("axis", -1), r)
	i := idx.Cast(ir.Int32)
	if idx.DType().IsFloat() {
		i = idx.Trunc().Cast(ir.Int32)
	}
	i = i.Lt(n.ctx.Const(0, ir.Int32)).Where(i.Add(n.ctx.Const(float64(depth), ir.Int32)), i)
	rng := n.ctx.Arange(0, float64(depth), 1, ir.Int32).Reshape(append(append(ones(axis), depth), ones(r-axis-1)...)...)
	mask := i.Unsqueeze(axis).Eq(rng)
	off := vals.Shrink([][2]int{{0, 1}}).Reshape()
	on := vals.Shrink([][2]int{{1, 2}}).Reshape()
	return mask.Where(on, off)
}

func topK(n *node) []*tensor.Tensor {
	x := n.x(0)
	var k int
	if n.opset < 10 {
		k = n.int("k", 0)
	} else {
		ks := n.ints(1)
		if n.err == nil && len(ks) != 1 {
			n.fail("K must hold one value")
		}
		if len(ks) == 1 {
			k = ks[0]
		}
	}
	if n.err != nil {
		return nil
	}
	axis := n.axis(n.int("axis", -1), x.Ndim())
	v, i := x.TopK(k, axis, n.int("largest", 1) == 1)
	return []*tensor.Tensor{v, n.index64(i)}
}

// nonZero lists the indices of the nonzero elements, (rank, count) in
// row-major order: the count depends on the data, so it is read.
func nonZero(n *node) *Array {
	a := n.array(0)
	if a == nil {
		return nil
	}
	var hits []int
	for i := range a.Numel() {
		if a.Float(i) != 0 || a.Int(i) != 0 {
			hits = append(hits, i)
		}
	}
	r := len(a.Shape)
	out := NewArray(Int64, []int{r, len(hits)})
	for j, flat := range hits {
		for d := r - 1; d >= 0; d-- {
			out.SetInt(d*len(hits)+j, int64(flat%a.Shape[d]))
			flat /= a.Shape[d]
		}
	}
	return out
}

// compress keeps the slices along axis (or of the flattened input) where
// the condition is true; the condition is read to know the output size.
func compress(n *node) *tensor.Tensor {
	x := n.x(0)
	c := n.array(1)
	if n.err != nil {
		return x
	}
	if !n.hasAttr("axis") {
		x = x.Reshape(x.Numel())
	}
	axis := n.axis(n.int("axis", 0), x.Ndim())
	var keep []int
	for i := range min(c.Numel(), x.Shape()[axis]) {
		if c.Int(i) != 0 {
			keep = append(keep, i)
		}
	}
	shape := x.Shape()
	shape[axis] = len(keep)
	if len(keep) == 0 {
		dt := x.DType()
		return n.ctx.Zeros(shape, dt)
	}
	return takeConst(x, axis, keep, shape)
}

// hostUnique finds the unique values (of the flattened input, or the
// unique slices along axis), sorted or in order of first occurrence, with
// the first indices, the inverse indices and the counts.
func hostUnique(n *node, _ []*Array) []*Array {
	a := n.array(0)
	if a == nil {
		return nil
	}
	shape := []int{a.Numel()}
	axis := 0
	if n.hasAttr("axis") {
		shape = a.Shape
		axis = n.axis(n.int("axis", 0), len(shape))
		if n.err != nil {
			return nil
		}
	}
	m := shape[axis]
	inner := 1
	for _, d := range shape[axis+1:] {
		inner *= d
	}
	outer := a.Numel() / max(m*inner, 1)
	slice := func(i int) []float64 { // the i-th slice along axis
		var v []float64
		for o := range outer {
			for j := range inner {
				v = append(v, a.Float((o*m+i)*inner+j))
			}
		}
		return v
	}
	less := func(x, y []float64) int {
		for i := range x {
			if x[i] != y[i] {
				if x[i] < y[i] {
					return -1
				}
				return 1
			}
		}
		return 0
	}
	var uniq []int // first index of each unique slice
	inverse := make([]int, m)
	counts := []int{}
	for i := range m {
		found := -1
		for u, f := range uniq {
			if less(slice(i), slice(f)) == 0 {
				found = u
				break
			}
		}
		if found < 0 {
			uniq = append(uniq, i)
			counts = append(counts, 0)
			found = len(uniq) - 1
		}
		inverse[i] = found
		counts[found]++
	}
	order := make([]int, len(uniq))
	for i := range order {
		order[i] = i
	}
	if n.int("sorted", 1) == 1 {
		sort.SliceStable(order, func(i, j int) bool { return less(slice(uniq[order[i]]), slice(uniq[order[j]])) < 0 })
	}
	rank := make([]int, len(order))
	for r, u := range order {
		rank[u] = r
	}
	yShape := slices.Clone(shape)
	yShape[axis] = len(uniq)
	y := NewArray(a.Type, yShape)
	sz := a.Type.Size()
	for r, u := range order {
		for o := range outer {
			for j := range inner {
				src := (o*m+uniq[u])*inner + j
				dst := (o*len(uniq)+r)*inner + j
				copy(y.Data[dst*sz:(dst+1)*sz], a.Data[src*sz:(src+1)*sz])
			}
		}
	}
	ints := func(v []int) *Array {
		r := NewArray(Int64, []int{len(v)})
		for i, x := range v {
			r.SetInt(i, int64(x))
		}
		return r
	}
	first, cnt, inv := make([]int, len(order)), make([]int, len(order)), make([]int, m)
	for r, u := range order {
		first[r], cnt[r] = uniq[u], counts[u]
	}
	for i := range m {
		inv[i] = rank[inverse[i]]
	}
	return []*Array{y, ints(first), ints(inv), ints(cnt)}
}

// reverseSequence reverses the first seq_lens[b] elements of each batch
// entry along the time axis: a per-element source index, then a gather.
func reverseSequence(n *node) *tensor.Tensor {
	x, lens := n.x(0), n.x(1)
	if n.err != nil {
		return x
	}
	ta, ba := n.int("time_axis", 0), n.int("batch_axis", 1)
	if x.Ndim() < 2 || (ta != 0 && ta != 1) || ba != 1-ta {
		n.fail("time_axis %d and batch_axis %d must be 0 and 1 in some order", ta, ba)
		return x
	}
	s := x.Shape()
	t := s[ta]
	shape := ones(x.Ndim())
	shape[ta] = t
	tt := n.ctx.Arange(0, float64(t), 1, ir.Int32).Reshape(shape...)
	lshape := ones(x.Ndim())
	lshape[ba] = s[ba]
	l := lens.Cast(ir.Int32).Reshape(lshape...)
	src := tt.Lt(l).Where(l.Sub(n.ctx.Const(1, ir.Int32)).Sub(tt), tt).Expand(s...)
	return x.Gather(ta, src)
}

// maxUnpool writes each value at its flat index (per image and channel) of
// a zero output.
func maxUnpool(n *node) *tensor.Tensor {
	x, idx := n.x(0), n.x(1)
	if n.err != nil {
		return x
	}
	s := x.Shape()
	if x.Ndim() < 3 {
		n.fail("input %s must be (N, C, spatial...)", tensor.FormatShape(s))
		return x
	}
	kernel := n.intList("kernel_shape", nil)
	d := len(s) - 2
	strides := n.intList("strides", slices.Repeat([]int{1}, d))
	pads := n.intList("pads", make([]int, 2*d))
	if len(kernel) != d || len(strides) != d || len(pads) != 2*d {
		n.fail("kernel %v, strides %v and pads %v do not fit %d spatial dimensions", kernel, strides, pads, d)
		return x
	}
	// The indices address the default output (from the kernel, strides and
	// pads); an output_shape larger than that pads it at the end of each
	// spatial dimension, as onnxruntime and ONNX's reference do.
	out := slices.Clone(s)
	for i := range d {
		out[2+i] = (s[2+i]-1)*strides[i] + kernel[i] - pads[i] - pads[i+d]
	}
	final := out
	if n.has(2) {
		os := n.ints(2)
		if n.err != nil {
			return x
		}
		if len(os) != len(s) || os[0] != s[0] || os[1] != s[1] {
			n.fail("output_shape %v does not fit input %s", os, tensor.FormatShape(s))
			return x
		}
		for i := range d {
			if os[2+i] < out[2+i] {
				n.fail("output_shape %v is smaller than the default output %v", os, out)
				return x
			}
		}
		final = os
	}
	in, o := 1, 1
	for i := range d {
		in *= s[2+i]
		o *= out[2+i]
	}
	planes := s[0] * s[1]
	// indices are flat over (N, C, spatial): subtract each plane's start
	base := n.ctx.Arange(0, float64(planes), 1, ir.Int32).Mul(n.ctx.Const(float64(o), ir.Int32)).Reshape(planes, 1)
	local := idx.Cast(ir.Int32).Reshape(planes, in).Sub(base)
	mask := local.Reshape(planes, in, 1).Eq(n.ctx.Arange(0, float64(o), 1, ir.Int32).Reshape(1, 1, o))
	y := mask.Where(x.Reshape(planes, in, 1), n.ctx.Const(0, x.DType())).Sum(false, 1).Cast(x.DType()).Reshape(out...)
	grow := make([][2]int, len(out))
	for i := range d {
		grow[2+i] = [2]int{0, final[2+i] - out[2+i]}
	}
	return y.Pad(grow, 0)
}
