package onnx

import (
	"tgc/pkg/tensor"
)

// A convolution computed as a matrix product (convAsMatmul) makes its
// output as rows: (N, R, C), output position by position with the channels
// contiguous (R is the positions rounded up to a block of 8). The
// elementwise operators that usually follow (BatchNormalization, Relu, the
// residual Add) continue on the rows, so the scheduler makes them the
// product's epilogue (applied to its accumulator vectors before the
// store); a MaxPool pools them channels last into rows again; any other
// consumer reads the value as (N, C, *out) through a view of the stored
// rows.
type rowsForm struct {
	t      *tensor.Tensor // (N, R, C), or (1, N·P, C) for a batch's rows made as one product; not yet stored
	n      int            // the batch N
	p      int            // output positions (the first p of the R rows)
	out    []int          // the spatial output shape
	stored *tensor.Tensor // t stored, once a consumer asked for (N, C, *out)
}

// with is the same rows form for the rows t computed from these rows
// (an elementwise function of them).
func (r *rowsForm) with(t *tensor.Tensor) *rowsForm {
	return &rowsForm{t: t, n: r.n, p: r.p, out: r.out}
}

// rowsT is the rows to continue on: stored once they are, so a value used
// twice (a residual connection's shortcut) is not recomputed by the second
// user (which, block after block, would inline the whole chain).
func (r *rowsForm) rowsT() *tensor.Tensor {
	if r.stored != nil {
		return r.stored
	}
	return r.t
}

// nchw stores the rows and views them as (N, C, *out).
func (r *rowsForm) nchw() *tensor.Tensor {
	s := r.t.Shape()
	if r.stored == nil {
		r.stored = r.t.Contiguous()
	}
	y := r.stored
	if s[0] != r.n { // one product over the batch's rows
		y = y.Reshape(r.n, r.p, s[2])
		s = y.Shape()
	}
	if s[1] != r.p {
		y = y.Shrink([][2]int{{0, s[0]}, {0, r.p}, {0, s[2]}})
	}
	y = y.Reshape(append(append([]int{s[0]}, r.out...), s[2])...)
	back := []int{0, len(r.out) + 1}
	for i := range r.out {
		back = append(back, 1+i)
	}
	return y.Permute(back...)
}

// withRows makes output 0 a value in rows form: its (N, C, *out) tensor is
// made (and the rows stored) only when a consumer asks for it.
func (n *node) withRows(r *rowsForm) *tensor.Tensor {
	n.rows = r
	return nil
}

// rowsIn returns input i's rows form (nil when it has none).
func (n *node) rowsIn(i int) *rowsForm {
	if !n.has(i) {
		return nil
	}
	return n.in[i].rows
}

// perChannel views a tensor of c elements (BatchNormalization's
// statistics) as (1, 1, C) for rows.
func perChannel(t *tensor.Tensor, c int) *tensor.Tensor {
	if t.Numel() != c {
		return nil
	}
	return t.Reshape(1, 1, c)
}

// broadcastChannel views an operand that broadcasts against (N, C, *out)
// along the channels alone ((C, 1, 1) or (1, C, 1, 1) for 2-D outputs) as
// (1, 1, C); nil when it is not one.
func broadcastChannel(t *tensor.Tensor, c, spatial int) *tensor.Tensor {
	s := t.Shape()
	if t.Numel() != c || len(s) < spatial+1 || len(s) > spatial+2 || s[len(s)-spatial-1] != c {
		return nil
	}
	return t.Reshape(1, 1, c)
}
