package onnx

import (
	"math"
	"slices"

	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// Resizing, quantization and signal processing.

var miscOps = map[string]opDef{
	"Resize":                {since: 10, run: one(resizeOp)},
	"Upsample":              {since: 7, run: one(resizeOp)},
	"QuantizeLinear":        {since: 10, run: one(quantizeLinear)},
	"DequantizeLinear":      {since: 10, run: one(dequantizeLinear)},
	"DynamicQuantizeLinear": {since: 11, run: dynamicQuantizeLinear},
	"MatMulInteger":         {since: 10, run: one(matMulInteger)},
	"ConvInteger":           {since: 10, run: one(convInteger)},
	"QLinearMatMul":         {since: 10, run: one(qlinearMatMul)},
	"QLinearConv":           {since: 10, run: one(qlinearConv)},
	"HannWindow":            {since: 17, host: hostOnly(window(func(x float64) float64 { return 0.5 - 0.5*math.Cos(x) })), anyInput: true},
	"HammingWindow":         {since: 17, host: hostOnly(window(func(x float64) float64 { return 25.0/46 - 21.0/46*math.Cos(x) })), anyInput: true},
	"BlackmanWindow":        {since: 17, host: hostOnly(window(func(x float64) float64 { return 0.42 - 0.5*math.Cos(x) + 0.08*math.Cos(2*x) })), anyInput: true},
	"MelWeightMatrix":       {since: 17, host: hostOnly(melWeightMatrix), anyInput: true},
	"DFT":                   {since: 17, run: one(dftOp)},
	"STFT":                  {since: 17, run: one(stftOp)},
	"Det":                   {since: 11, run: one(det)},
	"TfIdfVectorizer":       {since: 9, run: one(tfIdf)},
}

// ---- quantization ----

// perAxis views a scale or zero point (a scalar, or 1-D along axis) so it
// broadcasts against a tensor of rank r.
func perAxis(t *tensor.Tensor, axis, r int) *tensor.Tensor {
	if t.Ndim() == 0 || t.Numel() == 1 && t.Ndim() <= 1 {
		return t.Reshape()
	}
	if axis < 0 {
		axis += r
	}
	if axis < 0 || axis >= r {
		return tensor.Errorf("quantize", "axis %d is out of range for rank %d", axis, r)
	}
	shape := ones(r)
	shape[axis] = t.Numel()
	return t.Reshape(shape...)
}

// saturate rounds half to even and clamps to typ's range, then casts.
func saturate(x *tensor.Tensor, dt ir.DType) *tensor.Tensor {
	ctx := x.Context()
	x = x.Round()
	lo, hi := ctx.Const(lowest(dt), x.DType()), ctx.Const(highest(dt), x.DType())
	return minOf(maxOf(x, lo), hi).Cast(dt)
}

func quantizeLinear(n *node) *tensor.Tensor {
	x, scale := n.x(0), n.x(1)
	zp := n.opt(2)
	if n.err != nil {
		return x
	}
	axis := n.int("axis", 1)
	out := ir.Uint8
	if zp != nil {
		out = zp.DType()
	}
	y := x.Cast(ir.Float32).Div(perAxis(scale, axis, x.Ndim()).Cast(ir.Float32)).Round()
	if zp != nil {
		y = y.Add(perAxis(zp, axis, x.Ndim()).Cast(ir.Float32))
	}
	return saturate(y, out)
}

func dequantizeLinear(n *node) *tensor.Tensor {
	x, scale := n.x(0), n.x(1)
	zp := n.opt(2)
	if n.err != nil {
		return x
	}
	axis := n.int("axis", 1)
	y := x.Cast(ir.Int32)
	if zp != nil {
		y = y.Sub(perAxis(zp, axis, x.Ndim()).Cast(ir.Int32))
	}
	return y.Cast(ir.Float32).Mul(perAxis(scale, axis, x.Ndim()))
}

// dynamicQuantizeLinear quantizes to uint8 with the scale and zero point
// that map [min(x, 0), max(x, 0)] onto [0, 255].
func dynamicQuantizeLinear(n *node) []*tensor.Tensor {
	x := n.x(0)
	if n.err != nil {
		return nil
	}
	zero := n.ctx.Const(0, ir.Float32)
	lo := minOf(x.Min(false), zero)
	hi := maxOf(x.Max(false), zero)
	scale := hi.Sub(lo).Div(n.ctx.Const(255, ir.Float32))
	zp := saturate(zero.Sub(lo.Div(scale)), ir.Uint8)
	y := saturate(x.Div(scale).Round().Add(zp.Cast(ir.Float32)), ir.Uint8)
	return []*tensor.Tensor{y, scale, zp}
}

// minusZero subtracts an optional zero point in int32 (per axis when 1-D).
func minusZero(x, zp *tensor.Tensor, axis int) *tensor.Tensor {
	y := x.Cast(ir.Int32)
	if zp == nil {
		return y
	}
	return y.Sub(perAxis(zp, axis, x.Ndim()).Cast(ir.Int32))
}

func matMulInteger(n *node) *tensor.Tensor {
	a, b := n.x(0), n.x(1)
	if n.err != nil {
		return a
	}
	// a's zero point is per row (axis -2), b's per column (axis -1)
	return minusZero(a, n.opt(2), max(a.Ndim()-2, 0)).Dot(minusZero(b, n.opt(3), b.Ndim()-1))
}

func convInteger(n *node) *tensor.Tensor {
	x, w := n.x(0), n.x(1)
	if n.err != nil {
		return x
	}
	xi := minusZero(x, n.opt(2), 1)
	wi := minusZero(w, n.opt(3), 0)
	kernel := n.intList("kernel_shape", w.Shape()[2:])
	s := n.windowAttrs(x.Shape()[2:], kernel)
	if n.err != nil {
		return x
	}
	return xi.Conv2d(wi, nil, tensor.ConvOpts{Groups: n.int("group", 1), Stride: s.strides, Dilation: s.dilations, Padding: flatPads(s.pads)})
}

// requantize scales an int32 accumulator by s and quantizes to zp's type.
func requantize(acc, s, zp *tensor.Tensor) *tensor.Tensor {
	y := acc.Cast(ir.Float32).Mul(s).Round().Add(zp.Cast(ir.Float32))
	return saturate(y, zp.DType())
}

func qlinearMatMul(n *node) *tensor.Tensor {
	a, as, azp, b, bs, bzp, ys, yzp := n.x(0), n.x(1), n.x(2), n.x(3), n.x(4), n.x(5), n.x(6), n.x(7)
	if n.err != nil {
		return a
	}
	acc := minusZero(a, azp, max(a.Ndim()-2, 0)).Dot(minusZero(b, bzp, b.Ndim()-1))
	s := perAxis(as, max(a.Ndim()-2, 0), acc.Ndim()).Mul(perAxis(bs, acc.Ndim()-1, acc.Ndim())).Div(ys.Reshape())
	return requantize(acc, s, yzp.Reshape())
}

func qlinearConv(n *node) *tensor.Tensor {
	x, xs, xzp, w, ws, wzp, ys, yzp := n.x(0), n.x(1), n.x(2), n.x(3), n.x(4), n.x(5), n.x(6), n.x(7)
	bias := n.opt(8)
	if n.err != nil {
		return x
	}
	kernel := n.intList("kernel_shape", w.Shape()[2:])
	sp := n.windowAttrs(x.Shape()[2:], kernel)
	if n.err != nil {
		return x
	}
	var bi *tensor.Tensor
	if bias != nil {
		bi = bias.Cast(ir.Int32)
	}
	acc := minusZero(x, xzp, 1).Conv2d(minusZero(w, wzp, 0), bi, tensor.ConvOpts{Groups: n.int("group", 1), Stride: sp.strides, Dilation: sp.dilations, Padding: flatPads(sp.pads)})
	s := xs.Reshape().Mul(perAxis(ws, 1, acc.Ndim())).Div(ys.Reshape())
	return requantize(acc, s, yzp.Reshape())
}

// ---- signal processing ----

// window builds a window of the given size: f(2*pi*k/D) with D the size
// (periodic) or size-1 (symmetric).
func window(f func(x float64) float64) func(n *node) *Array {
	return func(n *node) *Array {
		size := int(n.scalar(0))
		if n.err != nil {
			return nil
		}
		if size < 0 || size > maxElements {
			n.fail("size %d", size)
			return nil
		}
		typ := DataType(n.int("output_datatype", int(Float)))
		if !typ.Numeric() {
			n.fail("output_datatype %s", typ)
			return nil
		}
		d := float64(size)
		if n.int("periodic", 1) == 0 {
			d--
		}
		out := NewArray(typ, []int{size})
		for k := range size {
			out.SetFloat(k, f(2*math.Pi*float64(k)/d))
		}
		return out
	}
}

// melWeightMatrix is the ([dft_length/2]+1, num_mel_bins) matrix of
// triangular filters, evenly spaced on the mel scale.
func melWeightMatrix(n *node) *Array {
	bins, dftLen, rate := int(n.scalar(0)), int(n.scalar(1)), int(n.scalar(2))
	lo, hi := n.scalar(3), n.scalar(4)
	if n.err != nil {
		return nil
	}
	if bins <= 0 || dftLen <= 0 || rate <= 0 || bins > 1<<16 || dftLen > 1<<24 {
		n.fail("num_mel_bins %d, dft_length %d and sample_rate %d must be positive", bins, dftLen, rate)
		return nil
	}
	typ := DataType(n.int("output_datatype", int(Float)))
	spec := dftLen/2 + 1
	mel := func(hz float64) float64 { return 2595 * math.Log10(1+hz/700) }
	lm, hm := mel(lo), mel(hi)
	step := (hm - lm) / float64(bins+2)
	pts := make([]int, bins+2)
	for i := range pts {
		hz := 700 * (math.Pow(10, (float64(i)*step+lm)/2595) - 1)
		pts[i] = int(math.Floor(float64(dftLen+1) * hz / float64(rate)))
	}
	out := NewArray(typ, []int{spec, bins})
	set := func(j, i int, v float64) {
		if j >= 0 && j < spec {
			out.SetFloat(j*bins+i, v)
		}
	}
	for i := range bins {
		l, c, h := pts[i], pts[i+1], pts[i+2]
		if c == l {
			set(c, i, 1)
		} else {
			for j := l; j <= c; j++ {
				set(j, i, float64(j-l)/float64(c-l))
			}
		}
		for j := c; j < h; j++ {
			set(j, i, float64(h-j)/float64(h-c))
		}
	}
	return out
}

// dftMatrices returns the (length, bins) cosine and sine matrices of a DFT
// (the sine negated for the forward transform, divided by length for the
// inverse).
func dftMatrices(ctx *tensor.Context, length, bins int, inverse bool, dt ir.DType) (*tensor.Tensor, *tensor.Tensor) {
	c := make([]float64, length*bins)
	s := make([]float64, length*bins)
	sign, norm := -1.0, 1.0
	if inverse {
		sign, norm = 1, 1/float64(length)
	}
	for t := range length {
		for k := range bins {
			a := 2 * math.Pi * float64((t*k)%length) / float64(length)
			c[t*bins+k] = math.Cos(a) * norm
			s[t*bins+k] = sign * math.Sin(a) * norm
		}
	}
	ct, _ := ctx.FromFloats(dt, []int{length, bins}, c)
	st, _ := ctx.FromFloats(dt, []int{length, bins}, s)
	return ct, st
}

// complexParts splits (..., 1) or (..., 2) into real and imaginary parts
// (nil for a real signal).
func complexParts(x *tensor.Tensor) (re, im *tensor.Tensor) {
	last := x.Ndim() - 1
	b := func(lo, hi int) [][2]int {
		r := make([][2]int, x.Ndim())
		for i, d := range x.Shape() {
			r[i] = [2]int{0, d}
		}
		r[last] = [2]int{lo, hi}
		return r
	}
	re = x.Shrink(b(0, 1)).Squeeze(ptr(last))
	if x.Shape()[last] == 2 {
		im = x.Shrink(b(1, 2)).Squeeze(ptr(last))
	}
	return re, im
}

// dft transforms the last axis of re (+ i im): (..., L) -> (..., bins, 2).
func dft(re, im *tensor.Tensor, bins int, inverse bool) *tensor.Tensor {
	l := re.Shape()[re.Ndim()-1]
	c, s := dftMatrices(re.Context(), l, bins, inverse, re.DType())
	outRe := re.Dot(c)
	outIm := re.Dot(s)
	if im != nil {
		// (a + ib)(cos + i sin') = a cos - b sin' + i(a sin' + b cos)
		outRe = outRe.Sub(im.Dot(s))
		outIm = outIm.Add(im.Dot(c))
	}
	return tensor.Stack(-1, outRe, outIm)
}

func dftOp(n *node) *tensor.Tensor {
	x := n.x(0)
	if n.err != nil {
		return x
	}
	if x.Ndim() < 2 || x.Shape()[x.Ndim()-1] > 2 {
		n.fail("input %s must be (batch, signal..., 1 or 2)", tensor.FormatShape(x.Shape()))
		return x
	}
	axis := n.int("axis", 1)
	if axis < 0 {
		axis += x.Ndim()
	}
	if axis < 1 || axis >= x.Ndim()-1 {
		n.fail("axis %d must be a signal axis of %s", n.int("axis", 1), tensor.FormatShape(x.Shape()))
		return x
	}
	inverse, onesided := n.int("inverse", 0) == 1, n.int("onesided", 0) == 1
	re, im := complexParts(x)
	re, im = re.Transpose(axis, -1), transposeOrNil(im, axis)
	l := re.Shape()[re.Ndim()-1]
	if n.has(1) {
		length := int(n.scalar(1))
		if n.err != nil {
			return x
		}
		re, im = fitLength(re, length), fitLengthOrNil(im, length)
		l = length
	}
	bins := l
	if onesided {
		bins = l/2 + 1
	}
	y := dft(re, im, bins, inverse) // (..., bins, 2) with the signal axis last but one
	return y.Transpose(axis, -2)
}

func transposeOrNil(t *tensor.Tensor, axis int) *tensor.Tensor {
	if t == nil {
		return nil
	}
	return t.Transpose(axis, -1)
}

// fitLength zero-pads or truncates the last axis to length.
func fitLength(t *tensor.Tensor, length int) *tensor.Tensor {
	l := t.Shape()[t.Ndim()-1]
	b := make([][2]int, t.Ndim())
	for i, d := range t.Shape() {
		b[i] = [2]int{0, d}
	}
	if length < l {
		b[t.Ndim()-1] = [2]int{0, length}
		return t.Shrink(b)
	}
	p := make([][2]int, t.Ndim())
	p[t.Ndim()-1] = [2]int{0, length - l}
	return t.Pad(p, 0)
}

func fitLengthOrNil(t *tensor.Tensor, length int) *tensor.Tensor {
	if t == nil {
		return nil
	}
	return fitLength(t, length)
}

// stftOp frames the signal (frame_step apart, frame_length long, from the
// window or the frame_length input), multiplies each frame by the window
// and transforms it: (batch, frames, bins, 2).
func stftOp(n *node) *tensor.Tensor {
	x := n.x(0)
	step := int(n.scalar(1))
	win := n.opt(2)
	if n.err != nil {
		return x
	}
	length := 0
	if win != nil {
		length = win.Numel()
	}
	if n.has(3) {
		length = int(n.scalar(3))
	}
	if n.err != nil {
		return x
	}
	if x.Ndim() != 3 || step <= 0 || length <= 0 || length > x.Shape()[1] {
		n.fail("signal %s, frame_step %d and frame_length %d do not fit", tensor.FormatShape(x.Shape()), step, length)
		return x
	}
	re, im := complexParts(x) // (batch, L)
	frames := func(t *tensor.Tensor) *tensor.Tensor {
		if t == nil {
			return nil
		}
		w, _ := t.Unsqueeze(1).Unsqueeze(1).PoolWindows(tensor.PoolOpts{Kernel: []int{1, length}, Stride: []int{1, step}}, 0)
		f := w.Reshape(t.Shape()[0], -1, length) // (batch, frames, length)
		if win != nil {
			f = f.Mul(win.Reshape(1, 1, length))
		}
		return f
	}
	bins := length
	if n.int("onesided", 1) == 1 {
		bins = length/2 + 1
	}
	return dft(frames(re), frames(im), bins, false)
}

// det is the determinant of the last two axes by Gaussian elimination with
// partial pivoting, unrolled over the (static) size: each step picks the
// row with the largest pivot through a one-hot mask, so it stays a graph of
// tensor operations.
func det(n *node) *tensor.Tensor {
	x := n.x(0)
	if n.err != nil {
		return x
	}
	s := x.Shape()
	if x.Ndim() < 2 || s[len(s)-1] != s[len(s)-2] {
		n.fail("input %s must be square matrices", tensor.FormatShape(s))
		return x
	}
	m := s[len(s)-1]
	batch := slices.Clone(s[:len(s)-2])
	a := x.Cast(ir.Float32).Reshape(append([]int{-1}, m, m)...) // (B, m, m)
	dt := a.DType()
	b := a.Shape()[0]
	sign := n.ctx.Full([]int{b}, 1, dt)
	d := n.ctx.Full([]int{b}, 1, dt)
	rows := n.ctx.Arange(0, float64(m), 1, ir.Int32)
	for k := range m {
		col := a.Shrink([][2]int{{0, b}, {0, m}, {k, k + 1}}).Reshape(b, m)
		// candidates are rows >= k; pick the largest |value|
		cand := rows.Ge(n.ctx.Const(float64(k), ir.Int32)).Reshape(1, m)
		mag := cand.Where(col.Abs(), n.ctx.Const(-1, dt))
		p := mag.Argmax(ptr(1), false)                 // (B,)
		pick := p.Reshape(b, 1).Eq(rows.Reshape(1, m)) // (B, m) one-hot of the pivot row
		isK := rows.Eq(n.ctx.Const(float64(k), ir.Int32)).Reshape(1, m)
		swapped := p.Ne(n.ctx.Const(float64(k), ir.Int32))
		sign = swapped.Where(sign.Neg(), sign)
		pivotRow := pick.Unsqueeze(2).Where(a, n.ctx.Const(0, dt)).Sum(false, 1) // (B, m)
		rowK := a.Shrink([][2]int{{0, b}, {k, k + 1}, {0, m}}).Reshape(b, m)
		// swap rows k and p
		a = isK.Unsqueeze(2).Where(pivotRow.Unsqueeze(1), pick.Unsqueeze(2).Where(rowK.Unsqueeze(1), a))
		piv := pivotRow.Shrink([][2]int{{0, b}, {k, k + 1}}).Reshape(b)
		d = d.Mul(piv)
		// eliminate below k
		safe := piv.Eq(n.ctx.Const(0, dt)).Where(n.ctx.Const(1, dt), piv)              // singular: d is 0 already
		f := a.Shrink([][2]int{{0, b}, {0, m}, {k, k + 1}}).Div(safe.Reshape(b, 1, 1)) // (B, m, 1)
		below := rows.Gt(n.ctx.Const(float64(k), ir.Int32)).Reshape(1, m, 1)
		a = below.Where(a.Sub(f.Mul(pivotRow.Unsqueeze(1))), a).Contiguous()
	}
	return d.Mul(sign).Reshape(batch...).Cast(x.DType())
}

// tfIdf counts the pool's n-grams of integer tokens (n-grams of each length
// from min_gram_length to max_gram_length, their elements skip apart for
// each skip up to max_skip_count; unigrams once) by comparing shifted views,
// and weighs the counts as mode says.
func tfIdf(n *node) *tensor.Tensor {
	x := n.x(0)
	if n.err != nil {
		return x
	}
	if n.hasAttr("pool_strings") {
		n.refuse(CatString, "string n-grams are not supported")
		return x
	}
	minN, maxN, maxSkip := n.int("min_gram_length", 1), n.int("max_gram_length", 1), n.int("max_skip_count", 0)
	counts, indexes := n.intList("ngram_counts", nil), n.intList("ngram_indexes", nil)
	pool := n.intList("pool_int64s", nil)
	weights := n.floatList("weights", nil)
	mode := n.str("mode", "TF")
	if n.err != nil {
		return x
	}
	squeeze := x.Ndim() == 1
	if squeeze {
		x = x.Unsqueeze(0)
	}
	if x.Ndim() != 2 || minN < 1 || maxN < minN || maxSkip < 0 || len(counts) == 0 {
		n.fail("input %s, gram lengths [%d, %d] and skip %d", tensor.FormatShape(x.Shape()), minN, maxN, maxSkip)
		return x
	}
	rows, l := x.Shape()[0], x.Shape()[1]
	width := 0
	for _, ix := range indexes {
		width = max(width, ix+1)
	}
	if width > 1<<20 {
		n.fail("ngram_indexes up to %d", width)
		return x
	}
	xi := x.Cast(ir.Int32)
	cols := make([]*tensor.Tensor, width)
	k := 0 // n-gram number in pool order
	for g := range counts {
		size := g + 1
		start := counts[g]
		end := len(pool)
		if g+1 < len(counts) {
			end = counts[g+1]
		}
		if start < 0 || end > len(pool) || start > end || (end-start)%size != 0 {
			n.fail("ngram_counts %v do not cut a pool of %d", counts, len(pool))
			return x
		}
		for p := start; p < end; p, k = p+size, k+1 {
			if k >= len(indexes) || size < minN || size > maxN {
				continue
			}
			skips := maxSkip
			if size == 1 {
				skips = 0
			}
			for s := 0; s <= skips; s++ {
				span := (size-1)*(s+1) + 1
				if span > l {
					break
				}
				m := n.ctx.Full([]int{rows, l - span + 1}, 1, ir.Bool)
				for j := range size {
					off := j * (s + 1)
					part := xi.Shrink([][2]int{{0, rows}, {off, off + l - span + 1}})
					m = m.And(part.Eq(n.ctx.Const(float64(pool[p+j]), ir.Int32)))
				}
				c := m.Sum(false, 1).Cast(ir.Float32)
				if cols[indexes[k]] == nil {
					cols[indexes[k]] = c
				} else {
					cols[indexes[k]] = cols[indexes[k]].Add(c)
				}
			}
		}
	}
	for i, c := range cols {
		if c == nil {
			cols[i] = n.ctx.Zeros([]int{rows}, ir.Float32)
		}
	}
	y := tensor.Stack(1, cols...)
	w := n.ctx.Ones([]int{width}, ir.Float32)
	if weights != nil {
		if len(weights) != width {
			n.fail("%d weights for %d outputs", len(weights), width)
			return x
		}
		w, _ = n.ctx.FromFloats(ir.Float32, []int{width}, weights)
	}
	switch mode {
	case "TF":
	case "IDF":
		y = y.Gt(n.ctx.Const(0, ir.Float32)).Cast(ir.Float32).Mul(w)
	case "TFIDF":
		y = y.Mul(w)
	default:
		n.fail("unknown mode %q", mode)
		return x
	}
	if squeeze {
		y = y.Reshape(width)
	}
	return y
}
