package tensor

import (
	"math"
	"slices"

	"tgc/pkg/ir"
)

// Neural-network functions: matmul, convolution and pooling as
// broadcast-multiply-and-reduce over views, plus normalizations and losses.
// Each is tinygrad's formula over the primitives, so the scheduler sees
// (and fuses) plain elementwise ops, reduces and views.

// ---- convolution gradients ----

// convGradFits says when Conv2d's gradients are convolutions themselves
// (convGrads): no groups, stride or dilation, padding under the kernel
// size, float operands of one dtype. Other convolutions differentiate
// through their primitives.
func convGradFits(x, w *Tensor, groups int, stride, dilation, flat, hw []int) bool {
	if groups != 1 || x.DType() != w.DType() || !x.DType().IsFloat() {
		return false
	}
	for i := range hw {
		if stride[i] != 1 || dilation[i] != 1 {
			return false
		}
	}
	n := len(hw)
	for j := range n {
		if flat[2*(n-1-j)] > hw[j]-1 || flat[2*(n-1-j)+1] > hw[j]-1 {
			return false
		}
	}
	return true
}

// convGrads are the gradients of a stride-1 convolution as convolutions:
// the input's is the output gradient padded by kernel-1-pad and convolved
// with the spatially flipped weight, input and output channels swapped;
// the weight's is the padded input convolved with the output gradient,
// batch and channel axes swapped. Differentiating the primitives instead
// stores the gradient of every window (kernel-size times the input) and
// sums it back with a gather: 3x the work and memory traffic.
func convGrads(x, w, g *Tensor, flat, hw []int) []*Tensor {
	n := len(hw)
	spatial := make([]int, n)
	swap := []int{1, 0}
	for i := range n {
		spatial[i] = 2 + i
		swap = append(swap, 2+i)
	}
	gpad := make([]int, 2*n)
	for j := range n {
		gpad[2*(n-1-j)] = hw[j] - 1 - flat[2*(n-1-j)]
		gpad[2*(n-1-j)+1] = hw[j] - 1 - flat[2*(n-1-j)+1]
	}
	// The flipped, transposed weight is copied once (it is small): the
	// convolution then reads it forwards, like any weight.
	dx := g.Conv2d(w.Flip(spatial...).Permute(swap...).Contiguous(), nil, ConvOpts{Padding: gpad})
	xp := x.padZero(groupPads(flat, x.Ndim()))
	// The weight gradient's "weight" is g with batch and channels swapped.
	// On engines that repack matmul operands (the CPU) it is copied with
	// the output channels contiguous first, (N, *out, Cout) viewed back:
	// the weight gradient's output has no long contiguous axis of its own
	// (a 5x5 kernel's 5 columns), so its vectors run along the channels
	// (MNIST cnn step, kernel clock times on the loaded 2-core host:
	// conv2's 481 -> 168-266 ms, conv4's 326 -> 40 ms, the copy 30 ms).
	// The copy pays where each element of g takes part in at least 64
	// multiply-adds (Cin*kh*kw); not for the first conv of a grey image
	// (25: the copy 47 ms, the gradient 7 ms faster).
	gw := g.Permute(swap...)
	if g.node.ctx.PanelWidth() > 0 && numel(w.node.Shape[1:]) >= 64 {
		last := append(append([]int{0}, spatial...), 1) // (N, *out, Cout)
		back := []int{0, n + 1}                         // (N, Cout, *out)
		for i := range n {
			back = append(back, 1+i)
		}
		gw = g.Permute(last...).Contiguous().Permute(back...).Permute(swap...)
	}
	dw := xp.Permute(swap...).Conv2d(gw, nil, ConvOpts{}).Permute(swap...)
	return []*Tensor{dx, dw}
}

// ---- matmul ----

// Dot is the matrix product with numpy's rules: 1-D·1-D is a scalar,
// matrix·vector and vector·matrix drop the vector's axis, and N-D operands
// are stacks of matrices whose batch dimensions broadcast. It is
// x.reshape(..., M, 1, K) * w.T.reshape(..., 1, N, K) summed over the last
// axis: the reduce axis is innermost, so both operands load contiguously
// along it (row-major x, and w read transposed).
func (t *Tensor) Dot(w *Tensor) *Tensor {
	if e := firstErr(t, w); e != nil {
		return e
	}
	dx, dw := t.Ndim(), w.Ndim()
	xs, ws := t.node.Shape, w.node.Shape
	if dx == 0 || dw == 0 {
		return errorf("dot", "both tensors need to be at least 1-D, got %s (%d-D) and %s (%d-D)", FormatShape(xs), dx, FormatShape(ws), dw)
	}
	axisW := dw - min(dw, 2) // w's contracted axis
	if xs[dx-1] != ws[axisW] {
		return errorf("dot", "cannot multiply %s by %s: inner dimensions %d and %d differ", FormatShape(xs), FormatShape(ws), xs[dx-1], ws[axisW])
	}
	if dx > 2 || dw > 2 {
		bx, bw := xs[:max(dx-2, 0)], ws[:max(dw-2, 0)]
		if _, ok := BroadcastShape(bx, bw); !ok {
			return errorf("dot", "cannot multiply %s by %s: batch dimensions %s and %s cannot be broadcast", FormatShape(xs), FormatShape(ws), FormatShape(bx), FormatShape(bw))
		}
	}
	if dw == 2 && dx >= 2 {
		if y := rowsTimesTransposed(t, w); y != nil {
			return y
		}
		w = packPanels(w, numel(xs[:dx-1]))
		if dx == 2 {
			t = packRows(t, ws[1])
		}
	}
	if dw > 2 && dx >= 2 {
		w = storeTransposed(w, xs[dx-2])
	}
	mid := ones(min(dx-1, dw-1, 1))
	x := t.Reshape(append(append(slices.Clone(xs[:dx-1]), mid...), xs[dx-1])...)
	wr := w.Reshape(append(append(slices.Clone(ws[:axisW]), mid...), ws[axisW:]...)...).Transpose(-1, -1-min(dw-1, 1))
	out := ir.Promote(t.DType(), w.DType())
	return x.Mul(wr).Sum(false, -1).Cast(out)
}

// rowsTimesTransposed computes x @ w.T, where w.T is a transposed view of a
// (N, K) matrix larger than x's rows (a layer's weight against a prompt's
// rows: x @ weight.T as tinygrad's Linear writes it), as (w @ x.T).T: the
// product whose right operand is the small x.T, so the panels packPanels
// copies are the rows' K*rows, never the weight's K*N (every call), and
// the kernel is the square matmul's register tile instead of one dot
// product per output ending in a horizontal sum. The product is stored in
// its (N, rows) order and viewed back. nil when the rule does not apply.
func rowsTimesTransposed(x, w *Tensor) *Tensor {
	n := w.node
	if n.Op != ir.OpPermute || n.HasSym() || x.node.HasSym() || !slices.Equal(n.Arg.([]int), []int{1, 0}) {
		return nil
	}
	xs := x.node.Shape
	k, cols := n.Shape[0], n.Shape[1]
	rows := numel(xs[:len(xs)-1])
	if rows <= 1 || rows >= cols {
		return nil
	}
	weight := w.Permute(1, 0) // (N, K)
	yt := weight.Dot(x.Reshape(rows, k).Permute(1, 0)).Contiguous()
	return yt.Permute(1, 0).Reshape(append(slices.Clone(xs[:len(xs)-1]), cols)...)
}

// storeTransposed stores a stack of right operands that is a transposed
// view, (..., K, N) read from a (..., N, K) tensor (attention's keys in
// q @ k.T), in its own (..., K, N) order when m rows of x use it. Read
// through the view, both operands are contiguous along the sum, so each
// output is a dot product ending in a horizontal sum; stored, the product
// is the matmul's register tile (BERT's 128x64 by 64x128 scores: 6x
// faster, as fast as the probabilities times the values). The copy is K*N
// against the product's m*K*N.
func storeTransposed(w *Tensor, m int) *Tensor {
	n := w.node
	if m < 16 || n.Op != ir.OpPermute || n.HasSym() {
		return w
	}
	perm := n.Arg.([]int)
	if d := len(perm); perm[d-2] != d-1 {
		return w
	}
	return w.Contiguous()
}

// PanelEngine is implemented by engines whose devices want a matmul's
// right operand repacked into contiguous column panels (see packPanels).
type PanelEngine interface {
	MatmulPanel() int // panel width in elements (0: never repack)
}

// packPanels copies a (K, N) right operand into (N/p, K, p) order (p the
// engine's panel width) and views it back as (K, N): the product reads
// the same values, but the p columns one register block uses are now one
// contiguous K*p run instead of K rows apart at a stride of N. Large
// power-of-two strides map every row to the same few cache sets, so
// without this the panel falls out of cache (matmul 2048 on the CPU runs
// 2.5x faster packed, measured). The copy costs K*N against the product's
// M*K*N.
func packPanels(w *Tensor, m int) *Tensor {
	pe, ok := w.node.ctx.engine.(PanelEngine)
	if !ok {
		return w
	}
	p := pe.MatmulPanel()
	k, n := w.node.Shape[0], w.node.Shape[1]
	if !w.node.ctx.WantsPanels(k, n, m) || isPanelView(w.node, p) {
		return w
	}
	return w.Reshape(k, n/p, p).Permute(1, 0, 2).Contiguous().Permute(1, 0, 2).Reshape(k, n)
}

// RowPanelEngine is implemented by engines whose devices want a large
// matmul's left operand repacked into row panels (see packRows).
type RowPanelEngine interface {
	// MatmulRowPanel is the panel height for an (m, k) left operand times
	// a (k, n) right one (0: no repacking).
	MatmulRowPanel(m, k, n int) int
}

// packRows copies an (M, K) left operand multiplied by n columns into
// (M/r, K, r) order (r the engine's row panel height, one register
// block's rows) and views it back as (M, K), where the engine says it
// pays: the product's row groups then read their block of it as one
// contiguous run, where r rows at a power-of-two stride share a few
// cache sets and evict each other (matmul 4096 with 8-lane vectors, the
// blocked loops: 173 against 135 GFLOP/s unpacked, measured in C). The
// copy costs M*K against the product's M*K*N.
func packRows(x *Tensor, n int) *Tensor {
	pe, ok := x.node.ctx.engine.(RowPanelEngine)
	if !ok || x.node.HasSym() {
		return x
	}
	m, k := x.node.Shape[0], x.node.Shape[1]
	r := pe.MatmulRowPanel(m, k, n)
	if r <= 0 || m%r != 0 {
		return x
	}
	return x.Reshape(m/r, r, k).Permute(0, 2, 1).Contiguous().Permute(0, 2, 1).Reshape(m, k)
}

// WantsPanels says whether Dot repacks a (k, n) right operand multiplied by
// m rows into panels on the context's engine (packPanels), so that a
// caller holding the operand on the host can pack it once instead
// (PanelView).
func (c *Context) WantsPanels(k, n, m int) bool {
	p := c.PanelWidth()
	return p > 0 && n%p == 0 && n >= 4*p && k >= 64 && m >= 64 && k*n >= 1<<16
}

// PanelWidth is the context's engine's panel width (0: no repacking).
func (c *Context) PanelWidth() int {
	if pe, ok := c.engine.(PanelEngine); ok {
		return max(pe.MatmulPanel(), 0)
	}
	return 0
}

// PanelView views a buffer of packed panels (n/p, k, p) as the (k, n)
// operand it holds; Dot uses such a view as it is.
func PanelView(packed *Tensor) *Tensor {
	s := packed.node.Shape
	return packed.Permute(1, 0, 2).Reshape(s[1], s[0]*s[2])
}

// isPanelView reports a PanelView of realized panels of width p.
func isPanelView(n *Node, p int) bool {
	if n.Op != ir.OpReshape || n.Src[0].Op != ir.OpPermute {
		return false
	}
	b := n.Src[0].Src[0]
	return b.Realized() != nil && len(b.Shape) == 3 && b.Shape[2] == p && slices.Equal(n.Src[0].Arg.([]int), []int{1, 0, 2})
}

func numel(shape []int) int {
	n := 1
	for _, s := range shape {
		n *= s
	}
	return n
}

// Matmul is Dot.
func (t *Tensor) Matmul(w *Tensor) *Tensor { return t.Dot(w) }

// Linear is x·weight + bias with weight of shape (in, out) (a 1-D weight
// multiplies elementwise); bias may be nil.
func (t *Tensor) Linear(weight, bias *Tensor) *Tensor {
	if e := firstErr(t, weight); e != nil {
		return e
	}
	var x *Tensor
	if weight.Ndim() == 1 {
		if _, e := broadcastCheck("linear", t, weight); e != nil {
			return e
		}
		x = t.Mul(weight)
	} else {
		x = t.Dot(weight)
	}
	if bias == nil || x.err != nil {
		return x
	}
	if e := firstErr(bias); e != nil {
		return e
	}
	if _, e := broadcastCheck("linear", x, bias); e != nil {
		return errorf("linear", "bias %s does not broadcast with the output %s", FormatShape(bias.node.Shape), FormatShape(x.node.Shape))
	}
	return x.Add(bias)
}

// ---- windows ----

// tupleArg expands a tinygrad int-or-tuple argument to n values: nil gives
// def, one value is repeated, n values are taken as they are.
func tupleArg(op, name string, v []int, n, def int) ([]int, *Tensor) {
	switch len(v) {
	case 0:
		return slices.Repeat([]int{def}, n), nil
	case 1:
		return slices.Repeat([]int{v[0]}, n), nil
	case n:
		return slices.Clone(v), nil
	}
	return nil, errorf(op, "%s %v must be one value or %d values", name, v, n)
}

// ceilDiv rounds a/b up (a >= 0, b > 0).
func ceilDiv(a, b int) int { return (a + b - 1) / b }

// pool is tinygrad's _pool: the sliding windows of kernel k (with stride
// and dilation) over the last len(k) dimensions as a pure view, of shape
// (..., o_1..o_n, k_1..k_n). When windows overlap (or are dilated) the
// input is repeated, so that shrink+reshape can step each window one
// element further than the last; otherwise pad+reshape+shrink suffices.
func (t *Tensor) pool(op string, k, stride, dilation []int) *Tensor {
	if t.err != nil {
		return t
	}
	nk := len(k)
	if t.Ndim() < nk {
		return errorf(op, "cannot pool %s with a %d-D kernel %v", FormatShape(t.node.Shape), nk, k)
	}
	for j := range k {
		if k[j] <= 0 || stride[j] <= 0 || dilation[j] <= 0 {
			return errorf(op, "kernel %v, stride %v and dilation %v must be positive", k, stride, dilation)
		}
	}
	noop := t.node.Shape[:t.Ndim()-nk]
	in := t.node.Shape[t.Ndim()-nk:]
	for j := range k {
		if dilation[j]*(k[j]-1)+1 > in[j] {
			return errorf(op, "kernel %v (dilation %v) is larger than the (padded) input %s", k, dilation, FormatShape(in))
		}
	}
	out := make([]int, nk)
	overlap := false
	for j := range k {
		out[j] = ceilDiv(in[j]-dilation[j]*(k[j]-1), stride[j])
		overlap = overlap || k[j] > stride[j] || dilation[j] != 1
	}
	keep := func(extra ...[2]int) [][2]int { // full bounds on the noop dims
		b := make([][2]int, 0, len(noop)+len(extra))
		for _, s := range noop {
			b = append(b, [2]int{0, s})
		}
		return append(b, extra...)
	}
	withNoop := func(extra ...int) []int { return append(slices.Clone(noop), extra...) }
	nn := len(noop)
	var order []int
	x := t
	if overlap {
		// f doubles the input when one stride step past the end is needed
		f := make([]int, nk)
		reps := ones(nn)
		var b [][2]int
		var shp []int
		for j := range k {
			f[j] = 1
			if out[j]*stride[j] > in[j]-dilation[j]*(k[j]-1) {
				f[j] = 2
			}
			span := in[j]*f[j] + dilation[j]
			reps = append(reps, ceilDiv(k[j]*span, in[j]))
			b = append(b, [2]int{0, k[j] * span})
			shp = append(shp, k[j], span)
		}
		// repeat, then lay the copies out as k rows of span: row r starts r
		// steps of (span mod in) = dilation further into the input
		x = x.Repeat(reps...).Shrink(keep(b...)).Reshape(withNoop(shp...)...)
		b, shp = nil, nil
		for j := range k {
			b = append(b, [2]int{0, k[j]}, [2]int{0, out[j] * stride[j]})
			shp = append(shp, k[j], out[j], stride[j])
		}
		x = x.Shrink(keep(b...)).Reshape(withNoop(shp...)...)
		b, shp = nil, nil
		for j := range k {
			b = append(b, [2]int{0, k[j]}, [2]int{0, out[j]}, [2]int{0, 1})
			shp = append(shp, k[j], out[j])
		}
		x = x.Shrink(keep(b...)).Reshape(withNoop(shp...)...)
		order = allAxes(nn)
		for j := range k {
			order = append(order, nn+2*j+1)
		}
		for j := range k {
			order = append(order, nn+2*j)
		}
		return x.Permute(order...)
	}
	pads := make([][2]int, t.Ndim())
	var b [][2]int
	var shp []int
	for j := range k {
		pads[nn+j] = [2]int{0, max(0, out[j]*stride[j]-in[j])}
		b = append(b, [2]int{0, out[j] * stride[j]})
		shp = append(shp, out[j], stride[j])
	}
	x = x.padZero(pads).Shrink(keep(b...)).Reshape(withNoop(shp...)...)
	b = nil
	for j := range k {
		b = append(b, [2]int{0, out[j]}, [2]int{0, k[j]})
	}
	x = x.Shrink(keep(b...))
	order = allAxes(nn)
	for j := range k {
		order = append(order, nn+2*j)
	}
	for j := range k {
		order = append(order, nn+2*j+1)
	}
	return x.Permute(order...)
}

// poolPads resolves tinygrad's padding argument for dims spatial
// dimensions to the flat (torch) order: (left, right, top, bottom, ...),
// last dimension first. One value pads every side; dims values (ph, pw)
// pad both sides of each dimension.
func poolPads(op string, padding []int, dims int) ([]int, *Tensor) {
	for _, p := range padding {
		if p < 0 {
			return nil, errorf(op, "padding %v must not be negative", padding)
		}
	}
	switch len(padding) {
	case 0:
		return make([]int, 2*dims), nil
	case 2 * dims:
		return slices.Clone(padding), nil
	case 1:
		return slices.Repeat([]int{padding[0]}, 2*dims), nil
	case dims:
		flat := make([]int, 0, 2*dims)
		for j := dims - 1; j >= 0; j-- {
			flat = append(flat, padding[j], padding[j])
		}
		return flat, nil
	}
	return nil, errorf(op, "padding %v must be one value, %d values or %d values", padding, dims, 2*dims)
}

// groupPads turns flat (torch-order) pads into (before, after) pairs for
// every dimension of a tensor with ndim dimensions, the last len/2 padded.
func groupPads(flat []int, ndim int) [][2]int {
	dims := len(flat) / 2
	g := make([][2]int, ndim)
	for j := range dims {
		g[ndim-dims+j] = [2]int{flat[2*(dims-1-j)], flat[2*(dims-1-j)+1]}
	}
	return g
}

// ceilModePads grows the after-pads so that a last, partial window is
// kept (ceil_mode), but never one that starts in the padding.
func ceilModePads(flat []int, in, k, stride, dilation []int) []int {
	out := slices.Clone(flat)
	dims := len(k)
	for j := range dims {
		pB, pA := flat[2*(dims-1-j)], flat[2*(dims-1-j)+1]
		span := dilation[j]*(k[j]-1) + 1
		o := ceilDiv(in[j]+pB+pA-span, stride[j]) + 1
		out[len(out)-1-2*j] += stride[j]*(o-1) + span - (in[j] + pB + pA) - max(stride[j]*(o-1)-(pB+in[j]-1), 0)
	}
	return out
}

// ---- convolution ----

// ConvOpts are conv2d's keyword arguments; zero values are tinygrad's
// defaults. Stride and Dilation take one value or one per spatial
// dimension. Padding takes one value, one per spatial dimension, or two per
// dimension in tinygrad's flat order (left, right, top, bottom).
type ConvOpts struct {
	Groups   int // 0 means 1
	Stride   []int
	Dilation []int
	Padding  []int
}

// Conv2d is the convolution of an (N, Cin, *spatial) input with a
// (Cout, Cin/groups, *kernel) weight, for any number of spatial dimensions
// (1-D and 3-D too). The input is padded, its windows are taken as a view
// (N, Cin, *out, *kernel), broadcast against the weight as
// (N, groups, Cout/groups, *out, Cin/groups, *kernel), and summed over the
// last 1+len(kernel) axes: one reduce, fusable with its epilogue.
func (t *Tensor) Conv2d(weight, bias *Tensor, o ConvOpts) *Tensor {
	if e := firstErr(t, weight); e != nil {
		return e
	}
	xs, ws := t.node.Shape, weight.node.Shape
	if t.Ndim() < 3 {
		return errorf("conv2d", "input %s needs at least 3 dimensions (N, C, spatial...)", FormatShape(xs))
	}
	if t.Ndim() != weight.Ndim() {
		return errorf("conv2d", "input %s and weight %s must have the same number of dimensions", FormatShape(xs), FormatShape(ws))
	}
	groups := o.Groups
	if groups == 0 {
		groups = 1
	}
	if groups < 0 {
		return errorf("conv2d", "groups must be positive, got %d", groups)
	}
	bs, cinX := xs[0], xs[1]
	cout, cin := ws[0], ws[1]
	hw := ws[2:]
	if groups*cin != cinX {
		return errorf("conv2d", "input %s has %d channels, weight %s expects %d (groups=%d x %d)", FormatShape(xs), cinX, FormatShape(ws), groups*cin, groups, cin)
	}
	if cout%groups != 0 {
		return errorf("conv2d", "weight %s has %d output channels, not divisible by groups=%d", FormatShape(ws), cout, groups)
	}
	if bias != nil {
		if e := firstErr(bias); e != nil {
			return e
		}
		if !slices.Equal(bias.node.Shape, []int{cout}) {
			return errorf("conv2d", "bias %s does not match the %d output channels of weight %s", FormatShape(bias.node.Shape), cout, FormatShape(ws))
		}
	}
	n := len(hw)
	stride, e := tupleArg("conv2d", "stride", o.Stride, n, 1)
	if e != nil {
		return e
	}
	dilation, e := tupleArg("conv2d", "dilation", o.Dilation, n, 1)
	if e != nil {
		return e
	}
	flat, e := poolPads("conv2d", o.Padding, n)
	if e != nil {
		return e
	}
	x := t.padZero(groupPads(flat, t.Ndim())).pool("conv2d", hw, stride, dilation) // (bs, cin_, *out, *hw)
	if x.err != nil {
		return x
	}
	rcout := cout / groups
	oyx := slices.Clone(x.node.Shape[2 : 2+n])
	// The windows are laid out (bs, cin, *hw, *out) before the expand over
	// rcout: the input gradient's first stage (the sum over rcout, stored)
	// then keeps the output positions innermost, where both it and the
	// output gradient are contiguous, and vectorizes like a matmul.
	first := []int{0, 1}
	for i := range n {
		first = append(first, 2+n+i)
	}
	for i := range n {
		first = append(first, 2+i)
	}
	shp := append(append(append([]int{bs, groups, cin}, hw...), 1), oyx...)
	exp := append(append(append([]int{bs, groups, cin}, hw...), rcout), oyx...)
	order := []int{0, 1, 3 + n}
	for i := range n {
		order = append(order, 4+n+i)
	}
	order = append(order, 2)
	for i := range n {
		order = append(order, 3+i)
	}
	x = x.Permute(first...).Reshape(shp...).Expand(exp...).Permute(order...) // (bs, groups, rcout, *out, cin, *hw)
	weight = outputChannelsLast(weight, stride, oyx[n-1], bs*prod(oyx))
	wr := weight.Reshape(append(append([]int{1, groups, rcout}, ones(n)...), append([]int{cin}, hw...)...)...)
	axes := make([]int, 1+n)
	for i := range axes {
		axes[i] = -1 - i
	}
	out := ir.Promote(t.DType(), weight.DType())
	ret := x.Mul(wr).Sum(true, axes...).Reshape(append([]int{bs, cout}, oyx...)...).Cast(out)
	if convGradFits(t, weight, groups, stride, dilation, flat, hw) && ret.err == nil {
		x, w := t, weight
		ret.node.setCustom(&CustomGrad{Inputs: []*Node{t.node, weight.node}, Grad: func(g *Tensor) []*Tensor {
			return convGrads(x, w, g, flat, hw)
		}})
	}
	if bias == nil {
		return ret
	}
	return ret.Add(bias.Reshape(append([]int{1, cout}, ones(n)...)...))
}

// outputChannelsLast stores a strided convolution's weight (each element
// used uses times) with the output channels contiguous (viewed back as
// (Cout, Cin, *kernel)) on engines that repack matmul operands
// (tensor.PanelEngine): a stride spreads an output
// row's input loads apart, so the kernel's vectors go along the output
// channels, which then read the weight contiguously (batch 1, copy
// included: a 256->512 1x1 stride-2 conv at 28x28 5.9 -> 34 GFLOP/s, a
// 128-channel 3x3 stride-2 conv at 56x56 2.1 -> 59, ResNet's 7x7 stem
// 2.9 -> 52, on the loaded 2-core CI host). The copy is the weight's size,
// once per run; a weight that is already a permuted view is used as it is.
func outputChannelsLast(w *Tensor, stride []int, width, uses int) *Tensor {
	if w.err != nil || w.node.ctx.PanelWidth() <= 0 || w.node.Op == ir.OpPermute {
		return w
	}
	strided := false
	for _, s := range stride {
		strided = strided || s > 1
	}
	// Likewise an output row too short for whole vectors (the MNIST cnn's
	// 10 columns: 4+1-lane blocks), where the weight is small enough for
	// its copy to cost nothing next to the convolution, or each of its
	// elements is used at least 64 times (batch x output positions: the
	// copy, ~2 ms for 512x512x3x3 on the Zen 5 guest, pays from ~55):
	// ResNet's 14x14 stage with 256 channels at batch 8 60.6-61.2 ->
	// 14.6-14.8 ms (+0.4 for the copy), its 7x7 with 512 35-36 -> 9.0-9.4
	// (+2.0-2.2), the rows' vectors then along the output channels.
	short := width%4 != 0 && w.node.Shape[0]%8 == 0 && (w.Numel() <= 1<<16 || uses >= 64)
	if !strided && !short {
		return w
	}
	n := w.Ndim()
	last := append(allAxes(n)[1:], 0) // (Cin, *kernel, Cout)
	back := append([]int{n - 1}, allAxes(n-1)...)
	return w.Permute(last...).Contiguous().Permute(back...)
}

// ---- pooling ----

// PoolOpts are the pooling keyword arguments; zero values are tinygrad's
// defaults: a (2, 2) kernel, stride = kernel, dilation 1, no padding.
type PoolOpts struct {
	Kernel   []int
	Stride   []int
	Dilation []int
	Padding  []int
	CeilMode bool
}

// poolSetup resolves PoolOpts for t: kernel, stride, dilation, flat pads
// and the reduced axes (the last len(kernel)).
func (t *Tensor) poolSetup(op string, o PoolOpts) (k, s, d, pads []int, axes []int, err *Tensor) {
	kern := o.Kernel
	if len(kern) == 0 {
		kern = []int{2, 2}
	}
	if k, err = tupleArg(op, "kernel_size", kern, max(len(kern), 2), 2); err != nil {
		return
	}
	n := len(k)
	if t.Ndim() < n {
		err = errorf(op, "input %s has fewer dimensions than the %d-D kernel %v", FormatShape(t.node.Shape), n, k)
		return
	}
	stride := o.Stride
	if len(stride) == 0 {
		stride = k
	}
	if s, err = tupleArg(op, "stride", stride, n, 1); err != nil {
		return
	}
	if d, err = tupleArg(op, "dilation", o.Dilation, n, 1); err != nil {
		return
	}
	if pads, err = poolPads(op, o.Padding, n); err != nil {
		return
	}
	for j := range n {
		if k[j] <= 0 || s[j] <= 0 || d[j] <= 0 {
			err = errorf(op, "kernel %v, stride %v and dilation %v must be positive", k, s, d)
			return
		}
	}
	if o.CeilMode {
		pads = ceilModePads(pads, t.node.Shape[t.Ndim()-n:], k, s, d)
	}
	for j := range n {
		axes = append(axes, -n+j)
	}
	return
}

// minValue is the smallest value of dt (max pooling pads with it).
func minValue(dt ir.DType) float64 {
	if dt.IsFloat() {
		return math.Inf(-1)
	}
	lo, _ := dt.ValueRange()
	return lo
}

// MaxPool2d is the max over each window, padding with the dtype's minimum
// (any number of spatial dims: the kernel's length decides).
func (t *Tensor) MaxPool2d(o PoolOpts) *Tensor {
	if t.err != nil {
		return t
	}
	k, s, d, pads, axes, e := t.poolSetup("max_pool2d", o)
	if e != nil {
		return e
	}
	return t.Pad(groupPads(pads, t.Ndim()), minValue(t.DType())).pool("max_pool2d", k, s, d).Max(false, axes...)
}

// AvgPool2d is the mean over each window. With countIncludePad (tinygrad's
// default) padded zeros count in the mean; without it only input elements
// do. With CeilMode the extra partial windows never count their overhang.
func (t *Tensor) AvgPool2d(o PoolOpts, countIncludePad bool) *Tensor {
	if t.err != nil {
		return t
	}
	plain := o
	plain.CeilMode = false
	k, s, d, reg, axes, e := t.poolSetup("avg_pool2d", plain)
	if e != nil {
		return e
	}
	_, _, _, ceil, _, _ := t.poolSetup("avg_pool2d", o)
	win := func(x *Tensor, pads []int) *Tensor {
		return x.padZero(groupPads(pads, x.Ndim())).pool("avg_pool2d", k, s, d)
	}
	if !countIncludePad {
		return win(t, ceil).Sum(false, axes...).Div(win(t.OnesLike(), ceil).Sum(false, axes...))
	}
	if !o.CeilMode {
		return win(t, reg).Mean(false, axes...)
	}
	extra := make([]int, len(ceil))
	for i := range ceil {
		extra[i] = ceil[i] - reg[i]
	}
	padded := t.padZero(groupPads(reg, t.Ndim())).OnesLike()
	return win(t, ceil).Sum(false, axes...).Div(win(padded, extra).Sum(false, axes...))
}

// ---- normalization ----

// Layernorm normalizes over axes (default -1) to zero mean and unit
// variance: (x-mean)*rsqrt(mean((x-mean)^2)+eps); tinygrad's eps is 1e-5.
func (t *Tensor) Layernorm(eps float64, axes ...int) *Tensor {
	if t.err != nil {
		return t
	}
	if len(axes) == 0 {
		axes = []int{-1}
	}
	if _, e := t.reducedAxes("layernorm", axes); e != nil {
		return e
	}
	y := t.Sub(t.Mean(true, axes...))
	v := y.Mul(y).Mean(true, axes...)
	return y.Mul(v.Add(v.fscalar(eps)).Rsqrt())
}

// Batchnorm is (x-mean)*weight*invstd + bias with the statistics laid
// along axes (default 1, the channels); weight and bias may be nil.
func (t *Tensor) Batchnorm(weight, bias, mean, invstd *Tensor, axes ...int) *Tensor {
	if e := firstErr(t, mean, invstd); e != nil {
		return e
	}
	if len(axes) == 0 {
		axes = []int{1}
	}
	norm, e := t.reducedAxes("batchnorm", axes)
	if e != nil {
		return e
	}
	shape := ones(t.Ndim())
	for _, a := range norm {
		shape[a] = t.node.Shape[a]
	}
	fit := func(name string, p *Tensor) *Tensor {
		if p.Numel() != prod(shape) {
			return errorf("batchnorm", "%s %s does not fit input %s along axes %v (needs %d elements)", name, FormatShape(p.node.Shape), FormatShape(t.node.Shape), norm, prod(shape))
		}
		return p.Reshape(shape...)
	}
	x := t.Sub(fit("mean", mean))
	if weight != nil {
		if e := firstErr(weight); e != nil {
			return e
		}
		x = x.Mul(fit("weight", weight))
	}
	if invstd.Ndim() == len(norm) {
		x = x.Mul(fit("invstd", invstd))
	} else {
		x = x.Mul(invstd)
	}
	if bias != nil {
		if e := firstErr(bias); e != nil {
			return e
		}
		x = x.Add(fit("bias", bias))
	}
	return x
}

// ---- losses ----

// reduceLoss applies a loss reduction: "mean", "sum" or "none".
func reduceLoss(op string, x *Tensor, reduction string) *Tensor {
	switch reduction {
	case "mean":
		return x.Mean(false)
	case "sum":
		return x.Sum(false)
	case "none":
		return x
	}
	return errorf(op, "reduction must be \"none\", \"mean\" or \"sum\", got %q", reduction)
}

// oneHotAlong compares t with 0..n-1 laid along a new last dimension: the
// bool one-hot mask of integer labels.
func (t *Tensor) oneHotAlong(n int) *Tensor {
	if t.err != nil {
		return t
	}
	return t.Unsqueeze(-1).Eq(t.node.ctx.idxRange(n))
}

// SparseCategoricalCrossentropy is the cross entropy of logits t (..., C)
// against integer labels Y (...). Labels equal to ignoreIndex do not count
// (-1, tinygrad's default, means none is ignored), and the mean divides by
// the number of counted labels. labelSmoothing mixes in the mean
// log-probability.
func (t *Tensor) SparseCategoricalCrossentropy(Y *Tensor, ignoreIndex int, labelSmoothing float64, reduction string) *Tensor {
	const op = "sparse_categorical_crossentropy"
	if e := firstErr(t, Y); e != nil {
		return e
	}
	if labelSmoothing < 0 || labelSmoothing > 1 {
		return errorf(op, "label_smoothing must be in [0, 1], got %g", labelSmoothing)
	}
	if reduction != "mean" && reduction != "sum" && reduction != "none" {
		return errorf(op, "reduction must be \"none\", \"mean\" or \"sum\", got %q", reduction)
	}
	if t.Ndim() == 0 || !slices.Equal(Y.node.Shape, t.node.Shape[:t.Ndim()-1]) {
		return errorf(op, "labels %s must have the shape of the logits %s without the class dimension", FormatShape(Y.node.Shape), FormatShape(t.node.Shape))
	}
	logProbs := t.LogSoftmax(-1)
	var mask *Tensor
	if ignoreIndex != -1 {
		mask = Y.Ne(Y.Const(float64(ignoreIndex), Y.DType()))
	} else {
		mask = Y.node.ctx.Full(Y.node.Shape, 1, ir.Bool)
	}
	y := Y.oneHotAlong(t.node.Shape[t.Ndim()-1]).And(mask.Unsqueeze(-1))
	ls := logProbs.fscalar(labelSmoothing)
	smoothing := ls.Mul(logProbs.Mean(false, -1).Mul(mask))
	unreduced := logProbs.fscalar(1 - labelSmoothing).Mul(logProbs.Mul(y).Sum(false, -1)).Add(smoothing)
	if reduction == "mean" {
		return unreduced.Sum(false).Div(mask.Sum(false)).Neg()
	}
	return reduceLoss(op, unreduced, reduction).Neg()
}

// CrossEntropy is the cross entropy of logits t (N, C, ...) against class
// probabilities Y of the same shape, or class indices (N) one-hot encoded.
func (t *Tensor) CrossEntropy(Y *Tensor, reduction string, labelSmoothing float64) *Tensor {
	const op = "cross_entropy"
	if e := firstErr(t, Y); e != nil {
		return e
	}
	if labelSmoothing < 0 || labelSmoothing > 1 {
		return errorf(op, "label_smoothing must be in [0, 1], got %g", labelSmoothing)
	}
	if t.Ndim() < 2 {
		return errorf(op, "logits %s need a class dimension (N, C, ...)", FormatShape(t.node.Shape))
	}
	if Y.Ndim() < 2 {
		Y = Y.OneHot(t.node.Shape[1])
	}
	if _, e := broadcastCheck(op, t, Y); e != nil {
		return e
	}
	y := Y.Mul(Y.fscalar(1 - labelSmoothing))
	y = y.Add(y.fscalar(labelSmoothing / float64(Y.node.Shape[1])))
	return reduceLoss(op, t.LogSoftmax(1).Mul(y).Sum(false, 1).Neg(), reduction)
}

// BinaryCrossentropy is -(Y*log(p) + (1-Y)*log(1-p)) for probabilities t.
func (t *Tensor) BinaryCrossentropy(Y *Tensor, reduction string) *Tensor {
	if e := firstErr(t, Y); e != nil {
		return e
	}
	if _, e := broadcastCheck("binary_crossentropy", t, Y); e != nil {
		return e
	}
	one := t.iscalar(1)
	l := Y.Neg().Mul(t.Log()).Sub(one.Sub(Y).Mul(one.Sub(t).Log()))
	return reduceLoss("binary_crossentropy", l, reduction)
}

// BinaryCrossentropyLogits is BinaryCrossentropy of sigmoid(t), computed
// stably with logsigmoid.
func (t *Tensor) BinaryCrossentropyLogits(Y *Tensor, reduction string) *Tensor {
	if e := firstErr(t, Y); e != nil {
		return e
	}
	if _, e := broadcastCheck("binary_crossentropy_logits", t, Y); e != nil {
		return e
	}
	one := Y.iscalar(1)
	l := Y.Mul(t.Logsigmoid()).Add(one.Sub(Y).Mul(t.Neg().Logsigmoid())).Neg()
	return reduceLoss("binary_crossentropy_logits", l, reduction)
}

// OneHot encodes integer labels along a new last dimension of numClasses
// as int32 ones and zeros. (tinygrad's numClasses=-1 reads the max label,
// which a lazy graph cannot do: the frontend realizes it first.)
func (t *Tensor) OneHot(numClasses int) *Tensor {
	if t.err != nil {
		return t
	}
	if !t.DType().IsInt() {
		return errorf("one_hot", "labels must be integers, got %s", t.DType())
	}
	if numClasses <= 0 {
		return errorf("one_hot", "num_classes must be positive, got %d", numClasses)
	}
	return t.oneHotAlong(numClasses).Where(t.Const(1, ir.Int32), t.Const(0, ir.Int32))
}

// triMask is j - i >= diagonal (upper) or j - i <= diagonal (lower) over
// the last two dimensions of shape, from two index ranges.
func (c *Context) triMask(op string, shape []int, diagonal int, upper bool) *Tensor {
	if len(shape) < 2 {
		return errorf(op, "needs at least 2 dimensions, got shape %s", FormatShape(shape))
	}
	rows, cols := shape[len(shape)-2], shape[len(shape)-1]
	d := c.idxRange(cols).Reshape(1, cols).Sub(c.idxRange(rows).Reshape(rows, 1))
	diag := c.Const(float64(diagonal), ir.Int32)
	if upper {
		return d.Ge(diag)
	}
	return d.Le(diag)
}

// Triu keeps the elements on and above the diagonal-th diagonal.
func (t *Tensor) Triu(diagonal int) *Tensor {
	if t.err != nil {
		return t
	}
	m := t.node.ctx.triMask("triu", t.node.Shape, diagonal, true)
	if m.err != nil {
		return m
	}
	return m.Where(t, t.Const(0, t.DType()))
}

// Tril keeps the elements on and below the diagonal-th diagonal.
func (t *Tensor) Tril(diagonal int) *Tensor {
	if t.err != nil {
		return t
	}
	m := t.node.ctx.triMask("tril", t.node.Shape, diagonal, false)
	if m.err != nil {
		return m
	}
	return m.Where(t, t.Const(0, t.DType()))
}

// ScaledDotProductAttention is softmax(q·kᵀ/sqrt(d) + mask)·v. A bool mask
// keeps where true (-inf elsewhere); causal masks the upper triangle. mask
// may be nil.
func (t *Tensor) ScaledDotProductAttention(key, value, mask *Tensor, causal bool) *Tensor {
	const op = "scaled_dot_product_attention"
	if e := firstErr(t, key, value); e != nil {
		return e
	}
	if t.Ndim() < 2 || key.Ndim() < 2 || value.Ndim() < 2 {
		return errorf(op, "query %s, key %s and value %s need at least 2 dimensions", FormatShape(t.node.Shape), FormatShape(key.node.Shape), FormatShape(value.node.Shape))
	}
	dt := ir.Promote(ir.Promote(t.DType(), key.DType()), ir.Float32)
	qk := t.Cast(dt).Dot(key.Cast(dt).Transpose(-2, -1))
	if qk.err != nil {
		return qk
	}
	qk = qk.Div(qk.Const(math.Sqrt(float64(t.node.Shape[t.Ndim()-1])), dt))
	if causal {
		mask = qk.node.ctx.triMask(op, qk.node.Shape, 0, false)
	}
	if mask != nil {
		if e := firstErr(mask); e != nil {
			return e
		}
		if _, e := broadcastCheck(op, qk, mask); e != nil {
			return e
		}
		if mask.DType() == ir.Bool {
			mask = mask.Where(qk.Const(0, dt), qk.Const(math.Inf(-1), dt))
		}
		qk = qk.Add(mask)
	}
	return qk.Cast(t.DType()).Softmax(-1).Dot(value)
}

// PoolWindows is a pool's sliding windows as a view of shape
// (..., *out, *kernel), the input padded with value (and, with CeilMode,
// grown so that a last partial window is kept): the building block of
// custom pools (Lp pooling, a max pool's indices). It returns the number of
// kernel dimensions.
func (t *Tensor) PoolWindows(o PoolOpts, value float64) (*Tensor, int) {
	if t.err != nil {
		return t, 0
	}
	k, s, d, pads, _, e := t.poolSetup("pool_windows", o)
	if e != nil {
		return e, 0
	}
	return t.Pad(groupPads(pads, t.Ndim()), value).pool("pool_windows", k, s, d), len(k)
}

// ConvTransposeOpts are conv_transpose2d's keyword arguments (zero values
// are tinygrad's defaults); OutputPadding adds to the end of each spatial
// output dimension.
type ConvTransposeOpts struct {
	Groups        int
	Stride        []int
	Dilation      []int
	Padding       []int
	OutputPadding []int
}

// ConvTranspose2d is the transposed convolution of an (N, Cin, *spatial)
// input with a (Cin, Cout/groups, *kernel) weight (the input gradient of
// Conv2d): the input's elements are spread stride apart with zeros between,
// padded by dilation*(kernel-1)-padding (a negative amount crops), and
// convolved with the weight flipped spatially, in and out channels swapped
// within each group. Any number of spatial dimensions.
func (t *Tensor) ConvTranspose2d(weight, bias *Tensor, o ConvTransposeOpts) *Tensor {
	const op = "conv_transpose2d"
	if e := firstErr(t, weight); e != nil {
		return e
	}
	xs, ws := t.node.Shape, weight.node.Shape
	if t.Ndim() < 3 || weight.Ndim() != t.Ndim() {
		return errorf(op, "input %s and weight %s must be (N, Cin, spatial...) and (Cin, Cout/groups, kernel...)", FormatShape(xs), FormatShape(ws))
	}
	g := o.Groups
	if g == 0 {
		g = 1
	}
	if g < 0 || ws[0] != xs[1] || ws[0]%g != 0 {
		return errorf(op, "weight %s does not fit input %s with groups=%d (its first dimension is the input channels)", FormatShape(ws), FormatShape(xs), g)
	}
	hw := ws[2:]
	n := len(hw)
	stride, e := tupleArg(op, "stride", o.Stride, n, 1)
	if e != nil {
		return e
	}
	dil, e := tupleArg(op, "dilation", o.Dilation, n, 1)
	if e != nil {
		return e
	}
	outPad, e := tupleArg(op, "output_padding", o.OutputPadding, n, 0)
	if e != nil {
		return e
	}
	flat, e := poolPads(op, o.Padding, n)
	if e != nil {
		return e
	}
	for j := range n {
		if stride[j] <= 0 || dil[j] <= 0 || outPad[j] < 0 {
			return errorf(op, "stride %v and dilation %v must be positive, output_padding %v not negative", stride, dil, outPad)
		}
	}
	cin, rcout := ws[0]/g, ws[1]
	w := weight.Reshape(append([]int{g, cin, rcout}, hw...)...).Transpose(1, 2).
		Reshape(append([]int{g * rcout, cin}, hw...)...)
	spatial := make([]int, n)
	for i := range n {
		spatial[i] = 2 + i
	}
	w = w.Flip(spatial...)
	x := t
	// zeros between the elements: (L) -> (L, 1) -> pad to (L, s) -> (L*s) -> (L-1)*s+1
	for j := range n {
		s := stride[j]
		if s == 1 {
			continue
		}
		ax := 2 + j
		shp := x.Shape()
		l := shp[ax]
		x = x.Unsqueeze(ax + 1)
		p := make([][2]int, x.Ndim())
		p[ax+1] = [2]int{0, s - 1}
		x = x.padZero(p).Reshape(append(append(slices.Clone(shp[:ax]), l*s), shp[ax+1:]...)...)
		x = x.Shrink(shrinkDim(x.node.Shape, ax, 0, max((l-1)*s+1, 0)))
	}
	// pads (k-1)*d - p, cropping where negative
	bounds := make([][2]int, x.Ndim())
	for i, s := range x.node.Shape {
		bounds[i] = [2]int{0, s}
	}
	convPad := make([]int, 2*n)
	for j := range n {
		pB, pA := flat[2*(n-1-j)], flat[2*(n-1-j)+1]
		before := (hw[j]-1)*dil[j] - pB
		after := (hw[j]-1)*dil[j] - pA + outPad[j]
		if before < 0 {
			bounds[2+j][0] = -before
			before = 0
		}
		if after < 0 {
			bounds[2+j][1] += after
			after = 0
		}
		if bounds[2+j][0] > bounds[2+j][1] {
			return errorf(op, "padding %v crops more than the input %s has", o.Padding, FormatShape(xs))
		}
		convPad[2*(n-1-j)], convPad[2*(n-1-j)+1] = before, after
	}
	return x.Shrink(bounds).Conv2d(w, bias, ConvOpts{Groups: g, Dilation: dil, Padding: convPad})
}
