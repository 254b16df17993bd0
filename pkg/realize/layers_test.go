package realize

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"tgc/pkg/autograd"
	"tgc/pkg/backend"
	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// layerCase is one random layer: its inputs' shapes, the layer, and the
// absolute tolerance its result needs against GO (a sum of k products
// rounded in another order).
type layerCase struct {
	desc   string
	shapes [][]int
	f      func(in []*tensor.Tensor) *tensor.Tensor
	tol    float64
}

// randomLayer draws a layer of the kinds whose kernels the CPU's passes
// shape most (register blocks, padding, whole-row blocks, tiles, keep and
// lag plans): convolutions (strided, padded, a channels-last weight view;
// grouped, dilated; transposed), products (either operand transposed), row
// kernels at widths no vector divides, pools, permuted and transposed
// copies, attention, a training step's gradients, cumsums and argmaxes.
func randomLayer(r *rand.Rand) layerCase {
	pick := func(xs ...int) int { return xs[r.IntN(len(xs))] }
	switch r.IntN(11) {
	case 0:
		b, ci, co := pick(1, 2, 3), pick(1, 3, 5, 8, 16, 24, 32, 48, 64), pick(1, 4, 7, 8, 16, 24, 32, 64)
		h, w, k := pick(1, 2, 3, 5, 7, 8, 9, 13, 14, 16), pick(1, 3, 5, 7, 8, 12, 14, 17), pick(1, 2, 3, 5)
		s, p := pick(1, 1, 2, 3), pick(0, 0, 1, 2)
		h, w = max(h, k-2*p), max(w, k-2*p)
		lastCin := r.IntN(3) == 0 // the weight stored (Cout, kh, kw, Cin), viewed as (Cout, Cin, kh, kw)
		wshape := []int{co, ci, k, k}
		if lastCin {
			wshape = []int{co, k, k, ci}
		}
		return layerCase{fmt.Sprintf("conv b%d %d->%d %dx%d k%d s%d p%d channels-last %v", b, ci, co, h, w, k, s, p, lastCin),
			[][]int{{b, ci, h, w}, wshape},
			func(in []*tensor.Tensor) *tensor.Tensor {
				wt := in[1]
				if lastCin {
					wt = wt.Permute(0, 3, 1, 2)
				}
				return in[0].Conv2d(wt, nil, tensor.ConvOpts{Stride: []int{s}, Padding: []int{p}})
			}, 2e-6 * float64(ci*k*k)}
	case 1:
		m, k, n := pick(1, 2, 3, 7, 16, 17, 31, 64, 100, 129), pick(1, 5, 16, 33, 64, 100, 257), pick(1, 3, 8, 15, 16, 17, 48, 100, 130)
		ta, tb := r.IntN(3) == 0, r.IntN(2) == 0
		as, bs := []int{m, k}, []int{k, n}
		if ta {
			as = []int{k, m}
		}
		if tb {
			bs = []int{n, k}
		}
		return layerCase{fmt.Sprintf("product %dx%dx%d transposed %v %v", m, k, n, ta, tb), [][]int{as, bs},
			func(in []*tensor.Tensor) *tensor.Tensor {
				a, b := in[0], in[1]
				if ta {
					a = a.T()
				}
				if tb {
					b = b.T()
				}
				return a.Dot(b)
			}, 2e-6 * float64(k)}
	case 2:
		rows, cols := pick(1, 2, 5, 17, 64, 100), pick(1, 3, 15, 16, 17, 31, 32, 33, 97, 100, 197, 1000, 1001, 4097)
		axis := r.IntN(2)
		fs := []struct {
			name string
			f    func(x *tensor.Tensor) *tensor.Tensor
		}{
			{"softmax", func(x *tensor.Tensor) *tensor.Tensor { return x.Softmax(-1) }},
			{"log_softmax", func(x *tensor.Tensor) *tensor.Tensor { return x.LogSoftmax(-1) }},
			{"layernorm", func(x *tensor.Tensor) *tensor.Tensor { return x.Layernorm(1e-5, -1) }},
			{"sum", func(x *tensor.Tensor) *tensor.Tensor { return x.Sum(false, axis) }},
			{"max", func(x *tensor.Tensor) *tensor.Tensor { return x.Max(false, axis) }},
			{"mean", func(x *tensor.Tensor) *tensor.Tensor { return x.Mean(false, axis) }},
			{"var", func(x *tensor.Tensor) *tensor.Tensor { return x.Var(false, 1, 1) }},
		}
		f := fs[r.IntN(len(fs))]
		return layerCase{fmt.Sprintf("%s of %dx%d (axis %d for sum, max, mean)", f.name, rows, cols, axis), [][]int{{rows, cols}},
			func(in []*tensor.Tensor) *tensor.Tensor {
				x := in[0].Mul(in[0].Context().Const(8, ir.Float32)) // exponentials over a range wider than [-1, 1)
				return f.f(x)
			}, 2e-6 * float64(max(rows, cols))}
	case 3:
		d := []int{pick(1, 2, 3, 5, 8, 16, 17, 32, 64), pick(1, 2, 3, 5, 8, 16, 17, 32, 64), pick(1, 2, 3, 5, 8, 16, 17, 32, 64)}
		perms := [][]int{{0, 2, 1}, {1, 0, 2}, {2, 1, 0}, {1, 2, 0}, {2, 0, 1}}
		perm := perms[r.IntN(len(perms))]
		return layerCase{fmt.Sprintf("permute %v by %v", d, perm), [][]int{d},
			func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Permute(perm...).Contiguous() }, 0}
	case 4:
		rows, cols := pick(256, 300, 512), pick(512, 520, 1024)
		return layerCase{fmt.Sprintf("transpose %dx%d", rows, cols), [][]int{{rows, cols}},
			func(in []*tensor.Tensor) *tensor.Tensor { return in[0].T().Contiguous() }, 0}
	case 6:
		b, c, h, w := pick(1, 2, 3), pick(1, 3, 8, 16, 32), pick(2, 3, 5, 7, 8, 13, 16), pick(2, 3, 5, 7, 8, 13, 16)
		k := pick(2, 3)
		k = min(k, h, w)
		s, p, ceil, avg, incl := pick(1, 2, 3), r.IntN(k/2+1), r.IntN(2) == 0, r.IntN(2) == 0, r.IntN(2) == 0
		lastC := r.IntN(3) == 0 // the input stored channels-last
		shape := []int{b, c, h, w}
		if lastC {
			shape = []int{b, h, w, c}
		}
		o := tensor.PoolOpts{Kernel: []int{k, k}, Stride: []int{s, s}, Padding: []int{p}, CeilMode: ceil}
		return layerCase{fmt.Sprintf("pool b%d c%d %dx%d k%d s%d p%d ceil %v avg %v (count pad %v) channels-last %v", b, c, h, w, k, s, p, ceil, avg, incl, lastC),
			[][]int{shape}, func(in []*tensor.Tensor) *tensor.Tensor {
				x := in[0]
				if lastC {
					x = x.Permute(0, 3, 1, 2)
				}
				if avg {
					return x.AvgPool2d(o, incl)
				}
				return x.MaxPool2d(o)
			}, 1e-6}
	case 7:
		b, g, cpg, opg := pick(1, 2), pick(1, 2, 4, 8), pick(1, 2, 4), pick(1, 2, 4)
		h, w, k, d := pick(5, 7, 8, 12), pick(5, 7, 9, 16), pick(1, 3), pick(1, 2)
		s, p := pick(1, 2), pick(0, 1, 2)
		h, w = max(h, d*(k-1)+1), max(w, d*(k-1)+1)
		return layerCase{fmt.Sprintf("conv b%d groups %d (%d->%d a group) %dx%d k%d dilation %d s%d p%d", b, g, cpg, opg, h, w, k, d, s, p),
			[][]int{{b, g * cpg, h, w}, {g * opg, cpg, k, k}},
			func(in []*tensor.Tensor) *tensor.Tensor {
				return in[0].Conv2d(in[1], nil, tensor.ConvOpts{Groups: g, Stride: []int{s}, Dilation: []int{d}, Padding: []int{p}})
			}, 2e-6 * float64(cpg*k*k)}
	case 8:
		b, ci, co, h, w, k := pick(1, 2), pick(1, 4, 8, 16), pick(1, 4, 8), pick(3, 5, 7), pick(3, 6, 8), pick(2, 3)
		s, p := pick(1, 2), pick(0, 1)
		return layerCase{fmt.Sprintf("transposed conv b%d %d->%d %dx%d k%d s%d p%d", b, ci, co, h, w, k, s, p),
			[][]int{{b, ci, h, w}, {ci, co, k, k}},
			func(in []*tensor.Tensor) *tensor.Tensor {
				return in[0].ConvTranspose2d(in[1], nil, tensor.ConvTransposeOpts{Stride: []int{s}, Padding: []int{p}})
			}, 2e-6 * float64(ci*k*k)}
	case 9:
		// a training step's gradients: a conv (and a ReLU) or a product,
		// with respect to the input and the weight, concatenated
		b, ci, co, h, w, k := pick(1, 2, 4), pick(1, 3, 8), pick(2, 8, 16), pick(4, 6, 9), pick(4, 7, 12), pick(1, 3, 5)
		p := pick(0, 1, 2)
		h, w = max(h, k-2*p), max(w, k-2*p)
		conv := r.IntN(3) != 0
		oh, ow := h+2*p-k+1, w+2*p-k+1
		shapes := [][]int{{b, ci, h, w}, {co, ci, k, k}, {b, co, oh, ow}}
		desc := fmt.Sprintf("conv gradients b%d %d->%d %dx%d k%d p%d", b, ci, co, h, w, k, p)
		if !conv {
			shapes = [][]int{{b * h, ci * w}, {ci * w, co}, {b * h, co}}
			desc = fmt.Sprintf("product gradients %dx%dx%d", b*h, ci*w, co)
		}
		return layerCase{desc, shapes, func(in []*tensor.Tensor) *tensor.Tensor {
			var y *tensor.Tensor
			if conv {
				y = in[0].Conv2d(in[1], nil, tensor.ConvOpts{Padding: []int{p}}).Relu()
			} else {
				y = in[0].Dot(in[1])
			}
			gs, err := autograd.Gradient(y.Mul(in[2]).Sum(false), []*tensor.Tensor{in[0], in[1]})
			if err != nil {
				panic(err) // a bug in the test's graph
			}
			return gs[0].Flatten(0, -1).Cat(0, gs[1].Flatten(0, -1))
		}, 2e-6 * float64(b*co*oh*ow+ci*k*k*co)}
	case 10:
		rows, cols := pick(1, 3, 16, 33), pick(1, 7, 16, 100, 257, 1000)
		axis := r.IntN(2)
		if r.IntN(2) == 0 {
			return layerCase{fmt.Sprintf("cumsum of %dx%d along %d", rows, cols, axis), [][]int{{rows, cols}},
				func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Cumsum(axis) }, 2e-6 * float64(max(rows, cols))}
		}
		return layerCase{fmt.Sprintf("argmax of %dx%d along %d", rows, cols, axis), [][]int{{rows, cols}},
			func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Argmax(&axis, false) }, 0}
	default:
		b, h, t, dh := pick(1, 2, 4), pick(1, 2, 4), pick(1, 5, 16, 77, 197), pick(8, 16, 64)
		sh := []int{b, h, t, dh}
		return layerCase{fmt.Sprintf("attention b%d h%d t%d d%d", b, h, t, dh), [][]int{sh, sh, sh},
			func(in []*tensor.Tensor) *tensor.Tensor {
				scale := in[0].Context().Const(1/math.Sqrt(float64(dh)), ir.Float32)
				return in[0].Dot(in[1].Transpose(-1, -2)).Mul(scale).Softmax(-1).Dot(in[2])
			}, 2e-6 * float64(dh+t)}
	}
}

// TestRandomLayersMatchGO: random convolutions, products, row kernels,
// copies and attention, each realized on the CPU at its widths against
// GO, which runs the kernels without the CPU's passes. All of one
// device's layers realize in one schedule (one compilation). 64 layers;
// TGC_LAYERS=N draws N, TGC_LAYERS_SEED=S others (2000 found a padded
// conv whose C did not compile: factor_reduces split a group).
func TestRandomLayersMatchGO(t *testing.T) {
	count, r := sweep("LAYERS", 64, 17, 3)
	cases := make([]layerCase, count)
	inputs := make([][][]float64, count)
	for i := range cases {
		cases[i] = randomLayer(r)
		inputs[i] = layerInputs(r, cases[i])
	}
	compareLayers(t, cases, inputs)
}

// sweep is a random test's number of draws and their generator: count,
// a quarter of it with -short, or $TGC_<name>; the seed base plus
// $TGC_<name>_SEED (0 without it).
func sweep(name string, count int, base, stream uint64) (int, *rand.Rand) {
	if n, err := strconv.Atoi(os.Getenv("TGC_" + name)); err == nil && n > 0 {
		count = n
	} else if testing.Short() {
		count /= 4
	}
	seed, _ := strconv.ParseUint(os.Getenv("TGC_"+name+"_SEED"), 10, 64)
	return count, rand.New(rand.NewPCG(base+seed, stream))
}

// layerInputs draws c's inputs from r.
func layerInputs(r *rand.Rand, c layerCase) [][]float64 {
	var in [][]float64
	for _, sh := range c.shapes {
		n := 1
		for _, d := range sh {
			n *= d
		}
		in = append(in, float32Values(r, n))
	}
	return in
}

// TestGradientsInOneVector: a 1x1 conv's input gradient (42 sums over the
// output channels) and weight gradient (2 sums over the image), flattened
// and concatenated, are one kernel whose 16-lane vector holds lanes of
// both: the simd pass took the packed sums' sources for lanes and
// indexed past a lane's (an index panic; TestRandomLayersMatchGO's draw
// 210 under TGC_LAYERS_SEED=12).
func TestGradientsInOneVector(t *testing.T) {
	c := layerCase{"conv gradients b1 1->2 6x7 k1, concatenated", [][]int{{1, 1, 6, 7}, {2, 1, 1, 1}, {1, 2, 6, 7}},
		func(in []*tensor.Tensor) *tensor.Tensor {
			y := in[0].Conv2d(in[1], nil, tensor.ConvOpts{}).Relu()
			gs, err := autograd.Gradient(y.Mul(in[2]).Sum(false), []*tensor.Tensor{in[0], in[1]})
			if err != nil {
				t.Fatal(err)
			}
			return gs[0].Flatten(0, -1).Cat(0, gs[1].Flatten(0, -1))
		}, 1e-4}
	compareLayers(t, []layerCase{c}, [][][]float64{layerInputs(rand.New(rand.NewPCG(1, 2)), c)})
}

// TestFactorLeavesAnInvariantTerm: (y - x).sum() with y a row broadcast
// over x's rows, times a vector, is one kernel; factor_reduces wrote the
// sum as sum over rows of (sum of y - sum of the row of x), and Linearize
// hoisted the sum of y, which no row changes, out of the rows' loop and
// away from its group (an internal error; TestRandomGraphsMatchReference's
// draw 1173 at TGC_GRAPHS=1500).
func TestFactorLeavesAnInvariantTerm(t *testing.T) {
	c := layerCase{"(y - x).sum() * z, y broadcast over x's rows", [][]int{{4, 6}, {1, 6}, {3}},
		func(in []*tensor.Tensor) *tensor.Tensor { return in[1].Sub(in[0]).Sum(false).Mul(in[2]) }, 1e-5}
	compareLayers(t, []layerCase{c}, [][][]float64{layerInputs(rand.New(rand.NewPCG(1, 2)), c)})
}

// TestPaddedCats: kernels of guarded loads (a cat's halves, a pad's
// border) read at stride 5 or 6, upcast along the columns, which gcc 12
// (Debian 12's, -O3 -march=native, AVX2 or AVX-512) if-converted into a
// group of masked loads and vectorized wrongly: a padded row read as
// zeros, or every row but the first left unwritten where the buffers lie
// apart, as tgc's do (the C renderer's no-tree-loop-if-convert attribute
// on kernels with guarded loads; TestRandomGraphsMatchReference's draws
// 107 and 1250 at TGC_GRAPHS=1500).
func TestPaddedCats(t *testing.T) {
	cases := []layerCase{
		{"cat(z, cat(y, x.pad(rows 1, 2; value -1), dim 1), dim 0)", [][]int{{7, 6}, {10, 2}, {1, 8}},
			func(in []*tensor.Tensor) *tensor.Tensor {
				return in[2].Cat(0, in[1].Cat(1, in[0].Pad([][2]int{{1, 2}, {0, 0}}, -1)))
			}, 1e-6},
		{"cat(x, y).pad(rows 2, 2; columns 2, 4)", [][]int{{2, 5}, {2, 5}},
			func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Cat(0, in[1]).Pad([][2]int{{2, 2}, {2, 4}}, 0) }, 1e-6},
	}
	r := rand.New(rand.NewPCG(1, 2))
	var inputs [][][]float64
	for _, c := range cases {
		inputs = append(inputs, layerInputs(r, c))
	}
	compareLayers(t, cases, inputs)
}

// compareLayers realizes cases on GO and on the CPU at each width (each
// device's in one schedule) and compares.
func compareLayers(t *testing.T, cases []layerCase, inputs [][][]float64) {
	t.Helper()
	count := len(cases)
	run := func(e *Engine) [][]float64 {
		ctx := tensor.NewContext(e)
		outs := make([]*tensor.Tensor, count)
		for i, c := range cases {
			var in []*tensor.Tensor
			for j, sh := range c.shapes {
				x, err := ctx.FromFloats(ir.Float32, sh, inputs[i][j])
				if err != nil {
					t.Fatal(err)
				}
				in = append(in, x)
			}
			outs[i] = c.f(in)
		}
		if err := tensor.RealizeAll(outs...); err != nil {
			t.Fatalf("%s: %v", e.Dev.Name(), err)
		}
		res := make([][]float64, count)
		for i, o := range outs {
			var err error
			if res[i], err = o.Floats(); err != nil {
				t.Fatalf("%s on %s: %v", cases[i].desc, e.Dev.Name(), err)
			}
		}
		return res
	}
	goe, err := Open("GO", Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := run(goe)
	for _, c := range cases {
		t.Log(c.desc)
	}
	for _, w := range cpuWidths() {
		dev, err := backend.OpenCPUWidth(w)
		if err != nil {
			t.Skipf("CPU unavailable: %v", err)
		}
		got := run(New(dev, Options{}))
		for i, c := range cases {
			if len(got[i]) != len(want[i]) {
				t.Errorf("%s at %d lanes: %d values, GO %d", c.desc, w, len(got[i]), len(want[i]))
				continue
			}
			if j, bad := mismatch(want[i], got[i], 1e-6+c.tol); bad {
				t.Errorf("%s at %d lanes: element %d: GO %v, CPU %v", c.desc, w, j, want[i][j], got[i][j])
			}
		}
	}
}
