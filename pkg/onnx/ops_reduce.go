package onnx

import (
	"math"
	"slices"

	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// Reductions, arg-reductions, scans and the softmax family.

var reduceOps = map[string]opDef{
	"ReduceSum":       {since: 1, run: one(reduceOp(func(x *tensor.Tensor, ax []int) *tensor.Tensor { return x.Sum(true, ax...) })), host: hostReduce(func(a, b float64) float64 { return a + b }, 0)},
	"ReduceMean":      {since: 1, run: one(reduceOp(func(x *tensor.Tensor, ax []int) *tensor.Tensor { return x.Mean(true, ax...) }))},
	"ReduceMax":       {since: 1, run: one(reduceOp(func(x *tensor.Tensor, ax []int) *tensor.Tensor { return x.Max(true, ax...) })), host: hostReduce(math.Max, math.Inf(-1))},
	"ReduceMin":       {since: 1, run: one(reduceOp(func(x *tensor.Tensor, ax []int) *tensor.Tensor { return x.Min(true, ax...) })), host: hostReduce(math.Min, math.Inf(1))},
	"ReduceProd":      {since: 1, run: one(reduceOp(func(x *tensor.Tensor, ax []int) *tensor.Tensor { return x.Prod(true, ax...) })), host: hostReduce(func(a, b float64) float64 { return a * b }, 1)},
	"ReduceL1":        {since: 1, run: one(reduceOp(func(x *tensor.Tensor, ax []int) *tensor.Tensor { return x.Abs().Sum(true, ax...) }))},
	"ReduceL2":        {since: 1, run: one(reduceOp(func(x *tensor.Tensor, ax []int) *tensor.Tensor { return x.Mul(x).Sum(true, ax...).Sqrt() }))},
	"ReduceSumSquare": {since: 1, run: one(reduceOp(func(x *tensor.Tensor, ax []int) *tensor.Tensor { return x.Mul(x).Sum(true, ax...) }))},
	"ReduceLogSum":    {since: 1, run: one(reduceOp(func(x *tensor.Tensor, ax []int) *tensor.Tensor { return x.Sum(true, ax...).Log() }))},
	"ReduceLogSumExp": {since: 1, run: one(reduceOp(func(x *tensor.Tensor, ax []int) *tensor.Tensor { return x.Logsumexp(true, ax...) }))},
	"ArgMax":          {since: 1, run: one(argOp(false))},
	"ArgMin":          {since: 1, run: one(argOp(true))},
	"CumSum":          {since: 11, run: one(cumSum)},
	"Softmax":         {since: 1, run: one(softmaxOp(func(x *tensor.Tensor, a int) *tensor.Tensor { return x.Softmax(a) }))},
	"LogSoftmax":      {since: 1, run: one(softmaxOp(func(x *tensor.Tensor, a int) *tensor.Tensor { return x.LogSoftmax(a) }))},
	"Hardmax":         {since: 1, run: one(softmaxOp(hardmax))},
}

// reduceAxes resolves a reduce's axes: the attribute, or (ReduceSum from
// opset 13) the optional second input. ok is false for the identity
// (no axes and noop_with_empty_axes).
func (n *node) reduceAxes(rank int) (axes []int, ok bool) {
	var as []int
	given := false
	if n.proto.GetOpType() == "ReduceSum" && n.opset >= 13 {
		if n.has(1) {
			as = n.ints(1)
			given = len(as) > 0
		}
	} else if n.hasAttr("axes") {
		as, given = n.intList("axes", nil), true
	}
	if !given || len(as) == 0 {
		if n.int("noop_with_empty_axes", 0) == 1 {
			return nil, false
		}
		return allAxesOf(rank), true
	}
	return n.axes(as, rank), true
}

func allAxesOf(r int) []int {
	a := make([]int, r)
	for i := range a {
		a[i] = i
	}
	return a
}

// reduceOp applies f (which keeps the reduced dimensions) and drops them
// unless keepdims; the result keeps the input's type.
func reduceOp(f func(x *tensor.Tensor, axes []int) *tensor.Tensor) func(n *node) *tensor.Tensor {
	return func(n *node) *tensor.Tensor {
		x := n.x(0)
		if n.err != nil {
			return x
		}
		axes, ok := n.reduceAxes(x.Ndim())
		if !ok || n.err != nil {
			return x
		}
		r := f(x, axes).Cast(x.DType())
		if n.int("keepdims", 1) == 1 {
			return r
		}
		return r.Reshape(dropAxes(x.Shape(), axes)...)
	}
}

func dropAxes(shape, axes []int) []int {
	var out []int
	for i, d := range shape {
		if !slices.Contains(axes, i) {
			out = append(out, d)
		}
	}
	return out
}

// hostReduce folds a reduce on the host (for shape arithmetic such as the
// element count of a shape).
func hostReduce(f func(a, b float64) float64, init float64) func(n *node, in []*Array) []*Array {
	return func(n *node, in []*Array) []*Array {
		x := in[0]
		op := n.proto.GetOpType()
		if !x.Type.IsFloat() && (op == "ReduceSum" || op == "ReduceProd") {
			return hostReduceInt(n, in) // exact for int64
		}
		axes, ok := n.reduceAxes(len(x.Shape))
		if !ok || n.err != nil {
			return nil
		}
		return []*Array{hostReduceWith(n, x, axes, func(vals []float64) float64 {
			acc := init
			for _, v := range vals {
				acc = f(acc, v)
			}
			return acc
		})}
	}
}

// hostReduceInt folds sums and products of int64 exactly.
func hostReduceInt(n *node, in []*Array) []*Array {
	x := in[0]
	axes, ok := n.reduceAxes(len(x.Shape))
	if !ok || n.err != nil || x.Type == Uint64 {
		return nil
	}
	prod := n.proto.GetOpType() == "ReduceProd"
	outShape := slices.Clone(x.Shape)
	for _, a := range axes {
		outShape[a] = 1
	}
	r := NewArray(x.Type, outShape)
	acc := make([]int64, r.Numel())
	if prod {
		for i := range acc {
			acc[i] = 1
		}
	}
	forEachReduced(x.Shape, axes, func(src, dst int) {
		if prod {
			acc[dst] *= x.Int(src)
		} else {
			acc[dst] += x.Int(src)
		}
	})
	for i, v := range acc {
		r.SetInt(i, v)
	}
	if n.int("keepdims", 1) == 0 {
		r.Shape = dropAxes(x.Shape, axes)
	}
	return []*Array{r}
}

func hostReduceWith(n *node, x *Array, axes []int, f func([]float64) float64) *Array {
	outShape := slices.Clone(x.Shape)
	for _, a := range axes {
		outShape[a] = 1
	}
	r := NewArray(x.Type, outShape)
	groups := make([][]float64, r.Numel())
	forEachReduced(x.Shape, axes, func(src, dst int) {
		groups[dst] = append(groups[dst], x.Float(src))
	})
	for i, g := range groups {
		r.SetFloat(i, f(g))
	}
	if n.int("keepdims", 1) == 0 {
		r.Shape = dropAxes(x.Shape, axes)
	}
	return r
}

// forEachReduced calls f with each element's flat index and the flat index
// of the output it reduces into.
func forEachReduced(shape, axes []int, f func(src, dst int)) {
	idx := make([]int, len(shape))
	total := 1
	for _, d := range shape {
		total *= d
	}
	for src := range total {
		dst := 0
		for j, x := range idx {
			if slices.Contains(axes, j) {
				x = 0
			}
			size := shape[j]
			if slices.Contains(axes, j) {
				size = 1
			}
			dst = dst*size + x
		}
		f(src, dst)
		for j := len(shape) - 1; j >= 0; j-- {
			idx[j]++
			if idx[j] < shape[j] {
				break
			}
			idx[j] = 0
		}
	}
}

// argOp is ArgMax/ArgMin along attribute axis: int64 indices, the first
// extreme (or the last with select_last_index).
func argOp(isMin bool) func(n *node) *tensor.Tensor {
	return func(n *node) *tensor.Tensor {
		x := n.x(0)
		if n.err != nil {
			return x
		}
		axis := n.axis(n.int("axis", 0), x.Ndim())
		keep := n.int("keepdims", 1) == 1
		last := n.int("select_last_index", 0) == 1
		if last {
			x = x.Flip(axis)
		}
		var r *tensor.Tensor
		if isMin {
			r = x.Argmin(&axis, keep)
		} else {
			r = x.Argmax(&axis, keep)
		}
		if last {
			r = n.ctx.Const(float64(x.Shape()[axis]-1), r.DType()).Sub(r)
		}
		return n.index64(r)
	}
}

// index64 casts indices to ONNX's int64.
func (n *node) index64(t *tensor.Tensor) *tensor.Tensor { return t.Cast(ir.Int64) }

func cumSum(n *node) *tensor.Tensor {
	x := n.x(0)
	axis := 0
	if ax := n.ints(1); len(ax) == 1 {
		axis = n.axis(ax[0], x.Ndim())
	} else if n.err == nil {
		n.fail("axis must hold one value")
	}
	if n.err != nil {
		return x
	}
	rev := n.int("reverse", 0) == 1
	if rev {
		x = x.Flip(axis)
	}
	r := x.Cumsum(axis).Cast(x.DType())
	if n.int("exclusive", 0) == 1 { // shift by one: the sum of the elements before
		pads := make([][2]int, x.Ndim())
		pads[axis] = [2]int{1, 0}
		bounds := make([][2]int, x.Ndim())
		for i, d := range x.Shape() {
			bounds[i] = [2]int{0, d}
		}
		r = r.Pad(pads, 0).Shrink(bounds)
	}
	if rev {
		r = r.Flip(axis)
	}
	return r
}

// softmaxOp applies f along one axis: from opset 13 attribute axis
// (default -1); before it the input is seen as 2-D, (dims before axis,
// dims from axis on), axis defaulting to 1.
func softmaxOp(f func(x *tensor.Tensor, axis int) *tensor.Tensor) func(n *node) *tensor.Tensor {
	return func(n *node) *tensor.Tensor {
		x := n.x(0)
		if n.err != nil {
			return x
		}
		if n.opset >= 13 {
			return f(x, n.axis(n.int("axis", -1), x.Ndim()))
		}
		axis := n.axis(n.int("axis", 1), x.Ndim())
		shape := x.Shape()
		outer, inner := 1, 1
		for i, d := range shape {
			if i < axis {
				outer *= d
			} else {
				inner *= d
			}
		}
		return f(x.Reshape(outer, inner), 1).Reshape(shape...)
	}
}

// hardmax is 1 at the first maximum along axis, 0 elsewhere.
func hardmax(x *tensor.Tensor, axis int) *tensor.Tensor {
	ctx := x.Context()
	idx := x.Argmax(&axis, true)
	n := x.Shape()[axis]
	rng := ctx.Arange(0, float64(n), 1, ir.Int32).Reshape(append([]int{n}, ones(x.Ndim()-axis-1)...)...)
	return idx.Eq(rng).Cast(x.DType())
}
