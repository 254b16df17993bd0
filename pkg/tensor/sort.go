package tensor

import (
	"math"

	"tgc/pkg/ir"
)

// Sorting without data-dependent control flow: an element's rank along an
// axis is the number of elements that come before it (greater, for a
// descending order, or equal and at a lower index, so equal values keep
// their order), one reduce over an n×n comparison; the element of rank r is
// then picked with a one-hot mask. O(n²) work per row, all of it parallel.

// ranks returns the rank of each element along the last axis (int32).
func (t *Tensor) ranks(descending bool) *Tensor {
	n := t.node.Shape[t.Ndim()-1]
	xi := t.Unsqueeze(-1) // (..., n, 1): the element ranked
	xj := t.Unsqueeze(-2) // (..., 1, n): the others
	var ahead *Tensor
	if descending {
		ahead = xj.Gt(xi)
	} else {
		ahead = xj.Lt(xi)
	}
	r := t.node.ctx.idxRange(n)
	lower := r.Reshape(1, n).Lt(r.Reshape(n, 1)) // j < i
	return ahead.Or(xj.Eq(xi).And(lower)).Sum(false, -1)
}

// pickRanks returns, for r in [0, k), the element of v whose rank is r.
func pickRanks(v, rank *Tensor, k int) *Tensor {
	mask := rank.Unsqueeze(-1).Eq(v.node.ctx.idxRange(k)) // (..., n, k)
	x := v.Unsqueeze(-1)
	if v.DType().IsFloat() {
		return mask.Where(x, v.Const(math.Inf(-1), v.DType())).Max(false, -2) // keeps -0.0
	}
	return mask.Where(x, v.Const(0, v.DType())).Sum(false, -2).Cast(v.DType())
}

// TopK returns the k largest (or smallest) elements along dim, in order,
// and their indices (int32); among equal values the lower index comes
// first. sorted=false gives the same order (it is free here).
func (t *Tensor) TopK(k, dim int, largest bool) (values, indices *Tensor) {
	if t.err != nil {
		return t, t
	}
	d, e := resolveDim("topk", dim, t.Ndim())
	if e != nil {
		return e, e
	}
	if t.Ndim() == 0 {
		return errorf("topk", "needs at least one dimension"), nil
	}
	n := t.node.Shape[d]
	if k < 0 || k > n {
		e := errorf("topk", "k=%d is out of range for dimension %d of size %d", k, d, n)
		return e, e
	}
	x := t.Transpose(d, -1)
	rank := x.ranks(largest)
	idx := t.node.ctx.idxRange(n).Reshape(append(ones(x.Ndim()-1), n)...).Expand(x.node.Shape...)
	values = pickRanks(x, rank, k).Transpose(d, -1)
	indices = pickRanks(idx, rank, k).Transpose(d, -1)
	return values, indices
}

// Sort sorts along dim (ascending unless descending), stably, returning
// the values and the indices (int32) they came from.
func (t *Tensor) Sort(dim int, descending bool) (values, indices *Tensor) {
	if t.err != nil {
		return t, t
	}
	d, e := resolveDim("sort", dim, t.Ndim())
	if e != nil {
		return e, e
	}
	if t.Ndim() == 0 {
		return t, t.Const(0, ir.Int32)
	}
	return t.TopK(t.node.Shape[d], d, descending)
}
