package onnx

import (
	"fmt"
	"math"
	"slices"

	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// Neural-network operators: convolutions, pooling, normalizations, matrix
// products and losses, each one of the Tensor API's compositions.

var nnOps = map[string]opDef{
	"Conv":                      {since: 1, run: one(convOp)},
	"ConvTranspose":             {since: 1, run: one(convTransposeOp)},
	"MaxPool":                   {since: 1, run: maxPoolOp},
	"AveragePool":               {since: 1, run: one(avgPoolOp)},
	"LpPool":                    {since: 2, run: one(lpPoolOp)},
	"GlobalAveragePool":         {since: 1, run: one(globalPool(false))},
	"GlobalMaxPool":             {since: 1, run: one(globalPool(true))},
	"GlobalLpPool":              {since: 2, run: one(globalLpPool)},
	"BatchNormalization":        {since: 1, run: batchNorm},
	"InstanceNormalization":     {since: 1, run: one(instanceNorm)},
	"LayerNormalization":        {since: 17, run: layerNorm},
	"LpNormalization":           {since: 1, run: one(lpNorm)},
	"LRN":                       {since: 1, run: one(lrn)},
	"MeanVarianceNormalization": {since: 9, run: one(mvn)},
	"Gemm":                      {since: 1, run: one(gemm)},
	"MatMul":                    {since: 1, run: one(matMul)},
	"NegativeLogLikelihoodLoss": {since: 12, run: one(nllLoss)},
	"SoftmaxCrossEntropyLoss":   {since: 12, run: softmaxCrossEntropy},
	"Einsum":                    {since: 12, run: one(einsumOp)},
}

// spatial describes the windows of a convolution or pool: kernel,
// strides, dilations and tgc's flat pads (last dimension first).
type spatial struct {
	kernel, strides, dilations []int
	pads                       []int // ONNX order: begins then ends
}

// windowAttrs reads kernel_shape, strides, dilations, pads and auto_pad
// for inputs with the given spatial sizes.
func (n *node) windowAttrs(in, kernel []int) spatial {
	d := len(in)
	s := spatial{kernel: kernel}
	s.strides = n.intList("strides", slices.Repeat([]int{1}, d))
	s.dilations = n.intList("dilations", slices.Repeat([]int{1}, d))
	s.pads = n.intList("pads", make([]int, 2*d))
	if len(s.strides) != d || len(s.dilations) != d || len(s.pads) != 2*d || len(kernel) != d {
		n.fail("kernel %v, strides %v, dilations %v and pads %v do not fit %d spatial dimensions", kernel, s.strides, s.dilations, s.pads, d)
		return s
	}
	for i := range d {
		if s.strides[i] <= 0 || s.dilations[i] <= 0 || kernel[i] <= 0 || s.pads[i] < 0 || s.pads[i+d] < 0 {
			n.fail("kernel %v, strides %v, dilations %v must be positive and pads %v not negative", kernel, s.strides, s.dilations, s.pads)
			return s
		}
	}
	switch ap := n.str("auto_pad", "NOTSET"); ap {
	case "NOTSET":
	case "VALID":
		s.pads = make([]int, 2*d)
	case "SAME_UPPER", "SAME_LOWER":
		for i := range d {
			out := (in[i] + s.strides[i] - 1) / s.strides[i]
			total := max((out-1)*s.strides[i]+(kernel[i]-1)*s.dilations[i]+1-in[i], 0)
			small, big := total/2, total-total/2
			if ap == "SAME_UPPER" {
				s.pads[i], s.pads[i+d] = small, big
			} else {
				s.pads[i], s.pads[i+d] = big, small
			}
		}
	default:
		n.fail("unknown auto_pad %q", ap)
	}
	return s
}

// flatPads turns ONNX pads (x1_begin, x2_begin, ..., x1_end, ...) into
// tgc's flat order (last dimension first, (begin, end) pairs).
func flatPads(p []int) []int {
	d := len(p) / 2
	flat := make([]int, 0, 2*d)
	for j := d - 1; j >= 0; j-- {
		flat = append(flat, p[j], p[j+d])
	}
	return flat
}

func convOp(n *node) *tensor.Tensor {
	x, w := n.x(0), n.x(1)
	b := n.opt(2)
	if n.err != nil {
		return x
	}
	if x.Ndim() < 3 || w.Ndim() != x.Ndim() {
		n.fail("input %s and weight %s must be (N, C, spatial...) and (M, C/group, kernel...)", tensor.FormatShape(x.Shape()), tensor.FormatShape(w.Shape()))
		return x
	}
	kernel := n.intList("kernel_shape", w.Shape()[2:])
	s := n.windowAttrs(x.Shape()[2:], kernel)
	if n.err != nil {
		return x
	}
	if y := n.convAsMatmul(x, b, kernel, s); y != nil {
		return y
	}
	w = n.convWeight(w, s.strides)
	return x.Conv2d(w, b, tensor.ConvOpts{Groups: n.int("group", 1), Stride: s.strides, Dilation: s.dilations, Padding: flatPads(s.pads)})
}

// convAsMatmul computes an ungrouped convolution whose weight is an
// initializer as a matrix product on engines that repack matmul operands:
// the input's windows, a view (N, Ho·Wo, kh·kw·Cin) of its channels-last
// layout, times the weight as (kh·kw·Cin, Cout), prepared on the host in
// panels. The product is stored with the output channels contiguous,
// the layout the matmul kernel vectorizes, and read back as
// (N, Cout, Ho, Wo) through a permuted view; BatchNorm, ReLU and residual
// additions become one elementwise kernel over its rows (rows.go). nil when
// it does not apply.
func (n *node) convAsMatmul(x, b *tensor.Tensor, kernel []int, s spatial) *tensor.Tensor {
	v := n.in[1]
	if v.init == nil || v.h == nil || n.int("group", 1) != 1 || n.ctx.PanelWidth() <= 0 {
		return nil
	}
	ws := v.h.Shape
	cout := ws[0]
	k := 1
	for _, d := range ws[1:] {
		k *= d
	}
	xs := x.Shape()
	d := len(kernel)
	// The windows are read with the channels innermost, K in (kernel...,
	// Cin) order: a convolution's input is usually the rows of the one
	// before (channels contiguous), and the product's inner loop then
	// walks memory contiguously instead of a whole image apart. The
	// padding is applied to the channels-last view, so a padded copy, when
	// the scheduler makes one, is channels-last too.
	last := append([]int{0}, allAxesOf(d + 2)[2:]...)
	last = append(last, 1) // (N, *in, C)
	padded := x.Permute(last...)
	pads := [][2]int{{0, 0}}
	anyPad := false
	for i := range d {
		pads = append(pads, [2]int{s.pads[i], s.pads[i+d]})
		anyPad = anyPad || s.pads[i] > 0 || s.pads[i+d] > 0
	}
	if anyPad {
		padded = padded.Pad(append(pads, [2]int{0, 0}), 0)
	}
	first := append([]int{0, d + 1}, allAxesOf(d + 1)[1:]...) // back to (N, C, *in)
	win, _ := padded.Permute(first...).PoolWindows(tensor.PoolOpts{Kernel: kernel, Stride: s.strides, Dilation: s.dilations}, 0)
	// win: (N, Cin, *out, *k)
	if win.Err() != nil {
		return nil
	}
	out := win.Shape()[2 : 2+d]
	p := 1
	for _, o := range out {
		p *= o
	}
	perm := []int{0}
	for i := range 2 * d {
		perm = append(perm, 2+i)
	}
	perm = append(perm, 1)
	a := win.Permute(perm...).Reshape(xs[0], p, k) // (N, P, K)
	pw := n.ctx.PanelWidth()
	// Packed on the host once per model, the panels cost nothing at run
	// time, so they are used whenever the columns split into them: even a
	// product of few rows (ResNet's 7x7 stage at batch 1: 49) reads the
	// weight as K rows at a stride of Cout otherwise, which maps the rows
	// of a power-of-two Cout to a few cache sets.
	pack := cout%pw == 0 && cout >= 2*pw && k >= 64
	if !pack && cout%8 != 0 {
		return nil
	}
	form := "conv weight (K, Cout)"
	if pack {
		form = fmt.Sprintf("conv weight in panels of %d", pw)
	}
	wt, err := v.init.initTensor(n.ctx, v.name, form, func() (*tensor.Tensor, error) {
		// (Cout, Cin, *k) -> (Cout, *k, Cin)
		h := transposeArray(v.h, append([]int{0}, append(allAxesOf(d + 2)[2:], 1)...))
		if !pack { // (Cout, K) -> (K, Cout): the product's vectors read it contiguously
			return transposeArray(reshaped(h, []int{cout, k}), []int{1, 0}).Tensor(n.ctx, v.name, true)
		}
		// (Cout, K) -> (Cout/p, K, p)
		packed := transposeArray(reshaped(h, []int{cout / pw, pw, k}), []int{0, 2, 1})
		t, err := packed.Tensor(n.ctx, v.name, true)
		if err != nil {
			return nil, err
		}
		return tensor.PanelView(t), nil
	})
	if err != nil {
		n.fail("%v", err)
		return nil
	}
	// Rows in blocks of 8: the kernel reuses each weight vector across a
	// block of rows, and an odd count (ResNet's 7x7 stage: 49) would leave
	// one row per block, reading the whole weight for every row.
	// A batch whose positions together make whole blocks (ResNet's 14x14
	// and 7x7 stages at batch 8) is one product over all of them instead:
	// padding each image's rows would make the windows a copy.
	// A pointwise convolution of rows padded the same way (the 1x1
	// convolutions of ResNet's 14x14 and 7x7 stages at batch 1) reads them
	// as they are: a product's rows are independent, so the extra rows
	// make extra rows of its own that no value reads (rowsForm.p).
	rows := (p + 7) / 8 * 8
	pointwise := !anyPad
	for i := range d {
		pointwise = pointwise && kernel[i] == 1 && s.strides[i] == 1
	}
	rf := n.rowsIn(0)
	switch {
	case rows == p:
	case xs[0]*p%8 == 0:
		rows = p
		a = a.Reshape(1, xs[0]*p, k)
	case pointwise && rf != nil && rf.p == p && slices.Equal(rf.t.Shape(), []int{xs[0], rows, k}):
		a = rf.rowsT()
	default:
		a = a.Pad([][2]int{{0, 0}, {0, rows - p}, {0, 0}}, 0)
	}
	y := a.Dot(wt) // (N, rows, Cout), or (1, N·P, Cout) batched
	if b != nil {
		y = y.Add(b)
	}
	// The rows stay a lazy value: the elementwise operators that follow
	// (BatchNormalization, Relu, a residual Add) continue on them and
	// become the product's epilogue, applied to its accumulator vectors
	// before the store, and a batch's rows made as one product stay one
	// (1, N·P, Cout) product through it (rowsForm.n).
	return n.withRows(&rowsForm{t: y, n: xs[0], p: p, out: out})
}

// convWeight prepares a strided convolution's initializer weight with the
// output channels last, on the host and once per model: tensor.Conv2d
// would otherwise copy it into that layout on the device every run (it
// does so on engines that repack matmul operands; see outputChannelsLast).
func (n *node) convWeight(w *tensor.Tensor, strides []int) *tensor.Tensor {
	v := n.in[1]
	strided := false
	for _, st := range strides {
		strided = strided || st > 1
	}
	if v.init == nil || v.h == nil || n.ctx.PanelWidth() <= 0 || !strided {
		return w
	}
	r := len(v.h.Shape)
	last := append(allAxesOf(r)[1:], 0)
	back := append([]int{r - 1}, allAxesOf(r-1)...)
	t, err := v.init.initTensor(n.ctx, v.name, "output channels last", func() (*tensor.Tensor, error) {
		t, err := transposeArray(v.h, last).Tensor(n.ctx, v.name, true)
		if err != nil {
			return nil, err
		}
		return t.Permute(back...), nil
	})
	if err != nil {
		n.fail("%v", err)
		return w
	}
	return t
}

// convTransposeOp is the gradient of a convolution with respect to its
// input (tensor.ConvTranspose2d). output_shape, when given, decides the
// pads (the spec's formula; auto_pad picks where an odd total goes).
func convTransposeOp(n *node) *tensor.Tensor {
	x, w := n.x(0), n.x(1)
	b := n.opt(2)
	if n.err != nil {
		return x
	}
	if x.Ndim() < 3 || w.Ndim() != x.Ndim() {
		n.fail("input %s and weight %s must be (N, C, spatial...) and (C, M/group, kernel...)", tensor.FormatShape(x.Shape()), tensor.FormatShape(w.Shape()))
		return x
	}
	in := x.Shape()[2:]
	d := len(in)
	kernel := n.intList("kernel_shape", w.Shape()[2:])
	strides := n.intList("strides", slices.Repeat([]int{1}, d))
	dil := n.intList("dilations", slices.Repeat([]int{1}, d))
	outPad := n.intList("output_padding", make([]int, d))
	pads := n.intList("pads", make([]int, 2*d))
	if len(kernel) != d || len(strides) != d || len(dil) != d || len(outPad) != d || len(pads) != 2*d {
		n.fail("kernel %v, strides %v, dilations %v, output_padding %v and pads %v do not fit %d spatial dimensions", kernel, strides, dil, outPad, pads, d)
		return x
	}
	autoPad := n.str("auto_pad", "NOTSET")
	if outShape := n.intList("output_shape", nil); outShape != nil || autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER" {
		if outShape == nil {
			outShape = make([]int, d)
			for i := range d {
				outShape[i] = in[i] * strides[i]
			}
		}
		if len(outShape) == d+2 {
			outShape = outShape[2:]
		}
		if len(outShape) != d {
			n.fail("output_shape %v does not fit %d spatial dimensions", outShape, d)
			return x
		}
		for i := range d {
			total := strides[i]*(in[i]-1) + outPad[i] + (kernel[i]-1)*dil[i] + 1 - outShape[i]
			if total < 0 { // the output is larger than the full result: grow the output padding
				outPad[i] -= total
				total = 0
			}
			if autoPad == "SAME_UPPER" {
				pads[i], pads[i+d] = total/2, total-total/2
			} else {
				pads[i], pads[i+d] = total-total/2, total/2
			}
		}
	} else if autoPad == "VALID" {
		pads = make([]int, 2*d)
	}
	return x.ConvTranspose2d(w, b, tensor.ConvTransposeOpts{Groups: n.int("group", 1), Stride: strides, Dilation: dil, Padding: flatPads(pads), OutputPadding: outPad})
}

// poolWindows resolves a pool's window attributes for x.
func (n *node) poolWindows(x *tensor.Tensor) (tensor.PoolOpts, bool) {
	if x.Ndim() < 3 {
		n.fail("input %s must be (N, C, spatial...)", tensor.FormatShape(x.Shape()))
		return tensor.PoolOpts{}, false
	}
	kernel := n.intList("kernel_shape", nil)
	if kernel == nil {
		n.fail("attribute kernel_shape is missing")
		return tensor.PoolOpts{}, false
	}
	s := n.windowAttrs(x.Shape()[2:], kernel)
	if n.err != nil {
		return tensor.PoolOpts{}, false
	}
	o := tensor.PoolOpts{Kernel: kernel, Stride: s.strides, Dilation: s.dilations, Padding: flatPads(s.pads), CeilMode: n.int("ceil_mode", 0) == 1}
	if len(kernel) == 1 { // one value would mean a square kernel to tgc: use (1, k) on (N, C, 1, L)
		o.Kernel, o.Stride, o.Dilation = []int{1, kernel[0]}, []int{1, s.strides[0]}, []int{1, s.dilations[0]}
		o.Padding = []int{s.pads[0], s.pads[1], 0, 0}
	}
	return o, true
}

// pool1d runs a pool built for 2-D on a 1-D input through a (N, C, 1, L)
// view.
func pool1d(x *tensor.Tensor, f func(*tensor.Tensor) *tensor.Tensor) *tensor.Tensor {
	if x.Ndim() != 3 {
		return f(x)
	}
	return f(x.Unsqueeze(2)).Squeeze(ptr(2))
}

func ptr(i int) *int { return &i }

// maxPoolOp is the window maximum; the optional Indices output is the
// flat (row-major, per image) index of the first maximum of each window.
func maxPoolOp(n *node) []*tensor.Tensor {
	x := n.x(0)
	if n.err != nil {
		return nil
	}
	o, ok := n.poolWindows(x)
	if !ok {
		return nil
	}
	single := len(n.proto.GetOutput()) < 2 || n.proto.GetOutput()[1] == ""
	if rf := n.rowsIn(0); rf != nil && single && x.Ndim() == 4 && !o.CeilMode && len(o.Padding) == 4 && x.DType().IsFloat() {
		return []*tensor.Tensor{n.withRows(maxPoolRows(x, o))}
	}
	y := pool1d(x, func(x *tensor.Tensor) *tensor.Tensor { return x.MaxPool2d(o) })
	if single {
		return []*tensor.Tensor{y}
	}
	// The index of each element (row-major within its image plane, or
	// column-major with storage_order=1), pooled alongside: where the
	// window value equals the maximum, the smallest index (as the maximum
	// of -index).
	shape := x.Shape()
	sp := 1
	for _, d := range shape[2:] {
		sp *= d
	}
	vals := make([]float64, sp)
	dims := shape[2:]
	for flat := range sp {
		v, rest, st := 0, flat, 1
		if n.int("storage_order", 0) == 1 { // column-major: the first spatial axis varies fastest
			pos := make([]int, len(dims))
			for j := len(dims) - 1; j >= 0; j-- {
				pos[j] = rest % dims[j]
				rest /= dims[j]
			}
			for j := range dims {
				v += pos[j] * st
				st *= dims[j]
			}
		} else {
			v = flat
		}
		vals[flat] = float64(v)
	}
	it, _ := n.ctx.FromFloats(ir.Int32, dims, vals)
	idx := it.Expand(shape...)
	c := shape[1]
	base := n.ctx.Arange(0, float64(shape[0]*c), 1, ir.Int32).Mul(n.ctx.Const(float64(sp), ir.Int32)).Reshape(append([]int{shape[0], c}, ones(len(shape)-2)...)...)
	win, k := x.PoolWindows(o, math.Inf(-1))
	iwin, _ := idx.PoolWindows(o, -1)
	axes := make([]int, k)
	for i := range k {
		axes[i] = -1 - i
	}
	isMax := win.Eq(y.Reshape(append(y.Shape(), ones(k)...)...))
	neg := isMax.Where(iwin.Neg(), n.ctx.Const(math.MinInt32, ir.Int32)).Max(false, axes...).Neg()
	return []*tensor.Tensor{y, n.index64(neg.Add(base))}
}

// maxPoolRows pools a convolution's stored rows (x is their (N, C, H, W)
// view) channels last: the padded copy, when the scheduler makes one, and
// the pool read and write the channels contiguously, and the result is
// rows again, which the next convolution reads as they are (ResNet's stem
// pool: an NCHW padded copy of its input was a transposition at a stride
// of C floats).
func maxPoolRows(x *tensor.Tensor, o tensor.PoolOpts) *rowsForm {
	s := x.Shape()
	// o.Padding is tgc's flat order: the last dimension's (begin, end) first
	last := x.Permute(0, 2, 3, 1).Pad([][2]int{{0, 0}, {o.Padding[2], o.Padding[3]}, {o.Padding[0], o.Padding[1]}, {0, 0}}, math.Inf(-1))
	o.Padding = nil
	win, _ := last.Permute(0, 3, 1, 2).PoolWindows(o, math.Inf(-1)) // (N, C, Ho, Wo, kh, kw)
	y := win.Permute(0, 2, 3, 1, 4, 5).Max(false, 4, 5)             // (N, Ho, Wo, C)
	ys := y.Shape()
	return &rowsForm{t: y.Reshape(s[0], ys[1]*ys[2], s[1]), n: s[0], p: ys[1] * ys[2], out: ys[1:3]}
}

func avgPoolOp(n *node) *tensor.Tensor {
	x := n.x(0)
	if n.err != nil {
		return x
	}
	o, ok := n.poolWindows(x)
	if !ok {
		return x
	}
	include := n.int("count_include_pad", 0) == 1
	if ap := n.str("auto_pad", "NOTSET"); ap == "SAME_UPPER" || ap == "SAME_LOWER" {
		include = false // the implied pads never count
	}
	return pool1d(x, func(x *tensor.Tensor) *tensor.Tensor { return x.AvgPool2d(o, include) })
}

func lpPoolOp(n *node) *tensor.Tensor {
	x := n.x(0)
	if n.err != nil {
		return x
	}
	o, ok := n.poolWindows(x)
	if !ok {
		return x
	}
	p := float64(n.int("p", 2))
	return pool1d(x, func(x *tensor.Tensor) *tensor.Tensor {
		win, k := x.Abs().Pow(n.ctx.Const(p, x.DType())).PoolWindows(o, 0)
		axes := make([]int, k)
		for i := range k {
			axes[i] = -1 - i
		}
		return win.Sum(false, axes...).Pow(n.ctx.Const(1/p, x.DType()))
	})
}

func globalPool(isMax bool) func(n *node) *tensor.Tensor {
	return func(n *node) *tensor.Tensor {
		x := n.x(0)
		if n.err != nil {
			return x
		}
		axes := allAxesOf(x.Ndim())[2:]
		if isMax {
			return x.Max(true, axes...)
		}
		return x.Mean(true, axes...)
	}
}

func globalLpPool(n *node) *tensor.Tensor {
	x := n.x(0)
	if n.err != nil {
		return x
	}
	p := float64(n.int("p", 2))
	axes := allAxesOf(x.Ndim())[2:]
	return x.Abs().Pow(n.ctx.Const(p, x.DType())).Sum(true, axes...).Pow(n.ctx.Const(1/p, x.DType()))
}

// channelShape views a per-channel (C) tensor as (1, C, 1, ...) for rank r.
func channelShape(t *tensor.Tensor, r int) *tensor.Tensor {
	return t.Reshape(append([]int{1, t.Numel()}, ones(r-2)...)...)
}

// batchNorm normalizes with the given statistics (inference); with
// training_mode (opset 14+) it uses the batch's statistics and also
// returns the updated running mean and variance.
func batchNorm(n *node) []*tensor.Tensor {
	eps := n.float("epsilon", 1e-5)
	training := n.opset >= 14 && n.int("training_mode", 0) == 1
	if rf := n.rowsIn(0); rf != nil && !training && len(n.proto.GetOutput()) == 1 && n.int("spatial", 1) == 1 {
		// on a product's rows (rows.go), before anything asks for (N, C, ...)
		c := rf.t.Shape()[2]
		if scale, shift := n.batchNormAffine(eps, c); scale != nil {
			return []*tensor.Tensor{n.withRows(rf.with(rf.rowsT().Mul(scale).Add(shift)))}
		}
		rm, rv, rs, rb := perChannel(n.x(3), c), perChannel(n.x(4), c), perChannel(n.x(1), c), perChannel(n.x(2), c)
		if n.err == nil && rm != nil && rv != nil && rs != nil && rb != nil {
			inv := rv.Add(n.ctx.Const(eps, rv.DType())).Rsqrt()
			return []*tensor.Tensor{n.withRows(rf.with(rf.rowsT().Sub(rm).Mul(inv).Mul(rs).Add(rb)))}
		}
	}
	x, scale, b, mean, v := n.x(0), n.x(1), n.x(2), n.x(3), n.x(4)
	if n.err != nil {
		return nil
	}
	r := x.Ndim()
	if r < 2 {
		n.fail("input %s needs a channel dimension", tensor.FormatShape(x.Shape()))
		return nil
	}
	if n.opset < 7 && n.int("spatial", 1) == 0 || n.opset >= 7 && n.opset < 9 && n.int("spatial", 1) == 0 {
		n.unsupported("BatchNormalization with spatial=0")
		return nil
	}
	fit := func(t *tensor.Tensor) *tensor.Tensor {
		if t.Numel() != x.Shape()[1] {
			n.fail("statistic %s does not match %d channels", tensor.FormatShape(t.Shape()), x.Shape()[1])
			return t
		}
		return channelShape(t, r)
	}
	if !training {
		inv := fit(v).Add(n.ctx.Const(eps, v.DType())).Rsqrt()
		return []*tensor.Tensor{x.Sub(fit(mean)).Mul(inv).Mul(fit(scale)).Add(fit(b))}
	}
	axes := append([]int{0}, allAxesOf(r)[2:]...)
	bm := x.Mean(true, axes...)
	bv := x.Sub(bm).Square().Mean(true, axes...)
	y := x.Sub(bm).Mul(bv.Add(n.ctx.Const(eps, x.DType())).Rsqrt()).Mul(fit(scale)).Add(fit(b))
	mom := n.float("momentum", 0.9)
	m := n.ctx.Const(mom, x.DType())
	one := n.ctx.Const(1-mom, x.DType())
	runMean := mean.Mul(m).Add(bm.Reshape(mean.Shape()...).Mul(one))
	runVar := v.Mul(m).Add(bv.Reshape(v.Shape()...).Mul(one))
	return []*tensor.Tensor{y, runMean, runVar}
}

// batchNormAffine folds inference statistics that are initializers into
// one scale and one shift per channel, computed on the host once per model
// (in float64): x*scale + shift is two operations per element in the
// kernel that applies it (a product's epilogue) instead of six and a
// square root. Both are (1, 1, C) for rows; nil when a statistic is not a
// float initializer of c elements.
func (n *node) batchNormAffine(eps float64, c int) (scale, shift *tensor.Tensor) {
	var st [4]*Array // scale, bias, mean, variance
	for i := range st {
		v := n.in[i+1]
		if !n.has(i+1) || v.init == nil || v.h == nil || v.h.Numel() != c || !v.h.Type.IsFloat() {
			return nil, nil
		}
		st[i] = v.h
	}
	out := n.proto.GetOutput()[0]
	fold := func(form string) (*tensor.Tensor, error) {
		return n.in[1].init.initTensor(n.ctx, out, "batch norm "+form, func() (*tensor.Tensor, error) {
			a := NewArray(st[0].Type, []int{1, 1, c})
			for i := range c {
				s := st[0].Float(i) / math.Sqrt(st[3].Float(i)+eps)
				if form == "scale" {
					a.SetFloat(i, s)
				} else {
					a.SetFloat(i, st[1].Float(i)-st[2].Float(i)*s)
				}
			}
			return a.Tensor(n.ctx, out+" "+form, true)
		})
	}
	var err error
	if scale, err = fold("scale"); err == nil {
		shift, err = fold("shift")
	}
	if err != nil {
		n.fail("%v", err)
		return nil, nil
	}
	return scale, shift
}

func instanceNorm(n *node) *tensor.Tensor {
	x, scale, b := n.x(0), n.x(1), n.x(2)
	if n.err != nil {
		return x
	}
	r := x.Ndim()
	if r < 3 {
		n.fail("input %s must be (N, C, spatial...)", tensor.FormatShape(x.Shape()))
		return x
	}
	y := x.Layernorm(n.float("epsilon", 1e-5), allAxesOf(r)[2:]...)
	return y.Mul(channelShape(scale, r)).Add(channelShape(b, r))
}

// layerNorm normalizes over the axes from axis on; the optional outputs
// are the mean and the inverse standard deviation (reduced axes kept).
func layerNorm(n *node) []*tensor.Tensor {
	x, scale := n.x(0), n.x(1)
	b := n.opt(2)
	if n.err != nil {
		return nil
	}
	axis := n.axis(n.int("axis", -1), x.Ndim())
	eps := n.float("epsilon", 1e-5)
	axes := allAxesOf(x.Ndim())[axis:]
	xf := x
	if x.DType() != ir.Float32 && n.int("stash_type", 1) == 1 {
		xf = x.Cast(ir.Float32)
	}
	mean := xf.Mean(true, axes...)
	d := xf.Sub(mean)
	inv := d.Square().Mean(true, axes...).Add(n.ctx.Const(eps, xf.DType())).Rsqrt()
	y := d.Mul(inv).Cast(x.DType()).Mul(scale)
	if b != nil {
		y = y.Add(b)
	}
	return []*tensor.Tensor{y, mean, inv}
}

func lpNorm(n *node) *tensor.Tensor {
	x := n.x(0)
	if n.err != nil {
		return x
	}
	axis := n.axis(n.int("axis", -1), x.Ndim())
	var norm *tensor.Tensor
	switch n.int("p", 2) {
	case 1:
		norm = x.Abs().Sum(true, axis)
	case 2:
		norm = x.Square().Sum(true, axis).Sqrt()
	default:
		n.fail("p must be 1 or 2, got %d", n.int("p", 2))
		return x
	}
	return x.Div(norm)
}

// lrn divides by (bias + alpha/size * the sum of squares over size
// neighbouring channels)^beta; the channel window is an average pool over
// a (N, 1, C, rest) view.
func lrn(n *node) *tensor.Tensor {
	x := n.x(0)
	size := n.int("size", 0)
	if n.err != nil {
		return x
	}
	if x.Ndim() < 3 || size <= 0 {
		n.fail("LRN needs (N, C, spatial...) and a positive size, got %s and size %d", tensor.FormatShape(x.Shape()), size)
		return x
	}
	alpha, beta, bias := n.float("alpha", 1e-4), n.float("beta", 0.75), n.float("bias", 1)
	s := x.Shape()
	rest := x.Numel() / (s[0] * s[1])
	sq := x.Square().Reshape(s[0], 1, s[1], rest)
	lo, hi := (size-1)/2, size-1-(size-1)/2
	sum := sq.AvgPool2d(tensor.PoolOpts{Kernel: []int{size, 1}, Stride: []int{1, 1}, Padding: []int{0, 0, lo, hi}}, true).Reshape(s...)
	dt := x.DType()
	// the pool's mean is sum/size, so alpha/size*sum = alpha*mean
	den := sum.Mul(n.ctx.Const(alpha, dt)).Add(n.ctx.Const(bias, dt)).Pow(n.ctx.Const(beta, dt))
	return x.Div(den)
}

// mvn is (x - mean) / (std + 1e-9) over axes (default 0, 2, 3).
func mvn(n *node) *tensor.Tensor {
	x := n.x(0)
	if n.err != nil {
		return x
	}
	axes := n.axes(n.intList("axes", []int{0, 2, 3}), x.Ndim())
	if n.err != nil {
		return x
	}
	mean := x.Mean(true, axes...)
	v := x.Square().Mean(true, axes...).Sub(mean.Square())
	return x.Sub(mean).Div(v.Sqrt().Add(n.ctx.Const(1e-9, x.DType())))
}

// gemm is alpha*A'B' + beta*C, A' and B' transposed when asked.
func gemm(n *node) *tensor.Tensor {
	a, b := n.x(0), n.x(1)
	c := n.opt(2)
	if n.err != nil {
		return a
	}
	if a.Ndim() != 2 || b.Ndim() != 2 {
		n.fail("A %s and B %s must be matrices", tensor.FormatShape(a.Shape()), tensor.FormatShape(b.Shape()))
		return a
	}
	if n.int("transA", 0) == 1 {
		a = a.T()
	}
	if n.int("transB", 0) == 1 {
		b = n.matmulWeight(1, b.T(), true, a.Shape()[0])
	} else {
		b = n.matmulWeight(1, b, false, a.Shape()[0])
	}
	dt := a.DType()
	y := a.Dot(b)
	if alpha := n.float("alpha", 1); alpha != 1 {
		y = y.Mul(n.ctx.Const(alpha, dt))
	}
	if c != nil {
		if beta := n.float("beta", 1); beta != 1 {
			c = c.Mul(n.ctx.Const(beta, dt))
		}
		y = y.Add(c)
	}
	return y
}

func matMul(n *node) *tensor.Tensor {
	a, b := n.x(0), n.x(1)
	if n.err != nil || b.Ndim() != 2 || a.Ndim() < 2 {
		return a.Dot(b)
	}
	a = storedIfComputed(a)
	m := 1
	for _, d := range a.Shape()[:a.Ndim()-1] {
		m *= d
	}
	y := a.Dot(n.matmulWeight(1, b, false, m))
	if n.in[1].init != nil && n.ctx.PanelWidth() > 0 {
		// A layer's product is stored as it is: a long epilogue (BERT's
		// GELU) fused into it would cap its register blocking
		// (ir.laneBudget counts the whole body).
		y = y.Contiguous()
	}
	return y
}

// storedIfComputed stores a matrix product's left operand first when it is
// computed by more than one elementwise operation (a GELU written out as
// Erf, Div, Add and Mul): inlined, the product would compute every element
// once per output column (BERT's second FFN product: 768 times).
func storedIfComputed(a *tensor.Tensor) *tensor.Tensor {
	ops, seen := 0, map[*tensor.Node]bool{}
	var walk func(x *tensor.Node)
	walk = func(x *tensor.Node) {
		if seen[x] || x.Realized() != nil || ops > 1 || len(seen) > 64 {
			return
		}
		seen[x] = true
		switch {
		case x.Op.IsALU():
			ops++
		case !x.Op.IsMovement():
			return // a reduce or a buffer: stored anyway
		}
		for _, s := range x.Src {
			walk(s)
		}
	}
	walk(a.Node())
	if ops > 1 {
		return a.Contiguous()
	}
	return a
}

// matmulWeight returns the (k, n) right operand b of a matrix product (input
// i, transposed in the file when trans), packed into panels on the host
// once per model when it is an initializer and Dot would repack it on the
// device every run (tensor.WantsPanels).
func (n *node) matmulWeight(i int, b *tensor.Tensor, trans bool, m int) *tensor.Tensor {
	v := n.in[i]
	if b.Ndim() != 2 || v.init == nil || v.h == nil || !n.ctx.WantsPanels(b.Shape()[0], b.Shape()[1], m) {
		return b
	}
	k, cols, p := b.Shape()[0], b.Shape()[1], n.ctx.PanelWidth()
	form := fmt.Sprintf("panels of %d", p)
	if trans {
		form += ", transposed"
	}
	t, err := v.init.initTensor(n.ctx, v.name, form, func() (*tensor.Tensor, error) {
		a := v.h
		if !trans { // (k, n) -> (n, k)
			a = transposeArray(a, []int{1, 0})
		}
		// (n, k) -> (n/p, k, p): panel j holds columns j*p..j*p+p-1, row by row
		packed := transposeArray(reshaped(a, []int{cols / p, p, k}), []int{0, 2, 1})
		t, err := packed.Tensor(n.ctx, v.name, true)
		if err != nil {
			return nil, err
		}
		return tensor.PanelView(t), nil
	})
	if err != nil {
		n.fail("%v", err)
		return b
	}
	return t
}

// classPick returns, for scores (N, C, d...) and int labels (N, d...), the
// per-position value scores[n, label, d] times weight[label] (0 where the
// label is ignore_index), the weights, and the mask of counted positions.
func classPick(n *node, scores, labels, weight *tensor.Tensor) (picked, w *tensor.Tensor) {
	s := scores.Shape()
	if scores.Ndim() < 2 || !slices.Equal(labels.Shape(), append([]int{s[0]}, s[2:]...)) {
		n.fail("labels %s must be the scores %s without the class dimension", tensor.FormatShape(labels.Shape()), tensor.FormatShape(s))
		return scores, scores
	}
	c := s[1]
	lab := labels.Unsqueeze(1) // (N, 1, d...)
	cls := n.ctx.Arange(0, float64(c), 1, ir.Int32).Reshape(append([]int{1, c}, ones(len(s)-2)...)...)
	onehot := lab.Cast(ir.Int32).Eq(cls) // (N, C, d...)
	dt := scores.DType()
	if weight != nil {
		w = onehot.Where(weight.Reshape(append([]int{1, c}, ones(len(s)-2)...)...), n.ctx.Const(0, dt)).Sum(false, 1)
	} else {
		w = onehot.Any(false, 1).Cast(dt)
	}
	if n.hasAttr("ignore_index") {
		keep := labels.Ne(n.ctx.Const(float64(n.int("ignore_index", 0)), labels.DType()))
		w = keep.Where(w, n.ctx.Const(0, dt))
	}
	picked = onehot.Where(scores, n.ctx.Const(0, dt)).Sum(false, 1).Mul(w)
	return picked, w
}

func lossReduce(n *node, loss, w *tensor.Tensor) *tensor.Tensor {
	switch r := n.str("reduction", "mean"); r {
	case "none":
		return loss
	case "sum":
		return loss.Sum(false)
	case "mean":
		return loss.Sum(false).Div(w.Sum(false))
	default:
		n.fail("reduction must be none, sum or mean, got %q", r)
		return loss
	}
}

func nllLoss(n *node) *tensor.Tensor {
	x, t := n.x(0), n.x(1)
	w := n.opt(2)
	if n.err != nil {
		return x
	}
	picked, weights := classPick(n, x, t, w)
	return lossReduce(n, picked.Neg(), weights)
}

func softmaxCrossEntropy(n *node) []*tensor.Tensor {
	x, t := n.x(0), n.x(1)
	w := n.opt(2)
	if n.err != nil {
		return nil
	}
	logp := x.LogSoftmax(1)
	picked, weights := classPick(n, logp, t, w)
	return []*tensor.Tensor{lossReduce(n, picked.Neg(), weights), logp}
}

func einsumOp(n *node) *tensor.Tensor {
	var xs []*tensor.Tensor
	for i := range n.in {
		xs = append(xs, n.x(i))
	}
	if n.err != nil {
		return nil
	}
	return tensor.Einsum(n.str("equation", ""), xs...)
}
