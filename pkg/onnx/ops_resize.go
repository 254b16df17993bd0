package onnx

import (
	"math"

	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// Resize is separable: along each resized axis every output element is a
// fixed weighted sum of input elements (one for nearest, two for linear,
// four for cubic), and the weights depend only on shapes and attributes.
// They are computed on the host as an (in, out) matrix per axis, and the
// axis is resized by a matrix product with it: one fused reduce, on every
// device.

// resizeParams are the attributes of one Resize (or Upsample) node.
type resizeParams struct {
	mode, coord, nearest  string
	cubicA, extrapolation float64
	excludeOutside        bool
}

func (n *node) resizeParams() resizeParams {
	p := resizeParams{
		mode:          n.str("mode", "nearest"),
		coord:         n.str("coordinate_transformation_mode", "half_pixel"),
		nearest:       n.str("nearest_mode", "round_prefer_floor"),
		cubicA:        n.float("cubic_coeff_a", -0.75),
		extrapolation: n.float("extrapolation_value", 0),
	}
	p.excludeOutside = n.int("exclude_outside", 0) == 1
	if n.proto.GetOpType() == "Upsample" || n.opset < 11 {
		// Upsample and Resize-10 map output x to x/scale and take the floor
		p.coord, p.nearest = "asymmetric", "floor"
	}
	if p.mode == "bilinear" || p.mode == "trilinear" { // Upsample's old spellings
		p.mode = "linear"
	}
	return p
}

// weights returns the (in, out) matrix resizing an axis of length in to
// out (scale the factor the coordinates use, in*scale the resized length
// they see, not rounded; roi the axis's [start, end] for
// tf_crop_and_resize) and, per output, whether it is extrapolated.
func (p resizeParams) weights(n *node, in, out int, scale float64, roi [2]float64) ([]float64, []bool) {
	w := make([]float64, in*out)
	outside := make([]bool, out)
	length := scale * float64(in)
	for o := range out {
		x := float64(o)
		var xo float64
		switch p.coord {
		case "half_pixel":
			xo = (x+0.5)/scale - 0.5
		case "pytorch_half_pixel":
			xo = -0.5
			if length > 1 {
				xo = (x+0.5)/scale - 0.5
			}
		case "align_corners":
			if length > 1 {
				xo = x * float64(in-1) / (length - 1)
			}
		case "asymmetric":
			xo = x / scale
		case "tf_half_pixel_for_nn":
			xo = (x + 0.5) / scale
		case "tf_crop_and_resize":
			if length > 1 {
				xo = roi[0]*float64(in-1) + x*(roi[1]-roi[0])*float64(in-1)/(length-1)
			} else {
				xo = 0.5 * (roi[0] + roi[1]) * float64(in-1)
			}
			if xo < 0 || xo > float64(in-1) {
				outside[o] = true
				continue
			}
		default:
			n.fail("unknown coordinate_transformation_mode %q", p.coord)
			return nil, nil
		}
		// the left neighbour, with ratio in (0, 1] (an exact position
		// takes its right neighbour with weight 1)
		base := math.Ceil(xo) - 1
		r := xo - base
		var idx []int
		var c []float64
		switch p.mode {
		case "nearest":
			right := false
			switch {
			case r == 1:
				right = true
			case p.nearest == "round_prefer_floor":
				right = r > 0.5
			case p.nearest == "round_prefer_ceil":
				right = r >= 0.5
			case p.nearest == "floor":
				right = false
			case p.nearest == "ceil":
				right = true
			default:
				n.fail("unknown nearest_mode %q", p.nearest)
				return nil, nil
			}
			idx, c = []int{int(base)}, []float64{1}
			if right {
				idx[0]++
			}
		case "linear":
			idx, c = []int{int(base), int(base) + 1}, []float64{1 - r, r}
		case "cubic":
			a := p.cubicA
			s := r + 1
			t := 1 - r
			u := t + 1
			c = []float64{
				((a*s-5*a)*s+8*a)*s - 4*a,
				((a+2)*r-(a+3))*r*r + 1,
				((a+2)*t-(a+3))*t*t + 1,
				((a*u-5*a)*u+8*a)*u - 4*a,
			}
			b := int(base)
			idx = []int{b - 1, b, b + 1, b + 2}
		default:
			n.fail("unknown mode %q", p.mode)
			return nil, nil
		}
		if p.excludeOutside {
			sum := 0.0
			for k, i := range idx {
				if i < 0 || i >= in {
					c[k] = 0
				}
				sum += c[k]
			}
			for k := range c {
				c[k] /= sum
			}
		}
		for k, i := range idx {
			i = min(max(i, 0), in-1)
			w[i*out+o] += c[k]
		}
	}
	return w, outside
}

func resizeOp(n *node) *tensor.Tensor {
	x := n.x(0)
	if n.err != nil {
		return x
	}
	r := x.Ndim()
	shape := x.Shape()
	p := n.resizeParams()
	var scales []float64
	var sizes []int
	roi := make([]float64, 2*r)
	for i := range r {
		roi[r+i] = 1
	}
	switch {
	case n.proto.GetOpType() == "Upsample" && n.opset < 9:
		scales = n.floatList("scales", nil)
	case n.proto.GetOpType() == "Upsample" || n.opset < 11:
		if a := n.array(1); a != nil {
			scales = a.Floats()
		}
	default:
		if n.has(1) && p.coord == "tf_crop_and_resize" {
			if a := n.array(1); a != nil && a.Numel() == 2*r {
				roi = a.Floats()
			}
		}
		if n.has(2) {
			if a := n.array(2); a != nil && a.Numel() > 0 {
				scales = a.Floats()
			}
		}
		if n.has(3) && scales == nil {
			sizes = n.ints(3)
		}
	}
	if n.err != nil {
		return x
	}
	if (scales == nil) == (sizes == nil) || len(scales)+len(sizes) != r {
		n.fail("needs %d scales or %d sizes, got scales %v and sizes %v", r, r, scales, sizes)
		return x
	}
	if n.hasAttr("antialias") && n.int("antialias", 0) != 0 {
		n.unsupported("antialias")
		return x
	}
	out := make([]int, r)
	sc := make([]float64, r)
	for i := range r {
		if sizes != nil {
			out[i] = sizes[i]
			sc[i] = float64(sizes[i]) / float64(shape[i])
		} else {
			if scales[i] <= 0 {
				n.fail("scales %v must be positive", scales)
				return x
			}
			out[i] = int(math.Floor(float64(shape[i]) * scales[i]))
			sc[i] = scales[i]
		}
		if out[i] < 0 || out[i] > maxElements {
			n.fail("output size %d", out[i])
			return x
		}
	}
	y := x
	dt := x.DType()
	cdt := dt
	if !dt.IsFloat() {
		cdt = ir.Float32
	}
	for i := range r {
		if out[i] == shape[i] && sc[i] == 1 && p.coord != "tf_crop_and_resize" {
			continue
		}
		in := y.Shape()[i]
		w, outside := p.weights(n, in, out[i], sc[i], [2]float64{roi[i], roi[r+i]})
		if n.err != nil {
			return x
		}
		wt, err := n.ctx.FromFloats(cdt, []int{in, out[i]}, w)
		if err != nil {
			n.fail("%v", err)
			return x
		}
		moved := y.Cast(cdt).Transpose(i, -1)
		res := moved.Dot(wt)
		if anyTrue(outside) {
			m := make([]float64, len(outside))
			for k, o := range outside {
				m[k] = b2f(o)
			}
			mt, _ := n.ctx.FromFloats(ir.Bool, []int{len(m)}, m)
			res = mt.Where(n.ctx.Const(p.extrapolation, cdt), res)
		}
		y = res.Transpose(i, -1)
	}
	if !dt.IsFloat() {
		return y.Round().Cast(dt)
	}
	return y.Cast(dt)
}

func anyTrue(v []bool) bool {
	for _, b := range v {
		if b {
			return true
		}
	}
	return false
}
