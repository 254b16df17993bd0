package onnx

import (
	"strings"

	"tgc/pkg/ir"
	"tgc/pkg/onnx/onnxpb"
	"tgc/pkg/tensor"
)

// Recurrent layers, unrolled over the (static) sequence length: the input
// projection of every step is one matrix product, the recurrence one small
// product per step.

var rnnOps = map[string]opDef{
	"RNN":  {since: 7, run: recurrent("RNN")},
	"GRU":  {since: 7, run: recurrent("GRU")},
	"LSTM": {since: 7, run: recurrent("LSTM")},
}

// activation returns the named activation with its alpha and beta (taken
// from the lists in order by the activations that use them).
func (n *node) activations(defaults []string, dirs int) []func(*tensor.Tensor) *tensor.Tensor {
	names := n.strList("activations", nil)
	if names == nil {
		for range dirs {
			names = append(names, defaults...)
		}
	}
	alphas, betas := n.floatList("activation_alpha", nil), n.floatList("activation_beta", nil)
	next := func(v *[]float64, def float64) float64 {
		if len(*v) == 0 {
			return def
		}
		x := (*v)[0]
		*v = (*v)[1:]
		return x
	}
	var fs []func(*tensor.Tensor) *tensor.Tensor
	for _, name := range names {
		var f func(*tensor.Tensor) *tensor.Tensor
		switch strings.ToLower(name) {
		case "relu":
			f = (*tensor.Tensor).Relu
		case "tanh":
			f = (*tensor.Tensor).Tanh
		case "sigmoid":
			f = (*tensor.Tensor).Sigmoid
		case "softsign":
			f = (*tensor.Tensor).Softsign
		case "softplus":
			f = func(x *tensor.Tensor) *tensor.Tensor { return x.Softplus(1) }
		case "affine":
			a, b := next(&alphas, 1), next(&betas, 0)
			f = func(x *tensor.Tensor) *tensor.Tensor { return x.Mul(scalarLike(x, a)).Add(scalarLike(x, b)) }
		case "leakyrelu":
			a := next(&alphas, 0.01)
			f = func(x *tensor.Tensor) *tensor.Tensor { return x.LeakyRelu(a) }
		case "thresholdedrelu":
			a := next(&alphas, 1)
			f = func(x *tensor.Tensor) *tensor.Tensor { return x.Gt(scalarLike(x, a)).Where(x, scalarLike(x, 0)) }
		case "scaledtanh":
			a, b := next(&alphas, 1), next(&betas, 1)
			f = func(x *tensor.Tensor) *tensor.Tensor { return x.Mul(scalarLike(x, b)).Tanh().Mul(scalarLike(x, a)) }
		case "hardsigmoid":
			a, b := next(&alphas, 0.2), next(&betas, 0.5)
			f = func(x *tensor.Tensor) *tensor.Tensor {
				y := x.Mul(scalarLike(x, a)).Add(scalarLike(x, b))
				return minOf(maxOf(y, scalarLike(x, 0)), scalarLike(x, 1))
			}
		case "elu":
			a := next(&alphas, 1)
			f = func(x *tensor.Tensor) *tensor.Tensor {
				return x.Lt(scalarLike(x, 0)).Where(x.Exp().Sub(scalarLike(x, 1)).Mul(scalarLike(x, a)), x)
			}
		default:
			n.fail("unknown activation %q", name)
			return nil
		}
		fs = append(fs, f)
	}
	if len(fs) != len(defaults)*dirs {
		n.fail("activations %v: %d are needed", names, len(defaults)*dirs)
		return nil
	}
	return fs
}

func scalarLike(x *tensor.Tensor, v float64) *tensor.Tensor { return x.Const(v, x.DType()) }

// strList reads a STRINGS attribute.
func (n *node) strList(name string, def []string) []string {
	a := n.attr(name)
	if a == nil || !n.attrType(a, onnxpb.AttributeProto_STRINGS) {
		return def
	}
	v := make([]string, len(a.GetStrings()))
	for i, s := range a.GetStrings() {
		v[i] = string(s)
	}
	return v
}

// rows takes rows [k*h, (k+1)*h) of a (G*h, ...) matrix (gate k).
func gate(t *tensor.Tensor, axis, k, h int) *tensor.Tensor {
	b := make([][2]int, t.Ndim())
	for i, d := range t.Shape() {
		b[i] = [2]int{0, d}
	}
	b[axis] = [2]int{k * h, (k + 1) * h}
	return t.Shrink(b)
}

func pick(t *tensor.Tensor, axis, i int) *tensor.Tensor {
	b := make([][2]int, t.Ndim())
	for j, d := range t.Shape() {
		b[j] = [2]int{0, d}
	}
	b[axis] = [2]int{i, i + 1}
	return t.Shrink(b).Squeeze(ptr(axis))
}

func recurrent(kind string) func(n *node) []*tensor.Tensor {
	return func(n *node) []*tensor.Tensor {
		x, w, r := n.x(0), n.x(1), n.x(2)
		if n.err != nil {
			return nil
		}
		gates := map[string]int{"RNN": 1, "GRU": 3, "LSTM": 4}[kind]
		defaults := map[string][]string{"RNN": {"Tanh"}, "GRU": {"Sigmoid", "Tanh"}, "LSTM": {"Sigmoid", "Tanh", "Tanh"}}[kind]
		layout := n.int("layout", 0)
		if layout == 1 {
			x = x.Transpose(0, 1)
		}
		if x.Ndim() != 3 || w.Ndim() != 3 || r.Ndim() != 3 {
			n.fail("X %s, W %s and R %s must be 3-D", tensor.FormatShape(x.Shape()), tensor.FormatShape(w.Shape()), tensor.FormatShape(r.Shape()))
			return nil
		}
		seq, batch := x.Shape()[0], x.Shape()[1]
		h := n.int("hidden_size", r.Shape()[2])
		dirs := 1
		dirName := n.str("direction", "forward")
		switch dirName {
		case "forward", "reverse":
		case "bidirectional":
			dirs = 2
		default:
			n.fail("unknown direction %q", dirName)
			return nil
		}
		if w.Shape()[0] != dirs || w.Shape()[1] != gates*h || r.Shape()[1] != gates*h || r.Shape()[2] != h {
			n.fail("W %s and R %s do not fit %d direction(s) of %d gates of hidden size %d", tensor.FormatShape(w.Shape()), tensor.FormatShape(r.Shape()), dirs, gates, h)
			return nil
		}
		acts := n.activations(defaults, dirs)
		if n.err != nil {
			return nil
		}
		dt := x.DType()
		var lens *tensor.Tensor
		if n.has(4) {
			lens = n.x(4).Cast(ir.Int32).Reshape(batch, 1)
		}
		clip := n.float("clip", 0)
		clamp := func(t *tensor.Tensor) *tensor.Tensor {
			if clip <= 0 {
				return t
			}
			return minOf(maxOf(t, scalarLike(t, -clip)), scalarLike(t, clip))
		}
		var ys, hs, cs []*tensor.Tensor
		for d := range dirs {
			wd, rd := pick(w, 0, d), pick(r, 0, d) // (G*h, in), (G*h, h)
			xp := x.Dot(wd.T())                    // (seq, batch, G*h)
			var wb, rb *tensor.Tensor
			if n.has(3) {
				bd := pick(n.x(3), 0, d)
				wb, rb = gate(bd, 0, 0, gates*h), gate(bd, 0, 1, gates*h)
				xp = xp.Add(wb)
			}
			var ht, ct *tensor.Tensor
			if n.has(5) {
				ht = pick(n.x(5), 0, d)
			} else {
				ht = n.ctx.Zeros([]int{batch, h}, dt)
			}
			var peep *tensor.Tensor
			if kind == "LSTM" {
				if n.has(6) {
					ct = pick(n.x(6), 0, d)
				} else {
					ct = n.ctx.Zeros([]int{batch, h}, dt)
				}
				if n.has(7) {
					peep = pick(n.x(7), 0, d)
				}
			}
			f := acts[d*len(defaults):]
			reverse := dirName == "reverse" || d == 1
			out := make([]*tensor.Tensor, seq)
			for step := range seq {
				t := step
				if reverse {
					t = seq - 1 - step
				}
				xt := pick(xp, 0, t) // (batch, G*h)
				var newH, newC *tensor.Tensor
				switch kind {
				case "RNN":
					a := xt.Add(ht.Dot(rd.T()))
					if rb != nil {
						a = a.Add(rb)
					}
					newH = f[0](clamp(a))
				case "GRU":
					rec := ht.Dot(gate(rd, 0, 0, 2*h).T()) // z and r gates
					if rb != nil {
						rec = rec.Add(gate(rb, 0, 0, 2*h))
					}
					zr := xt.Shrink([][2]int{{0, batch}, {0, 2 * h}}).Add(rec)
					z := f[0](clamp(gate(zr, 1, 0, h)))
					rr := f[0](clamp(gate(zr, 1, 1, h)))
					rh := gate(rd, 0, 2, h)
					var hh *tensor.Tensor
					if n.int("linear_before_reset", 0) != 0 {
						lin := ht.Dot(rh.T())
						if rb != nil {
							lin = lin.Add(gate(rb, 0, 2, h))
						}
						hh = rr.Mul(lin)
					} else {
						hh = rr.Mul(ht).Dot(rh.T())
						if rb != nil {
							hh = hh.Add(gate(rb, 0, 2, h))
						}
					}
					cand := f[1](clamp(gate(xt, 1, 2, h).Add(hh)))
					one := scalarLike(z, 1)
					newH = one.Sub(z).Mul(cand).Add(z.Mul(ht))
				case "LSTM":
					a := xt.Add(ht.Dot(rd.T()))
					if rb != nil {
						a = a.Add(rb)
					}
					gi, gO, gf, gc := gate(a, 1, 0, h), gate(a, 1, 1, h), gate(a, 1, 2, h), gate(a, 1, 3, h)
					if peep != nil {
						gi = gi.Add(gate(peep, 0, 0, h).Mul(ct))
						gf = gf.Add(gate(peep, 0, 2, h).Mul(ct))
					}
					i := f[0](clamp(gi))
					var fg *tensor.Tensor
					if n.int("input_forget", 0) != 0 {
						fg = scalarLike(i, 1).Sub(i)
					} else {
						fg = f[0](clamp(gf))
					}
					c := f[1](clamp(gc))
					newC = fg.Mul(ct).Add(i.Mul(c))
					if peep != nil {
						gO = gO.Add(gate(peep, 0, 1, h).Mul(newC))
					}
					o := f[0](clamp(gO))
					newH = o.Mul(f[2](newC))
				}
				y := newH
				if lens != nil { // past a sequence's length: keep the state, output 0
					live := n.ctx.Const(float64(t), ir.Int32).Lt(lens)
					newH = live.Where(newH, ht)
					if newC != nil {
						newC = live.Where(newC, ct)
					}
					y = live.Where(y, scalarLike(y, 0))
				}
				ht, ct = newH.Contiguous(), newC
				if ct != nil {
					ct = ct.Contiguous()
				}
				out[t] = y
			}
			ys = append(ys, tensor.Stack(0, out...)) // (seq, batch, h)
			hs = append(hs, ht)
			if ct != nil {
				cs = append(cs, ct)
			}
		}
		y := tensor.Stack(1, ys...) // (seq, dirs, batch, h)
		yh := tensor.Stack(0, hs...)
		var yc *tensor.Tensor
		if kind == "LSTM" {
			yc = tensor.Stack(0, cs...)
		}
		if layout == 1 {
			y = y.Permute(2, 0, 1, 3)
			yh = yh.Transpose(0, 1)
			if yc != nil {
				yc = yc.Transpose(0, 1)
			}
		}
		if kind == "LSTM" {
			return []*tensor.Tensor{y, yh, yc}
		}
		return []*tensor.Tensor{y, yh}
	}
}
