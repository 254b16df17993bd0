package tensor

import (
	"fmt"
	"slices"
)

// Python-style basic indexing as views: shrink to the selected range, flip
// for negative steps, and take every step-th element by padding to a
// multiple of the step, reshaping to (n, step) and keeping column 0.

// IndexKind says what one entry of an index is.
type IndexKind uint8

const (
	IndexInt      IndexKind = iota // t[i]: selects one element, drops the dim
	IndexSlice                     // t[start:stop:step]
	IndexNewAxis                   // t[None]: inserts a size-1 dim
	IndexEllipsis                  // t[...]: as many full slices as needed
)

// IndexItem is one entry of an index. For slices a nil bound is Python's
// None.
type IndexItem struct {
	Kind              IndexKind
	Int               int
	Start, Stop, Step *int
}

// IntIndex is t[i].
func IntIndex(i int) IndexItem { return IndexItem{Kind: IndexInt, Int: i} }

// SliceIndex is t[start:stop:step]; nil bounds are None.
func SliceIndex(start, stop, step *int) IndexItem {
	return IndexItem{Kind: IndexSlice, Start: start, Stop: stop, Step: step}
}

// NewAxisIndex is t[None].
func NewAxisIndex() IndexItem { return IndexItem{Kind: IndexNewAxis} }

// EllipsisIndex is t[...].
func EllipsisIndex() IndexItem { return IndexItem{Kind: IndexEllipsis} }

func (it IndexItem) String() string {
	opt := func(p *int) string {
		if p == nil {
			return ""
		}
		return fmt.Sprint(*p)
	}
	switch it.Kind {
	case IndexInt:
		return fmt.Sprint(it.Int)
	case IndexNewAxis:
		return "None"
	case IndexEllipsis:
		return "..."
	}
	s := opt(it.Start) + ":" + opt(it.Stop)
	if it.Step != nil {
		s += ":" + opt(it.Step)
	}
	return s
}

// sliceIndices is Python's slice.indices(size) plus the element count.
func sliceIndices(it IndexItem, size int) (start, step, n int) {
	step = 1
	if it.Step != nil {
		step = *it.Step
	}
	lower, upper := 0, size
	if step < 0 {
		lower, upper = -1, size-1
	}
	clamp := func(p *int, def int) int {
		if p == nil {
			return def
		}
		v := *p
		if v < 0 {
			v += size
			if v < lower {
				v = lower
			}
		} else if v > upper {
			v = upper
		}
		return v
	}
	if step > 0 {
		start = clamp(it.Start, lower)
		if stop := clamp(it.Stop, upper); stop > start {
			n = (stop - start + step - 1) / step
		}
	} else {
		start = clamp(it.Start, upper)
		if stop := clamp(it.Stop, lower); start > stop {
			n = (start - stop - step - 1) / -step
		}
	}
	return start, step, n
}

// Index applies a Python basic index (ints, slices, None, one Ellipsis).
// The result is a view; int entries drop their dimension.
func (t *Tensor) Index(idx []IndexItem) *Tensor {
	if t.err != nil {
		return t
	}
	consumed, ellipsis := 0, -1
	for i, it := range idx {
		switch it.Kind {
		case IndexInt, IndexSlice:
			consumed++
		case IndexEllipsis:
			if ellipsis >= 0 {
				return errorf("index", "an index can only have a single ellipsis ('...')")
			}
			ellipsis = i
		}
	}
	if consumed > t.Ndim() {
		return errorf("index", "too many indices for tensor of shape %s: %d-dimensional, but %d were indexed", FormatShape(t.node.Shape), t.Ndim(), consumed)
	}
	// expand the ellipsis (or a missing tail) into full slices
	full := IndexItem{Kind: IndexSlice}
	fill := slices.Repeat([]IndexItem{full}, t.Ndim()-consumed)
	items := slices.Clone(idx)
	if ellipsis >= 0 {
		items = slices.Replace(items, ellipsis, ellipsis+1, fill...)
	} else {
		items = append(items, fill...)
	}

	shape := t.node.Shape
	bounds := make([][2]int, t.Ndim())
	var flips []int
	steps := make([]int, t.Ndim()) // |step| per dim, 1 when there is nothing to skip
	var out []int                  // final shape
	dim := 0
	for _, it := range items {
		switch it.Kind {
		case IndexNewAxis:
			out = append(out, 1)
			continue
		case IndexInt:
			size, i := shape[dim], it.Int
			if i < -size || i >= size {
				return errorf("index", "index %d is out of bounds for dimension %d with size %d (shape %s)", i, dim, size, FormatShape(shape))
			}
			if i < 0 {
				i += size
			}
			bounds[dim], steps[dim] = [2]int{i, i + 1}, 1
		case IndexSlice:
			if it.Step != nil && *it.Step == 0 {
				return errorf("index", "slice step cannot be zero")
			}
			start, step, n := sliceIndices(it, shape[dim])
			steps[dim] = 1
			switch {
			case n == 0:
				bounds[dim] = [2]int{0, 0}
			case step > 0:
				bounds[dim] = [2]int{start, start + (n-1)*step + 1}
				steps[dim] = step
			default:
				bounds[dim] = [2]int{start + (n-1)*step, start + 1}
				steps[dim] = -step
				flips = append(flips, dim)
			}
			out = append(out, n)
		}
		dim++
	}
	x := t.Shrink(bounds).Flip(flips...)
	if slices.ContainsFunc(steps, func(s int) bool { return s > 1 }) {
		// pad each strided dim from (n-1)*s+1 to n*s, split it as (n, s),
		// keep column 0
		pads := make([][2]int, x.Ndim())
		var split []int
		var keep [][2]int
		var kept []int
		for d, s := range x.node.Shape {
			if steps[d] == 1 {
				split, keep, kept = append(split, s), append(keep, [2]int{0, s}), append(kept, s)
				continue
			}
			n := (s + steps[d] - 1) / steps[d]
			pads[d] = [2]int{0, n*steps[d] - s}
			split = append(split, n, steps[d])
			keep = append(keep, [2]int{0, n}, [2]int{0, 1})
			kept = append(kept, n)
		}
		x = x.padZero(pads).Reshape(split...).Shrink(keep).Reshape(kept...)
	}
	return x.Reshape(out...)
}

// Gather picks, along dim, the elements of t at the positions in index
// (same number of dimensions as t; every other dimension no larger than
// t's). It compares index with 0..n-1 (a one-hot mask) and sums the masked
// values, so it is one fused reduce and needs no data-dependent loads.
func (t *Tensor) Gather(dim int, index *Tensor) *Tensor {
	if e := firstErr(t, index); e != nil {
		return e
	}
	d, e := normAxis("gather", dim, t.Ndim())
	if e != nil {
		return e
	}
	if index.Ndim() != t.Ndim() {
		return errorf("gather", "index %s must have as many dimensions as the input %s", FormatShape(index.node.Shape), FormatShape(t.node.Shape))
	}
	if !index.DType().IsInt() {
		return errorf("gather", "index must be integers, got %s", index.DType())
	}
	bounds := make([][2]int, t.Ndim())
	for i, s := range index.node.Shape {
		if i != d && s > t.node.Shape[i] {
			return errorf("gather", "index %s is larger than the input %s in dimension %d", FormatShape(index.node.Shape), FormatShape(t.node.Shape), i)
		}
		bounds[i] = [2]int{0, s}
	}
	bounds[d] = [2]int{0, t.node.Shape[d]}
	// x: (..., 1, ..., n) with dim's values moved to a new last axis
	x := t.Shrink(bounds).Unsqueeze(-1).Transpose(-1, d)
	mask := index.oneHotAlong(t.node.Shape[d])
	return mask.Where(x, t.Const(0, t.DType())).Sum(false, -1).Cast(t.DType())
}
