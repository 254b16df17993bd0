package onnx

import (
	"math"
	"sort"

	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// Sampling operators. Where each output is a weighted sum of input
// elements, the weights form an interpolation matrix (built from tensors
// when the positions are data, on the host when they are known), and the
// sampling is a matrix product with it.

var visionOps = map[string]opDef{
	"GridSample":        {since: 16, run: one(gridSample)},
	"RoiAlign":          {since: 10, run: one(roiAlign)},
	"MaxRoiPool":        {since: 1, run: one(maxRoiPool)},
	"NonMaxSuppression": {since: 10, host: hostOnly(nonMaxSuppression), anyInput: true},
}

// gridSample samples X (N, C, H, W) at the normalized positions of grid
// (N, Ho, Wo, 2), as PyTorch's grid_sample does: bilinear, nearest or
// bicubic, with zeros, border or reflection padding.
func gridSample(n *node) *tensor.Tensor {
	x, grid := n.x(0), n.x(1)
	if n.err != nil {
		return x
	}
	s, gs := x.Shape(), grid.Shape()
	if x.Ndim() != 4 || grid.Ndim() != 4 || gs[0] != s[0] || gs[3] != 2 {
		n.unsupported("GridSample of X %s and grid %s (tgc samples 2-D images: (N, C, H, W) and (N, Ho, Wo, 2))", tensor.FormatShape(s), tensor.FormatShape(gs))
		return x
	}
	N, C, H, W := s[0], s[1], s[2], s[3]
	ho, wo := gs[1], gs[2]
	align := n.int("align_corners", 0) == 1
	mode, pad := n.str("mode", "bilinear"), n.str("padding_mode", "zeros")
	if pad != "zeros" && pad != "border" && pad != "reflection" {
		n.fail("unknown padding_mode %q", pad)
		return x
	}
	dt := ir.Float32
	g := grid.Cast(dt)
	coord := func(k, size int) *tensor.Tensor { // unnormalized x (k=0) or y (k=1): (N, Ho, Wo)
		c := g.Shrink([][2]int{{0, N}, {0, ho}, {0, wo}, {k, k + 1}}).Reshape(N, ho, wo)
		one := n.ctx.Const(1, dt)
		if align {
			return c.Add(one).Mul(n.ctx.Const(float64(size-1)/2, dt))
		}
		return c.Add(one).Mul(n.ctx.Const(float64(size), dt)).Sub(one).Div(n.ctx.Const(2, dt))
	}
	// padded maps a coordinate into the image as the padding mode says
	padded := func(c *tensor.Tensor, size int) *tensor.Tensor {
		clip := func(v *tensor.Tensor) *tensor.Tensor {
			return minOf(maxOf(v, n.ctx.Const(0, dt)), n.ctx.Const(float64(size-1), dt))
		}
		switch pad {
		case "border":
			return clip(c)
		case "reflection":
			lo, hi := -0.5, float64(size)-0.5
			if align {
				lo, hi = 0, float64(size-1)
			}
			span := hi - lo
			if span <= 0 {
				return n.ctx.Zeros(c.Shape(), dt)
			}
			d := c.Sub(n.ctx.Const(lo, dt)).Abs()
			flips := d.Div(n.ctx.Const(span, dt)).Floor()
			extra := d.Sub(flips.Mul(n.ctx.Const(span, dt)))
			even := flips.Mod(n.ctx.Const(2, dt)).Eq(n.ctx.Const(0, dt))
			r := even.Where(extra.Add(n.ctx.Const(lo, dt)), n.ctx.Const(span+lo, dt).Sub(extra))
			return clip(r)
		}
		return c
	}
	ix, iy := coord(0, W), coord(1, H)
	// taps: integer positions and weights; m accumulates the (N, P, H*W)
	// interpolation matrix
	p := ho * wo
	pos := n.ctx.Arange(0, float64(H*W), 1, ir.Int32).Reshape(1, 1, H*W)
	var m *tensor.Tensor
	tap := func(tx, ty, w *tensor.Tensor) {
		txi, tyi := tx.Cast(ir.Int32), ty.Cast(ir.Int32)
		in := tx.Ge(n.ctx.Const(0, dt)).And(tx.Le(n.ctx.Const(float64(W-1), dt))).And(ty.Ge(n.ctx.Const(0, dt))).And(ty.Le(n.ctx.Const(float64(H-1), dt)))
		lin := tyi.Mul(n.ctx.Const(float64(W), ir.Int32)).Add(txi).Reshape(N, p, 1)
		hit := lin.Eq(pos).And(in.Reshape(N, p, 1))
		term := hit.Where(w.Reshape(N, p, 1), n.ctx.Const(0, dt))
		if m == nil {
			m = term
		} else {
			m = m.Add(term)
		}
	}
	switch mode {
	case "nearest":
		px, py := padded(ix, W), padded(iy, H)
		tap(px.Round(), py.Round(), n.ctx.Full([]int{N, ho, wo}, 1, dt))
	case "bilinear":
		px, py := padded(ix, W), padded(iy, H)
		x0, y0 := px.Floor(), py.Floor()
		fx, fy := px.Sub(x0), py.Sub(y0)
		one := n.ctx.Const(1, dt)
		for _, dy := range []int{0, 1} {
			for _, dx := range []int{0, 1} {
				wx, wy := one.Sub(fx), one.Sub(fy)
				if dx == 1 {
					wx = fx
				}
				if dy == 1 {
					wy = fy
				}
				tap(x0.Add(n.ctx.Const(float64(dx), dt)), y0.Add(n.ctx.Const(float64(dy), dt)), wx.Mul(wy))
			}
		}
	case "bicubic":
		x0, y0 := ix.Floor(), iy.Floor()
		cx, cy := cubicWeights(ix.Sub(x0)), cubicWeights(iy.Sub(y0))
		for j := range 4 {
			for i := range 4 {
				tx := padded(x0.Add(n.ctx.Const(float64(i-1), dt)), W)
				ty := padded(y0.Add(n.ctx.Const(float64(j-1), dt)), H)
				tap(tx, ty, cx[i].Mul(cy[j]))
			}
		}
	default:
		n.fail("unknown mode %q", mode)
		return x
	}
	// (N, P, H*W) · (N, H*W, C) -> (N, P, C) -> (N, C, Ho, Wo)
	y := m.Dot(x.Cast(dt).Reshape(N, C, H*W).Transpose(1, 2))
	return y.Transpose(1, 2).Reshape(N, C, ho, wo).Cast(x.DType())
}

// cubicWeights are the four cubic convolution weights (A = -0.75) of the
// taps at -1, 0, 1, 2 for a fraction t in [0, 1).
func cubicWeights(t *tensor.Tensor) [4]*tensor.Tensor {
	ctx := t.Context()
	dt := t.DType()
	c := func(v float64) *tensor.Tensor { return ctx.Const(v, dt) }
	const a = -0.75
	near := func(d *tensor.Tensor) *tensor.Tensor { // |d| <= 1
		return d.Mul(d).Mul(d.Mul(c(a + 2)).Sub(c(a + 3))).Add(c(1))
	}
	far := func(d *tensor.Tensor) *tensor.Tensor { // 1 < |d| < 2
		return d.Mul(c(a)).Sub(c(5 * a)).Mul(d).Add(c(8 * a)).Mul(d).Sub(c(4 * a))
	}
	one := c(1)
	return [4]*tensor.Tensor{far(t.Add(one)), near(t), near(one.Sub(t)), far(c(2).Sub(t))}
}

// roiAlign averages bilinear samples on a grid in each bin of each region
// of interest. The regions are data, read to build each region's
// interpolation matrix on the host.
func roiAlign(n *node) *tensor.Tensor {
	x := n.x(0)
	rois, idx := n.array(1), n.array(2)
	if n.err != nil {
		return x
	}
	if x.Ndim() != 4 || len(rois.Shape) != 2 || rois.Shape[1] != 4 || idx.Numel() != rois.Shape[0] {
		n.fail("X %s, rois %v and batch_indices %v must be (N, C, H, W), (R, 4) and (R)", tensor.FormatShape(x.Shape()), rois.Shape, idx.Shape)
		return x
	}
	if n.str("mode", "avg") != "avg" {
		n.unsupported("RoiAlign mode %q", n.str("mode", "avg"))
		return x
	}
	s := x.Shape()
	N, C, H, W := s[0], s[1], s[2], s[3]
	oh, ow := n.int("output_height", 1), n.int("output_width", 1)
	ratio := n.int("sampling_ratio", 0)
	scale := n.float("spatial_scale", 1)
	halfPixel := n.opset >= 16 && n.str("coordinate_transformation_mode", "half_pixel") == "half_pixel"
	if oh <= 0 || ow <= 0 || ratio < 0 || oh*ow > maxElements/(H*W+1) {
		n.fail("output %dx%d and sampling_ratio %d", oh, ow, ratio)
		return x
	}
	r := rois.Shape[0]
	m := make([]float64, r*oh*ow*H*W)
	batches := make([]int, r)
	for k := range r {
		b := int(idx.Int(k))
		if b < 0 || b >= N {
			n.fail("batch index %d is out of range for %d images", b, N)
			return x
		}
		batches[k] = b
		off := 0.0
		if halfPixel {
			off = 0.5
		}
		x1, y1 := rois.Float(4*k)*scale-off, rois.Float(4*k+1)*scale-off
		x2, y2 := rois.Float(4*k+2)*scale-off, rois.Float(4*k+3)*scale-off
		rw, rh := x2-x1, y2-y1
		if !halfPixel {
			rw, rh = math.Max(rw, 1), math.Max(rh, 1)
		}
		bw, bh := rw/float64(ow), rh/float64(oh)
		gw, gh := ratio, ratio
		if ratio == 0 {
			gw, gh = int(math.Ceil(rw/float64(ow))), int(math.Ceil(rh/float64(oh)))
		}
		if gw <= 0 || gh <= 0 || gw*gh > 1<<16 {
			continue // an empty region averages nothing
		}
		count := float64(gw * gh)
		for ph := range oh {
			for pw := range ow {
				row := m[((k*oh+ph)*ow+pw)*H*W:]
				for iy := range gh {
					yy := y1 + float64(ph)*bh + (float64(iy)+0.5)*bh/float64(gh)
					for ix := range gw {
						xx := x1 + float64(pw)*bw + (float64(ix)+0.5)*bw/float64(gw)
						bilinearInto(row, yy, xx, H, W, 1/count)
					}
				}
			}
		}
	}
	mt, err := n.ctx.FromFloats(ir.Float32, []int{r, oh * ow, H * W}, m)
	if err != nil {
		n.fail("%v", err)
		return x
	}
	xs := takeConst(x.Cast(ir.Float32), 0, batches, []int{r, C, H, W}).Reshape(r, C, H*W).Transpose(1, 2)
	y := mt.Dot(xs) // (R, oh*ow, C)
	return y.Transpose(1, 2).Reshape(r, C, oh, ow).Cast(x.DType())
}

// bilinearInto adds w times the bilinear weights of point (y, x) to row
// (a row of H*W weights), the way RoiAlign samples: points more than one
// pixel outside contribute nothing, others clamp to the border.
func bilinearInto(row []float64, y, x float64, h, w int, wt float64) {
	if y < -1 || y > float64(h) || x < -1 || x > float64(w) {
		return
	}
	y, x = math.Max(y, 0), math.Max(x, 0)
	yl, xl := int(y), int(x)
	yh, xh := yl+1, xl+1
	if yl >= h-1 {
		yl, yh, y = h-1, h-1, float64(h-1)
	}
	if xl >= w-1 {
		xl, xh, x = w-1, w-1, float64(w-1)
	}
	ly, lx := y-float64(yl), x-float64(xl)
	hy, hx := 1-ly, 1-lx
	row[yl*w+xl] += wt * hy * hx
	row[yl*w+xh] += wt * hy * lx
	row[yh*w+xl] += wt * ly * hx
	row[yh*w+xh] += wt * ly * lx
}

// maxRoiPool is the maximum over each bin of each region (rois are
// (batch, x1, y1, x2, y2), read to build the bins' masks); an empty bin
// is 0.
func maxRoiPool(n *node) *tensor.Tensor {
	x := n.x(0)
	rois := n.array(1)
	shape := n.intList("pooled_shape", nil)
	if n.err != nil {
		return x
	}
	if x.Ndim() != 4 || len(rois.Shape) != 2 || rois.Shape[1] != 5 || len(shape) != 2 || shape[0] <= 0 || shape[1] <= 0 {
		n.fail("X %s, rois %v and pooled_shape %v must be (N, C, H, W), (R, 5) and two sizes", tensor.FormatShape(x.Shape()), rois.Shape, shape)
		return x
	}
	s := x.Shape()
	N, C, H, W := s[0], s[1], s[2], s[3]
	scale := n.float("spatial_scale", 1)
	r, ph, pw := rois.Shape[0], shape[0], shape[1]
	mask := make([]float64, r*ph*pw*H*W)
	empty := make([]float64, r*ph*pw)
	batches := make([]int, r)
	for k := range r {
		b := int(rois.Float(5 * k))
		if b < 0 || b >= N {
			n.fail("batch index %d is out of range for %d images", b, N)
			return x
		}
		batches[k] = b
		sw, sh := int(math.Round(rois.Float(5*k+1)*scale)), int(math.Round(rois.Float(5*k+2)*scale))
		ew, eh := int(math.Round(rois.Float(5*k+3)*scale)), int(math.Round(rois.Float(5*k+4)*scale))
		rw, rh := max(ew-sw+1, 1), max(eh-sh+1, 1)
		bw, bh := float64(rw)/float64(pw), float64(rh)/float64(ph)
		for i := range ph {
			hs := min(max(int(math.Floor(float64(i)*bh))+sh, 0), H)
			he := min(max(int(math.Ceil(float64(i+1)*bh))+sh, 0), H)
			for j := range pw {
				ws := min(max(int(math.Floor(float64(j)*bw))+sw, 0), W)
				we := min(max(int(math.Ceil(float64(j+1)*bw))+sw, 0), W)
				bin := (k*ph+i)*pw + j
				if he <= hs || we <= ws {
					empty[bin] = 1
				}
				for yy := hs; yy < he; yy++ {
					for xx := ws; xx < we; xx++ {
						mask[bin*H*W+yy*W+xx] = 1
					}
				}
			}
		}
	}
	mt, _ := n.ctx.FromFloats(ir.Bool, []int{r, 1, ph * pw, H * W}, mask)
	et, _ := n.ctx.FromFloats(ir.Bool, []int{r, 1, ph * pw}, empty)
	dt := x.DType()
	xs := takeConst(x, 0, batches, []int{r, C, H, W}).Reshape(r, C, 1, H*W)
	y := mt.Where(xs, n.ctx.Const(lowest(dt), dt)).Max(false, 3) // (R, C, P)
	return et.Where(n.ctx.Const(0, dt), y).Reshape(r, C, ph, pw)
}

// nonMaxSuppression selects, per image and class, boxes in order of
// falling score, dropping those that overlap a selected box by more than
// iou_threshold: data-dependent, so it runs on the values read.
func nonMaxSuppression(n *node) *Array {
	boxes, scores := n.array(0), n.array(1)
	maxOut, iouT, scoreT := 0, 0.0, math.Inf(-1)
	if n.has(2) {
		if v := n.array(2); v != nil && v.Numel() > 0 {
			maxOut = int(v.Int(0))
		}
	}
	if n.has(3) {
		if v := n.array(3); v != nil && v.Numel() > 0 {
			iouT = v.Float(0)
		}
	}
	if n.has(4) {
		if v := n.array(4); v != nil && v.Numel() > 0 {
			scoreT = v.Float(0)
		}
	}
	if n.err != nil {
		return nil
	}
	if len(boxes.Shape) != 3 || boxes.Shape[2] != 4 || len(scores.Shape) != 3 || scores.Shape[0] != boxes.Shape[0] || scores.Shape[2] != boxes.Shape[1] {
		n.fail("boxes %v and scores %v must be (N, B, 4) and (N, classes, B)", boxes.Shape, scores.Shape)
		return nil
	}
	nb, classes, nbox := boxes.Shape[0], scores.Shape[1], boxes.Shape[1]
	center := n.int("center_point_box", 0) == 1
	corners := func(b, i int) (y1, x1, y2, x2 float64) {
		v := func(j int) float64 { return boxes.Float((b*nbox+i)*4 + j) }
		if center {
			xc, yc, w, h := v(0), v(1), v(2), v(3)
			return yc - h/2, xc - w/2, yc + h/2, xc + w/2
		}
		return math.Min(v(0), v(2)), math.Min(v(1), v(3)), math.Max(v(0), v(2)), math.Max(v(1), v(3))
	}
	iou := func(b, i, j int) float64 {
		ay1, ax1, ay2, ax2 := corners(b, i)
		by1, bx1, by2, bx2 := corners(b, j)
		ih := math.Max(math.Min(ay2, by2)-math.Max(ay1, by1), 0)
		iw := math.Max(math.Min(ax2, bx2)-math.Max(ax1, bx1), 0)
		inter := ih * iw
		union := (ay2-ay1)*(ax2-ax1) + (by2-by1)*(bx2-bx1) - inter
		if union <= 0 {
			return 0
		}
		return inter / union
	}
	var sel []int64
	for b := range nb {
		for c := range classes {
			var cand []int
			for i := range nbox {
				if scores.Float((b*classes+c)*nbox+i) > scoreT {
					cand = append(cand, i)
				}
			}
			sort.SliceStable(cand, func(p, q int) bool {
				return scores.Float((b*classes+c)*nbox+cand[p]) > scores.Float((b*classes+c)*nbox+cand[q])
			})
			var kept []int
			for _, i := range cand {
				if len(kept) >= maxOut {
					break
				}
				ok := true
				for _, k := range kept {
					if iou(b, i, k) > iouT {
						ok = false
						break
					}
				}
				if ok {
					kept = append(kept, i)
					sel = append(sel, int64(b), int64(c), int64(i))
				}
			}
		}
	}
	return ArrayOfInts(Int64, []int{len(sel) / 3, 3}, sel)
}
