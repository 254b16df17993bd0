package tensor

import (
	"math"
	"slices"

	"tgc/pkg/ir"
)

// Reductions built on the two reduce primitives (SUM and MAX), with
// tinygrad's formulas and dtype rules.

// resolveDim is tinygrad's _resolve_dim: normAxis, except that a 0-d
// tensor accepts -1 as well as 0 (both mean its one implicit position).
func resolveDim(op string, d, ndim int) (int, *Tensor) {
	if ndim == 0 && (d == 0 || d == -1) {
		return 0, nil
	}
	return normAxis(op, d, ndim)
}

// reducedAxes normalizes axes (nil = all) for op, sorted, without
// duplicates, and never nil. A 0-d tensor has nothing to reduce: its axes
// are validated and dropped.
func (t *Tensor) reducedAxes(op string, axes []int) ([]int, *Tensor) {
	if axes == nil {
		return allAxes(t.Ndim()), nil
	}
	out := []int{}
	for _, a := range axes {
		a, e := resolveDim(op, a, t.Ndim())
		if e != nil {
			return nil, e
		}
		if t.Ndim() == 0 {
			continue
		}
		if e != nil {
			return nil, e
		}
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	slices.Sort(out)
	return out, nil
}

// reducedCount is the number of elements each output of a reduce over axes
// combines.
func (t *Tensor) reducedCount(axes []int) int {
	n := 1
	for _, a := range axes {
		if a < t.Ndim() {
			n *= t.node.Shape[a]
		}
	}
	return n
}

// inverse maps the order of values onto its reverse, so that max of the
// inverse is the inverse of min: -x for floats, ~x for ints (no overflow at
// the minimum), not x for bools.
func (t *Tensor) inverse() *Tensor {
	switch dt := t.DType(); {
	case dt.IsFloat():
		return t.Neg()
	case dt == ir.Bool:
		return t.LogicalNot()
	default: // all ones: ~x
		return t.Xor(t.ConstInt(-1, dt))
	}
}

// Min reduces with min over axes (all when none given).
func (t *Tensor) Min(keepdim bool, axes ...int) *Tensor {
	if t.err != nil {
		return t
	}
	norm, e := t.reducedAxes("min", axes)
	if e != nil {
		return e
	}
	return t.inverse().Max(keepdim, norm...).inverse()
}

// Any is true where some element along axes is nonzero.
func (t *Tensor) Any(keepdim bool, axes ...int) *Tensor {
	if t.err != nil {
		return t
	}
	norm, e := t.reducedAxes("any", axes)
	if e != nil {
		return e
	}
	return t.Cast(ir.Bool).Max(keepdim, norm...)
}

// All is true where every element along axes is nonzero.
func (t *Tensor) All(keepdim bool, axes ...int) *Tensor {
	if t.err != nil {
		return t
	}
	norm, e := t.reducedAxes("all", axes)
	if e != nil {
		return e
	}
	return t.LogicalNot().Any(keepdim, norm...).LogicalNot()
}

// Mean is sum/count. Ints give float32; float16 accumulates in float32.
func (t *Tensor) Mean(keepdim bool, axes ...int) *Tensor {
	if t.err != nil {
		return t
	}
	norm, e := t.reducedAxes("mean", axes)
	if e != nil {
		return e
	}
	out := t.DType()
	if !out.IsFloat() {
		out = ir.Float32
	}
	x := t.Cast(t.DType().Compute())
	s := x.Sum(keepdim, norm...)
	// 0 elements give 0/0 = NaN, like numpy and tinygrad.
	return s.Div(s.Const(float64(t.reducedCount(norm)), ir.Float32)).Cast(out)
}

// Var is the variance sum((x-mean)^2)/max(0, n-correction); tinygrad's
// default correction is 1 (Bessel's).
func (t *Tensor) Var(keepdim bool, correction int, axes ...int) *Tensor {
	if t.err != nil {
		return t
	}
	norm, e := t.reducedAxes("var", axes)
	if e != nil {
		return e
	}
	sq := t.Sub(t.Mean(true, norm...)).Square()
	n := max(0, t.reducedCount(norm)-correction)
	return sq.Sum(keepdim, norm...).Div(sq.Const(float64(n), sq.DType()))
}

// Std is sqrt(var).
func (t *Tensor) Std(keepdim bool, correction int, axes ...int) *Tensor {
	return t.Var(keepdim, correction, axes...).Sqrt()
}

// Argmax is the index of the first maximum along axis (nil = the flattened
// tensor, keepdim ignored, as in tinygrad), as int32 (int64 when the axis
// has more than 2^31-1 elements). It compares with the
// max and takes the max of (n - index) where equal, so the first wins.
func (t *Tensor) Argmax(axis *int, keepdim bool) *Tensor {
	if t.err != nil {
		return t
	}
	if axis == nil {
		zero := 0
		return t.Flatten(0, -1).Argmax(&zero, false)
	}
	a, e := resolveDim("argmax", *axis, t.Ndim())
	if e != nil {
		return e
	}
	if t.Ndim() == 0 {
		return t.Const(0, ir.Int32)
	}
	n := t.node.Shape[a]
	if n == 0 {
		return errorf("argmax", "cannot take the argmax of an empty dimension %d of shape %s", a, FormatShape(t.node.Shape))
	}
	idt := ir.Int32 // tinygrad's; int64 when the indices do not fit
	if n > math.MaxInt32 {
		idt = ir.Int64
	}
	isMax := t.Eq(t.Max(true, a))
	// reversed index n, n-1, ..., 1 along axis, broadcast over the rest
	rev := t.ConstInt(int64(n), idt).Sub(t.node.ctx.idxRangeOf(n, idt))
	rev = rev.Reshape(append([]int{n}, ones(t.Ndim()-a-1)...)...)
	best := isMax.Cast(idt).Mul(rev).Max(keepdim, a)
	return t.ConstInt(int64(n), idt).Sub(best)
}

// Argmin is the argmax of the inverse.
func (t *Tensor) Argmin(axis *int, keepdim bool) *Tensor {
	if t.err != nil {
		return t
	}
	if axis != nil {
		if _, e := resolveDim("argmin", *axis, t.Ndim()); e != nil {
			return e
		}
	}
	return t.inverse().Argmax(axis, keepdim)
}

// ones is n ones, for reshapes.
func ones(n int) []int {
	s := make([]int, max(n, 0))
	for i := range s {
		s[i] = 1
	}
	return s
}

// softmaxParts returns x - max(x) and its exp and the sum of the exp.
func (t *Tensor) softmaxParts(op string, axis int) (m, e, s *Tensor) {
	norm, err := t.reducedAxes(op, []int{axis})
	if err != nil {
		return err, err, err
	}
	m = t.Sub(t.Max(true, norm...))
	e = m.Exp()
	return m, e, e.Sum(true, norm...)
}

// Softmax is exp(x-max)/sum(exp(x-max)) along axis (tinygrad default -1),
// computed as exp(x-max) * (1/sum), as tinygrad divides: one reciprocal
// per row instead of a division per element (the division was a third
// of a fused softmax's time).
func (t *Tensor) Softmax(axis int) *Tensor {
	if t.err != nil {
		return t
	}
	_, e, s := t.softmaxParts("softmax", axis)
	return e.Mul(s.Reciprocal())
}

// LogSoftmax is (x-max) - log(sum(exp(x-max))) along axis.
func (t *Tensor) LogSoftmax(axis int) *Tensor {
	if t.err != nil {
		return t
	}
	m, _, s := t.softmaxParts("log_softmax", axis)
	return m.Sub(s.Log())
}

// Logsumexp is log(sum(exp(x))) over axes (all when none given), computed
// around the max; an infinite max is replaced by 0 so that all -inf gives
// -inf instead of NaN.
func (t *Tensor) Logsumexp(keepdim bool, axes ...int) *Tensor {
	if t.err != nil {
		return t
	}
	norm, e := t.reducedAxes("logsumexp", axes)
	if e != nil {
		return e
	}
	m := t.Max(true, norm...)
	m = m.Isinf().Where(m.Const(0, m.DType()), m)
	r := t.Sub(m).Exp().Sum(keepdim, norm...).Log()
	return r.Add(m.Reshape(r.Shape()...))
}

// identityValue is the value that does not change a reduce: 0 for sums,
// the dtype's minimum for max.
func identityValue(op ir.Op, dt ir.DType) float64 {
	if op == ir.OpSum {
		return 0
	}
	switch dt {
	case ir.Bool, ir.Uint8:
		return 0
	case ir.Int8:
		return math.MinInt8
	case ir.Int32:
		return math.MinInt32
	}
	return math.Inf(-1)
}

// cumalu is tinygrad's _cumalu: the inclusive (or, with includeInitial,
// exclusive) scan along axis as a windowed reduce. The axis moves last, is
// padded in front with n-1 identities, and pool builds the n windows of n
// elements as a pure view, so the whole scan is one reduce kernel.
func (t *Tensor) cumalu(axis int, op ir.Op, includeInitial bool) *Tensor {
	n := t.node.Shape[axis]
	last := t.Ndim() - 1
	x := t.Transpose(axis, last)
	pads := make([][2]int, t.Ndim())
	if includeInitial {
		pads[last] = [2]int{n, 0}
		x = x.Pad(pads, identityValue(op, t.DType()))
		x = x.Shrink(shrinkDim(x.node.Shape, last, 0, 2*n-1))
	} else {
		pads[last] = [2]int{n - 1, 0}
		x = x.Pad(pads, identityValue(op, t.DType()))
	}
	pooled := x.pool("cumsum", []int{n}, []int{1}, []int{1})
	var r *Tensor
	if op == ir.OpSum {
		r = pooled.Sum(false, -1)
	} else {
		r = pooled.Max(false, -1)
	}
	return r.Transpose(axis, last)
}

// shrinkDim keeps [lo, hi) of dimension d and all of the others.
func shrinkDim(shape []int, d, lo, hi int) [][2]int {
	b := make([][2]int, len(shape))
	for i, s := range shape {
		b[i] = [2]int{0, s}
	}
	b[d] = [2]int{lo, hi}
	return b
}

// cumSplit is the block size above which a scan runs in two stages.
const cumSplit = 256

// splitCumalu is tinygrad's _split_cumalu: a scan of up to 2*cumSplit
// elements is one windowed reduce (O(n^2) work); a longer one scans blocks
// of cumSplit, scans the block totals, and adds (or maxes) them back.
func (t *Tensor) splitCumalu(op string, axis int, rop ir.Op) *Tensor {
	if t.err != nil {
		return t
	}
	a, e := resolveDim(op, axis, t.Ndim())
	if e != nil {
		return e
	}
	if t.Ndim() == 0 || t.Numel() == 0 {
		return t
	}
	x := t
	if dt := x.DType(); rop == ir.OpSum && dt.SumDType() != dt { // sum's dtype rules
		if dt.IsFloat() {
			return x.Cast(dt.SumDType()).splitCumalu(op, a, rop).Cast(dt)
		}
		x = x.Cast(dt.SumDType())
	}
	n := x.node.Shape[a]
	if n <= 2*cumSplit {
		return x.cumalu(a, rop, false)
	}
	last := x.Ndim() - 1
	y := x.Transpose(a, last)
	pads := make([][2]int, x.Ndim())
	padded := roundUp(n, cumSplit)
	pads[last] = [2]int{padded - n, 0}
	y = y.Pad(pads, identityValue(rop, x.DType()))
	shp := y.Shape()
	y = y.Reshape(append(shp[:last:last], padded/cumSplit, cumSplit)...)
	ret := y.cumalu(last+1, rop, false)                              // (..., blocks, cumSplit)
	base := ret.selectAt(last+1, cumSplit-1).cumalu(last, rop, true) // (..., blocks)
	base = base.Unsqueeze(-1).Expand(ret.Shape()...)
	fix := func(z *Tensor) *Tensor {
		z = z.Flatten(last, -1)
		return z.Shrink(shrinkDim(z.node.Shape, last, padded-n, padded)).Transpose(a, last)
	}
	if rop == ir.OpSum {
		return fix(ret).Add(fix(base))
	}
	return fix(ret).Maximum(fix(base))
}

func roundUp(n, m int) int { return (n + m - 1) / m * m }

// selectAt takes index i of dimension d and drops that dimension.
func (t *Tensor) selectAt(d, i int) *Tensor {
	s := t.Shrink(shrinkDim(t.node.Shape, d, i, i+1))
	shape := slices.Delete(t.Shape(), d, d+1)
	return s.Reshape(shape...)
}

// Cumsum is the inclusive prefix sum along axis (tinygrad default 0).
func (t *Tensor) Cumsum(axis int) *Tensor { return t.splitCumalu("cumsum", axis, ir.OpSum) }

// Cummax is the running maximum along axis.
func (t *Tensor) Cummax(axis int) *Tensor { return t.splitCumalu("cummax", axis, ir.OpMaxReduce) }

// Prod multiplies over axes (all when none given). tgc's reduces are SUM
// and MAX, so the product is a tree of pairwise multiplications over views:
// the reduced axes move last and flatten, pad to a power of two with ones,
// and each level multiplies the two halves (every fourth level is stored,
// so a kernel reads at most 16 inputs per output). Small ints and bool
// multiply in int32 and float16 in float32, as tinygrad's prod does.
func (t *Tensor) Prod(keepdim bool, axes ...int) *Tensor {
	if t.err != nil {
		return t
	}
	norm, e := t.reducedAxes("prod", axes)
	if e != nil {
		return e
	}
	x := t
	switch x.DType() {
	case ir.Bool, ir.Int8, ir.Uint8:
		x = x.Cast(ir.Int32)
	case ir.Float16:
		return x.Cast(ir.Float32).Prod(keepdim, norm...).Cast(ir.Float16)
	}
	var keep, order []int
	n := 1
	for d, s := range x.node.Shape {
		if slices.Contains(norm, d) {
			n *= s
		} else {
			keep = append(keep, s)
			order = append(order, d)
		}
	}
	order = append(order, norm...)
	outShape := x.Shape()
	for _, a := range norm {
		outShape[a] = 1
	}
	if n == 0 {
		return x.node.ctx.Full(outShape, 1, x.DType()).squeezeReduced(t, norm, keepdim)
	}
	p := 1
	for p < n {
		p *= 2
	}
	k := len(keep)
	y := x.Permute(order...).Reshape(append(slices.Clone(keep), n)...)
	pads := make([][2]int, k+1)
	pads[k] = [2]int{0, p - n}
	y = y.Pad(pads, 1)
	for level := 1; p > 1; level++ {
		half := p / 2
		lo := y.Shrink(shrinkDim(y.node.Shape, k, 0, half))
		hi := y.Shrink(shrinkDim(y.node.Shape, k, half, p))
		y, p = lo.Mul(hi), half
		if level%4 == 0 && p > 1 {
			y = y.Contiguous()
		}
	}
	return y.Reshape(outShape...).squeezeReduced(t, norm, keepdim)
}
