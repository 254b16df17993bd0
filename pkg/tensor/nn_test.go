package tensor

import (
	"math"
	"slices"
	"testing"

	"tgc/pkg/ir"
)

// mm is a reference (M,K)x(K,N) product of row-major matrices.
func mm(a, b []float64, m, k, n int) []float64 {
	out := make([]float64, m*n)
	for i := range m {
		for j := range n {
			for p := range k {
				out[i*n+j] += a[i*k+p] * b[p*n+j]
			}
		}
	}
	return out
}

func TestDot(t *testing.T) {
	av, bv := seq(6, 1, -2), seq(12, 0.5, -3)
	a, b := f32(t, []int{2, 3}, av...), f32(t, []int{3, 4}, bv...)
	checkVals(t, "2d", a.Dot(b), ir.Float32, []int{2, 4}, mm(av, bv, 2, 3, 4), 1e-6)
	checkVals(t, "matmul", a.Matmul(b), ir.Float32, []int{2, 4}, mm(av, bv, 2, 3, 4), 1e-6)
	v := f32(t, []int{3}, 1, 2, 3)
	checkVals(t, "1d.1d", v.Dot(v), ir.Float32, nil, []float64{14}, 0)
	checkVals(t, "mat.vec", a.Dot(v), ir.Float32, []int{2}, mm(av, []float64{1, 2, 3}, 2, 3, 1), 1e-6)
	checkVals(t, "vec.mat", v.Dot(b), ir.Float32, []int{4}, mm([]float64{1, 2, 3}, bv, 1, 3, 4), 1e-6)

	// batched with broadcast batch dims: (2,1,2,3) . (3,3,4) -> (2,3,2,4)
	xv, wv := seq(12, 1, 0), seq(36, 0.25, -4)
	x, w := f32(t, []int{2, 1, 2, 3}, xv...), f32(t, []int{3, 3, 4}, wv...)
	var want []float64
	for i := range 2 {
		for j := range 3 {
			want = append(want, mm(xv[i*6:i*6+6], wv[j*12:j*12+12], 2, 3, 4)...)
		}
	}
	checkVals(t, "batched", x.Dot(w), ir.Float32, []int{2, 3, 2, 4}, want, 1e-6)
	// vector times a batch of matrices: (3) . (3,3,4) -> (3,4)
	want = nil
	for j := range 3 {
		want = append(want, mm([]float64{1, 2, 3}, wv[j*12:j*12+12], 1, 3, 4)...)
	}
	checkVals(t, "vec.batch", v.Dot(w), ir.Float32, []int{3, 4}, want, 1e-6)
	// batch of matrices times a vector: (2,1,2,3) . (3) -> (2,1,2)
	checkVals(t, "batch.vec", x.Dot(v), ir.Float32, []int{2, 1, 2}, mm(xv, []float64{1, 2, 3}, 4, 3, 1), 1e-6)

	// dtypes: ints stay ints, mixed promote
	ai := i32(t, []int{2, 2}, 1, 2, 3, 4)
	checkVals(t, "int", ai.Dot(ai), ir.Int32, []int{2, 2}, []float64{7, 10, 15, 22}, 0)
	checkVals(t, "int8", tensorOf(t, ir.Int8, []int{2}, 100, 100).Dot(tensorOf(t, ir.Int8, []int{2}, 1, 1)), ir.Int8, nil, nil, 0)
	checkVals(t, "mixed", ai.Dot(f32(t, []int{2}, 0.5, 0.5)), ir.Float32, []int{2}, []float64{1.5, 3.5}, 0)
	checkVals(t, "half", tensorOf(t, ir.Float16, []int{2, 2}, 1, 2, 3, 4).Dot(tensorOf(t, ir.Float16, []int{2}, 1, 1)), ir.Float16, []int{2}, []float64{3, 7}, 0)

	checkErr(t, "inner", tc.Zeros([]int{32, 784}, ir.Float32).Dot(tc.Zeros([]int{128, 10}, ir.Float32)),
		"dot: cannot multiply (32, 784) by (128, 10): inner dimensions 784 and 128 differ")
	checkErr(t, "inner 1d", v.Dot(f32(t, []int{2}, 1, 2)), "dot: cannot multiply (3,) by (2,): inner dimensions 3 and 2 differ")
	checkErr(t, "0-d", v.Dot(tc.Const(1, ir.Float32)), "dot: both tensors need to be at least 1-D", "(3,)", "0-D")
	checkErr(t, "batch", tc.Zeros([]int{2, 2, 3}, ir.Float32).Dot(tc.Zeros([]int{3, 3, 4}, ir.Float32)),
		"dot: cannot multiply (2, 2, 3) by (3, 3, 4): batch dimensions (2,) and (3,) cannot be broadcast")
}

func TestLinear(t *testing.T) {
	x := f32(t, []int{2, 3}, seq(6, 1, 0)...)
	w := f32(t, []int{3, 2}, 1, 0, 0, 1, 1, 1)
	bias := f32(t, []int{2}, 10, 20)
	checkVals(t, "linear", x.Linear(w, bias), ir.Float32, []int{2, 2}, []float64{12, 23, 18, 29}, 0)
	checkVals(t, "linear no bias", x.Linear(w, nil), ir.Float32, []int{2, 2}, []float64{2, 3, 8, 9}, 0)
	checkVals(t, "linear 1-d weight", x.Linear(f32(t, []int{3}, 1, 2, 3), nil), ir.Float32, []int{2, 3}, []float64{0, 2, 6, 3, 8, 15}, 0)
	checkErr(t, "linear weight", x.Linear(f32(t, []int{2, 2}, 1, 2, 3, 4), nil), "dot: cannot multiply (2, 3) by (2, 2)")
	checkErr(t, "linear bias", x.Linear(w, f32(t, []int{3}, 1, 2, 3)), "linear: bias (3,) does not broadcast with the output (2, 2)")
}

// conv2dRef is a direct NCHW convolution. pads: top, bottom, left, right.
func conv2dRef(x []float64, xs [4]int, w []float64, ws [4]int, groups int, stride, dil [2]int, pads [4]int) ([]float64, []int) {
	n, h, wd := xs[0], xs[2], xs[3]
	cout, cpg, kh, kw := ws[0], ws[1], ws[2], ws[3]
	oh := (h+pads[0]+pads[1]-dil[0]*(kh-1)-1)/stride[0] + 1
	ow := (wd+pads[2]+pads[3]-dil[1]*(kw-1)-1)/stride[1] + 1
	out := make([]float64, n*cout*oh*ow)
	for b := range n {
		for co := range cout {
			g := co / (cout / groups)
			for y := range oh {
				for xx := range ow {
					s := 0.0
					for ci := range cpg {
						for i := range kh {
							for j := range kw {
								iy := y*stride[0] + i*dil[0] - pads[0]
								ix := xx*stride[1] + j*dil[1] - pads[2]
								if iy < 0 || iy >= h || ix < 0 || ix >= wd {
									continue
								}
								c := g*cpg + ci
								s += x[((b*xs[1]+c)*h+iy)*wd+ix] * w[((co*cpg+ci)*kh+i)*kw+j]
							}
						}
					}
					out[((b*cout+co)*oh+y)*ow+xx] = s
				}
			}
		}
	}
	return out, []int{n, cout, oh, ow}
}

func TestConv2d(t *testing.T) {
	cases := []struct {
		name   string
		xs, ws [4]int
		opts   ConvOpts
		groups int
		stride [2]int
		dil    [2]int
		pads   [4]int // top, bottom, left, right
	}{
		{"plain", [4]int{2, 3, 6, 5}, [4]int{4, 3, 3, 2}, ConvOpts{}, 1, [2]int{1, 1}, [2]int{1, 1}, [4]int{}},
		{"padding 1", [4]int{1, 2, 5, 5}, [4]int{3, 2, 3, 3}, ConvOpts{Padding: []int{1}}, 1, [2]int{1, 1}, [2]int{1, 1}, [4]int{1, 1, 1, 1}},
		{"padding hw", [4]int{1, 2, 5, 4}, [4]int{3, 2, 3, 3}, ConvOpts{Padding: []int{2, 1}}, 1, [2]int{1, 1}, [2]int{1, 1}, [4]int{2, 2, 1, 1}},
		{"padding 4", [4]int{1, 1, 4, 4}, [4]int{2, 1, 2, 2}, ConvOpts{Padding: []int{1, 0, 2, 1}}, 1, [2]int{1, 1}, [2]int{1, 1}, [4]int{2, 1, 1, 0}},
		{"stride 2", [4]int{1, 2, 7, 6}, [4]int{2, 2, 3, 3}, ConvOpts{Stride: []int{2}}, 1, [2]int{2, 2}, [2]int{1, 1}, [4]int{}},
		{"stride hw", [4]int{1, 1, 7, 7}, [4]int{1, 1, 2, 3}, ConvOpts{Stride: []int{3, 2}, Padding: []int{1}}, 1, [2]int{3, 2}, [2]int{1, 1}, [4]int{1, 1, 1, 1}},
		{"dilation", [4]int{1, 2, 7, 7}, [4]int{2, 2, 3, 2}, ConvOpts{Dilation: []int{2, 3}}, 1, [2]int{1, 1}, [2]int{2, 3}, [4]int{}},
		{"groups", [4]int{2, 4, 5, 5}, [4]int{6, 2, 3, 3}, ConvOpts{Groups: 2, Padding: []int{1}}, 2, [2]int{1, 1}, [2]int{1, 1}, [4]int{1, 1, 1, 1}},
		{"depthwise strided dilated", [4]int{1, 3, 9, 8}, [4]int{3, 1, 2, 2}, ConvOpts{Groups: 3, Stride: []int{2}, Dilation: []int{2}, Padding: []int{1}}, 3, [2]int{2, 2}, [2]int{2, 2}, [4]int{1, 1, 1, 1}},
		{"1x1", [4]int{2, 3, 4, 4}, [4]int{5, 3, 1, 1}, ConvOpts{}, 1, [2]int{1, 1}, [2]int{1, 1}, [4]int{}},
	}
	for _, c := range cases {
		xv := mapf(seq(c.xs[0]*c.xs[1]*c.xs[2]*c.xs[3], 1, 0), func(v float64) float64 { return math.Mod(v*7, 11) - 5 })
		wv := mapf(seq(c.ws[0]*c.ws[1]*c.ws[2]*c.ws[3], 1, 0), func(v float64) float64 { return math.Mod(v*5, 7) - 3 })
		x, w := f32(t, c.xs[:], xv...), f32(t, c.ws[:], wv...)
		want, shape := conv2dRef(xv, c.xs, wv, c.ws, c.groups, c.stride, c.dil, c.pads)
		checkVals(t, "conv2d "+c.name, x.Conv2d(w, nil, c.opts), ir.Float32, shape, want, 1e-6)
		// bias adds per output channel
		bias := f32(t, []int{c.ws[0]}, seq(c.ws[0], 1, 1)...)
		per := shape[2] * shape[3]
		for i := range want {
			want[i] += float64((i/per)%c.ws[0] + 1)
		}
		checkVals(t, "conv2d bias "+c.name, x.Conv2d(w, bias, c.opts), ir.Float32, shape, want, 1e-6)
	}
	// 1-D convolution through the same function
	x1 := f32(t, []int{1, 1, 5}, 1, 2, 3, 4, 5)
	w1 := f32(t, []int{1, 1, 2}, 1, -1)
	checkVals(t, "conv1d", x1.Conv2d(w1, nil, ConvOpts{}), ir.Float32, []int{1, 1, 4}, []float64{-1, -1, -1, -1}, 0)

	x := tc.Zeros([]int{1, 3, 28, 28}, ir.Float32)
	checkErr(t, "channels", x.Conv2d(tc.Zeros([]int{32, 1, 5, 5}, ir.Float32), nil, ConvOpts{}),
		"conv2d: input (1, 3, 28, 28) has 3 channels, weight (32, 1, 5, 5) expects 1")
	checkErr(t, "groups channels", x.Conv2d(tc.Zeros([]int{4, 3, 5, 5}, ir.Float32), nil, ConvOpts{Groups: 3}), "conv2d:", "expects 9", "groups=3")
	checkErr(t, "groups cout", x.Conv2d(tc.Zeros([]int{4, 1, 5, 5}, ir.Float32), nil, ConvOpts{Groups: 3}), "conv2d:", "4 output channels, not divisible by groups=3")
	checkErr(t, "ndim", x.Conv2d(tc.Zeros([]int{32, 3, 5}, ir.Float32), nil, ConvOpts{}), "conv2d:", "same number of dimensions")
	checkErr(t, "input ndim", tc.Zeros([]int{3, 4}, ir.Float32).Conv2d(tc.Zeros([]int{3, 4}, ir.Float32), nil, ConvOpts{}), "conv2d:", "at least 3 dimensions")
	checkErr(t, "bias", x.Conv2d(tc.Zeros([]int{8, 3, 5, 5}, ir.Float32), tc.Zeros([]int{4}, ir.Float32), ConvOpts{}), "conv2d: bias (4,) does not match the 8 output channels")
	checkErr(t, "kernel too big", x.Conv2d(tc.Zeros([]int{8, 3, 30, 3}, ir.Float32), nil, ConvOpts{}), "conv2d:", "larger than the (padded) input (28, 28)")
	checkErr(t, "padding len", x.Conv2d(tc.Zeros([]int{8, 3, 3, 3}, ir.Float32), nil, ConvOpts{Padding: []int{1, 2, 3}}), "conv2d: padding [1 2 3]")
	checkErr(t, "stride len", x.Conv2d(tc.Zeros([]int{8, 3, 3, 3}, ir.Float32), nil, ConvOpts{Stride: []int{1, 2, 3}}), "conv2d: stride [1 2 3]")
	checkErr(t, "stride 0", x.Conv2d(tc.Zeros([]int{8, 3, 3, 3}, ir.Float32), nil, ConvOpts{Stride: []int{0}}), "conv2d:", "must be positive")
}

// poolRef is a direct 2-D pooling over an (H, W) plane with torch's
// semantics. pads: top, bottom, left, right. mode: "max", "avg" (count the
// padding inside the padded input) or "avgx" (count only input elements).
func poolRef(x []float64, h, w int, k, s, d [2]int, pads [4]int, ceil bool, mode string) ([]float64, int, int) {
	outSize := func(i, pb, pa, k, s, d int) int {
		span := d*(k-1) + 1
		num := i + pb + pa - span
		o := num/s + 1
		if ceil {
			o = (num+s-1)/s + 1
			if (o-1)*s >= i+pb {
				o--
			}
		}
		return o
	}
	oh, ow := outSize(h, pads[0], pads[1], k[0], s[0], d[0]), outSize(w, pads[2], pads[3], k[1], s[1], d[1])
	out := make([]float64, oh*ow)
	for y := range oh {
		for xx := range ow {
			best, sum, cnt, cntPad := math.Inf(-1), 0.0, 0, 0
			for i := range k[0] {
				for j := range k[1] {
					iy, ix := y*s[0]+i*d[0]-pads[0], xx*s[1]+j*d[1]-pads[2]
					if iy >= h+pads[1] || ix >= w+pads[3] {
						continue // overhang past the padded input (ceil mode)
					}
					cntPad++
					if iy < 0 || iy >= h || ix < 0 || ix >= w {
						continue
					}
					v := x[iy*w+ix]
					best, sum, cnt = math.Max(best, v), sum+v, cnt+1
				}
			}
			switch mode {
			case "max":
				out[y*ow+xx] = best
			case "avg":
				out[y*ow+xx] = sum / float64(cntPad)
			default:
				out[y*ow+xx] = sum / float64(cnt)
			}
		}
	}
	return out, oh, ow
}

func TestPooling(t *testing.T) {
	h, w := 7, 6
	xv := mapf(seq(h*w, 1, 0), func(v float64) float64 { return math.Mod(v*7, 13) - 6 })
	x := f32(t, []int{1, 1, h, w}, xv...)
	cases := []struct {
		name string
		opts PoolOpts
		k, s [2]int
		d    [2]int
		pads [4]int
	}{
		{"default", PoolOpts{}, [2]int{2, 2}, [2]int{2, 2}, [2]int{1, 1}, [4]int{}},
		{"k3 s1", PoolOpts{Kernel: []int{3}, Stride: []int{1}}, [2]int{3, 3}, [2]int{1, 1}, [2]int{1, 1}, [4]int{}},
		{"k3 s2 pad1", PoolOpts{Kernel: []int{3}, Stride: []int{2}, Padding: []int{1}}, [2]int{3, 3}, [2]int{2, 2}, [2]int{1, 1}, [4]int{1, 1, 1, 1}},
		{"k3x2", PoolOpts{Kernel: []int{3, 2}}, [2]int{3, 2}, [2]int{3, 2}, [2]int{1, 1}, [4]int{}},
		{"dilation", PoolOpts{Kernel: []int{2}, Stride: []int{1}, Dilation: []int{2}}, [2]int{2, 2}, [2]int{1, 1}, [2]int{2, 2}, [4]int{}},
		{"pad 4", PoolOpts{Kernel: []int{2}, Stride: []int{2}, Padding: []int{1, 0, 0, 1}}, [2]int{2, 2}, [2]int{2, 2}, [2]int{1, 1}, [4]int{0, 1, 1, 0}},
	}
	for _, c := range cases {
		for _, ceil := range []bool{false, true} {
			o := c.opts
			o.CeilMode = ceil
			name := c.name
			if ceil {
				name += " ceil"
			}
			want, oh, ow := poolRef(xv, h, w, c.k, c.s, c.d, c.pads, ceil, "max")
			checkVals(t, "max_pool2d "+name, x.MaxPool2d(o), ir.Float32, []int{1, 1, oh, ow}, want, 0)
			want, _, _ = poolRef(xv, h, w, c.k, c.s, c.d, c.pads, ceil, "avg")
			checkVals(t, "avg_pool2d "+name, x.AvgPool2d(o, true), ir.Float32, []int{1, 1, oh, ow}, want, 1e-6)
			want, _, _ = poolRef(xv, h, w, c.k, c.s, c.d, c.pads, ceil, "avgx")
			checkVals(t, "avg_pool2d exclude "+name, x.AvgPool2d(o, false), ir.Float32, []int{1, 1, oh, ow}, want, 1e-6)
		}
	}
	xi := i32(t, []int{1, 2, 2}, -5, -3, -4, -9)
	checkVals(t, "max_pool2d int padded", xi.MaxPool2d(PoolOpts{Kernel: []int{2}, Stride: []int{1}, Padding: []int{1}}), ir.Int32, []int{1, 3, 3},
		[]float64{-5, -3, -3, -4, -3, -3, -4, -4, -9}, 0)
	checkVals(t, "avg_pool2d int", xi.AvgPool2d(PoolOpts{}, true), ir.Float32, []int{1, 1, 1}, []float64{-21.0 / 4}, 1e-6)
	checkErr(t, "pool kernel", x.MaxPool2d(PoolOpts{Kernel: []int{8}}), "max_pool2d:", "larger than the (padded) input (7, 6)")
	checkErr(t, "pool ndim", f32(t, []int{3}, 1, 2, 3).MaxPool2d(PoolOpts{}), "max_pool2d:", "fewer dimensions")
	checkErr(t, "pool stride", x.AvgPool2d(PoolOpts{Stride: []int{0}}, true), "avg_pool2d:", "must be positive")
	checkErr(t, "pool padding", x.AvgPool2d(PoolOpts{Padding: []int{1, 1, 1}}, true), "avg_pool2d: padding [1 1 1]")
}

func TestNorms(t *testing.T) {
	x := f32(t, []int{2, 3}, 1, 2, 3, 2, 4, 9)
	ln := func(r ...float64) []float64 {
		m := (r[0] + r[1] + r[2]) / 3
		v := 0.0
		for _, e := range r {
			v += (e - m) * (e - m) / 3
		}
		return mapf(r, func(e float64) float64 { return (e - m) / math.Sqrt(v+1e-5) })
	}
	checkVals(t, "layernorm", x.Layernorm(1e-5), ir.Float32, []int{2, 3}, append(ln(1, 2, 3), ln(2, 4, 9)...), 1e-5)
	checkVals(t, "layernorm all", x.Layernorm(1e-5, 0, 1), ir.Float32, []int{2, 3}, nil, 0)
	checkErr(t, "layernorm axis", x.Layernorm(1e-5, 2), "layernorm: axis 2")

	img := f32(t, []int{2, 2, 1, 1}, 1, 2, 3, 4)
	mean, invstd := f32(t, []int{2}, 1, 2), f32(t, []int{2}, 2, 0.5)
	wt, bias := f32(t, []int{2}, 1, 10), f32(t, []int{2}, 100, 200)
	checkVals(t, "batchnorm", img.Batchnorm(wt, bias, mean, invstd), ir.Float32, []int{2, 2, 1, 1}, []float64{100, 200, 104, 210}, 1e-6)
	checkVals(t, "batchnorm bare", img.Batchnorm(nil, nil, mean, invstd), ir.Float32, []int{2, 2, 1, 1}, []float64{0, 0, 4, 1}, 1e-6)
	checkErr(t, "batchnorm shape", img.Batchnorm(nil, nil, f32(t, []int{3}, 1, 2, 3), invstd), "batchnorm: mean (3,) does not fit input (2, 2, 1, 1)")
}

func TestLosses(t *testing.T) {
	logits := f32(t, []int{3, 4}, 1, 2, 3, 4, 0, 0, 0, 0, -1, 5, 2, 0)
	Y := i32(t, []int{3}, 3, 1, 1)
	lsm := eval(t, logits.LogSoftmax(-1))
	nll := []float64{-lsm[3], -lsm[5], -lsm[9]}
	mean := (nll[0] + nll[1] + nll[2]) / 3
	checkVals(t, "sparse ce", logits.SparseCategoricalCrossentropy(Y, -1, 0, "mean"), ir.Float32, nil, []float64{mean}, 1e-6)
	checkVals(t, "sparse ce sum", logits.SparseCategoricalCrossentropy(Y, -1, 0, "sum"), ir.Float32, nil, []float64{3 * mean}, 1e-6)
	checkVals(t, "sparse ce none", logits.SparseCategoricalCrossentropy(Y, -1, 0, "none"), ir.Float32, []int{3}, nll, 1e-6)
	// ignore_index: label 1 rows do not count, mean over the rest
	checkVals(t, "sparse ce ignore", logits.SparseCategoricalCrossentropy(Y, 1, 0, "mean"), ir.Float32, nil, []float64{nll[0]}, 1e-6)
	// label smoothing: (1-ls)*nll + ls*mean(-logprobs)
	rowMean := func(r int) float64 { return -(lsm[4*r] + lsm[4*r+1] + lsm[4*r+2] + lsm[4*r+3]) / 4 }
	sm := 0.0
	for r := range 3 {
		sm += 0.9*nll[r] + 0.1*rowMean(r)
	}
	checkVals(t, "sparse ce smoothing", logits.SparseCategoricalCrossentropy(Y, -1, 0.1, "mean"), ir.Float32, nil, []float64{sm / 3}, 1e-6)
	checkErr(t, "sparse ce shape", logits.SparseCategoricalCrossentropy(i32(t, []int{4}, 0, 0, 0, 0), -1, 0, "mean"),
		"sparse_categorical_crossentropy: labels (4,) must have the shape of the logits (3, 4) without the class dimension")
	checkErr(t, "sparse ce reduction", logits.SparseCategoricalCrossentropy(Y, -1, 0, "avg"), "sparse_categorical_crossentropy: reduction must be")
	checkErr(t, "sparse ce smoothing range", logits.SparseCategoricalCrossentropy(Y, -1, 2, "mean"), "label_smoothing must be in [0, 1]")

	checkVals(t, "cross_entropy indices", logits.CrossEntropy(Y, "mean", 0), ir.Float32, nil, []float64{mean}, 1e-6)
	probs := Y.OneHot(4).Cast(ir.Float32)
	checkVals(t, "cross_entropy probs", logits.CrossEntropy(probs, "none", 0), ir.Float32, []int{3}, nll, 1e-6)

	p := f32(t, []int{3}, 0.1, 0.5, 0.8)
	y := f32(t, []int{3}, 0, 1, 1)
	bce := []float64{-math.Log(0.9), -math.Log(0.5), -math.Log(0.8)}
	checkVals(t, "bce", p.BinaryCrossentropy(y, "none"), ir.Float32, []int{3}, bce, 1e-6)
	z := f32(t, []int{3}, -2, 0, 3)
	sig := func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }
	bcel := (-math.Log(1-sig(-2)) - math.Log(sig(0)) - math.Log(sig(3))) / 3
	checkVals(t, "bce logits", z.BinaryCrossentropyLogits(y, "mean"), ir.Float32, nil, []float64{bcel}, 1e-6)
	checkErr(t, "bce shape", p.BinaryCrossentropy(f32(t, []int{2}, 0, 1), "mean"), "binary_crossentropy:", "(3,) and (2,)")
}

func TestOneHotTri(t *testing.T) {
	y := i32(t, []int{2, 2}, 0, 2, 1, 0)
	checkVals(t, "one_hot", y.OneHot(3), ir.Int32, []int{2, 2, 3}, []float64{1, 0, 0, 0, 0, 1, 0, 1, 0, 1, 0, 0}, 0)
	checkErr(t, "one_hot float", f32(t, []int{1}, 1).OneHot(3), "one_hot: labels must be integers, got float32")
	checkErr(t, "one_hot classes", y.OneHot(-1), "one_hot: num_classes must be positive")

	x := f32(t, []int{3, 4}, seq(12, 1, 1)...)
	keep := func(f func(i, j int) bool) []float64 {
		var out []float64
		for i := range 3 {
			for j := range 4 {
				if f(i, j) {
					out = append(out, float64(i*4+j+1))
				} else {
					out = append(out, 0)
				}
			}
		}
		return out
	}
	for _, d := range []int{-2, 0, 1, 5} {
		checkVals(t, "triu", x.Triu(d), ir.Float32, []int{3, 4}, keep(func(i, j int) bool { return j-i >= d }), 0)
		checkVals(t, "tril", x.Tril(d), ir.Float32, []int{3, 4}, keep(func(i, j int) bool { return j-i <= d }), 0)
	}
	b := tc.Full([]int{2, 2, 2}, 1, ir.Bool)
	checkVals(t, "tril batched bool", b.Tril(0), ir.Bool, []int{2, 2, 2}, []float64{1, 0, 1, 1, 1, 0, 1, 1}, 0)
	checkErr(t, "triu 1-d", f32(t, []int{3}, 1, 2, 3).Triu(0), "triu: needs at least 2 dimensions, got shape (3,)")
	checkErr(t, "tril 1-d", f32(t, []int{3}, 1, 2, 3).Tril(0), "tril: needs at least 2 dimensions")
}

func TestAttention(t *testing.T) {
	q := f32(t, []int{2, 2}, 1, 0, 0, 1)
	k := f32(t, []int{3, 2}, 1, 0, 0, 1, 1, 1)
	v := f32(t, []int{3, 1}, 1, 2, 3)
	scores := []float64{1, 0, 1, 0, 1, 1}
	var want []float64
	for r := range 2 {
		s := softmaxRef(mapf(scores[3*r:3*r+3], func(e float64) float64 { return e / math.Sqrt(2) }))
		want = append(want, s[0]*1+s[1]*2+s[2]*3)
	}
	checkVals(t, "sdpa", q.ScaledDotProductAttention(k, v, nil, false), ir.Float32, []int{2, 1}, want, 1e-6)
	// causal: row 0 sees key 0 only, row 1 keys 0 and 1
	s1 := softmaxRef([]float64{0, 1 / math.Sqrt(2)})
	checkVals(t, "sdpa causal", q.ScaledDotProductAttention(k, v, nil, true), ir.Float32, []int{2, 1}, []float64{1, s1[0] + 2*s1[1]}, 1e-6)
	checkErr(t, "sdpa shapes", q.ScaledDotProductAttention(f32(t, []int{3, 3}, seq(9, 1, 0)...), v, nil, false), "dot: cannot multiply (2, 2) by (3, 3)")
}

// TestAllShapesAndDTypes runs every function once on a small input and
// checks the result's shape and dtype (and that the graph evaluates).
func TestAllShapesAndDTypes(t *testing.T) {
	tc.ManualSeed(3)
	x := f32(t, []int{2, 3, 4}, seq(24, 0.1, -1)...)
	xi := i32(t, []int{2, 3, 4}, seq(24, 1, -12)...)
	img := f32(t, []int{2, 3, 8, 8}, seq(384, 0.01, -1)...)
	one, zero := 1, 0
	cases := []struct {
		name  string
		got   *Tensor
		shape []int
		dt    ir.DType
	}{
		{"exp", x.Exp(), []int{2, 3, 4}, ir.Float32},
		{"log int", xi.Log(), []int{2, 3, 4}, ir.Float32},
		{"tanh", x.Tanh(), []int{2, 3, 4}, ir.Float32},
		{"pow", x.Pow(xi), []int{2, 3, 4}, ir.Float32},
		{"floordiv int", xi.FloorDiv(i32(t, []int{4}, 1, 2, 3, 4)), []int{2, 3, 4}, ir.Int32},
		{"mod mixed", xi.Mod(x), []int{2, 3, 4}, ir.Float32},
		{"min", x.Min(false, 1), []int{2, 4}, ir.Float32},
		{"mean int", xi.Mean(true, 0, 2), []int{1, 3, 1}, ir.Float32},
		{"var", x.Var(false, 1, -1), []int{2, 3}, ir.Float32},
		{"std int", xi.Std(false, 1), []int{}, ir.Float32},
		{"argmax", x.Argmax(&one, false), []int{2, 4}, ir.Int32},
		{"argmin keepdim", xi.Argmin(&zero, true), []int{1, 3, 4}, ir.Int32},
		{"softmax", x.Softmax(1), []int{2, 3, 4}, ir.Float32},
		{"log_softmax int", xi.LogSoftmax(-1), []int{2, 3, 4}, ir.Float32},
		{"logsumexp", x.Logsumexp(false, 0, 2), []int{3}, ir.Float32},
		{"cumsum int", xi.Cumsum(2), []int{2, 3, 4}, ir.Int32},
		{"transpose", x.Transpose(0, 2), []int{4, 3, 2}, ir.Float32},
		{"flatten", x.Flatten(1, -1), []int{2, 12}, ir.Float32},
		{"repeat", x.Repeat(1, 2, 1, 1), []int{1, 4, 3, 4}, ir.Float32},
		{"cat", x.Cat(1, x, x), []int{2, 9, 4}, ir.Float32},
		{"stack", Stack(1, xi, xi), []int{2, 2, 3, 4}, ir.Int32},
		{"index", x.Index([]IndexItem{IntIndex(1), SliceIndex(nil, nil, ptr(2))}), []int{2, 4}, ir.Float32},
		{"gather", x.Gather(2, tc.Zeros([]int{2, 3, 1}, ir.Int32)), []int{2, 3, 1}, ir.Float32},
		{"zeros", tc.Zeros([]int{5}, ir.Uint8), []int{5}, ir.Uint8},
		{"arange", tc.Arange(0, 10, 3, ir.Int32), []int{4}, ir.Int32},
		{"eye", tc.Eye(3, 2, ir.Bool), []int{3, 2}, ir.Bool},
		{"randn", tc.Randn(2, 5), []int{2, 5}, ir.Float32},
		{"randint", tc.Randint(0, 10, 7), []int{7}, ir.Int32},
		{"uniform", tc.Uniform(0, 1, 3, 3), []int{3, 3}, ir.Float32},
		{"kaiming", tc.KaimingUniform(math.Sqrt(5), 4, 3, 3, 3), []int{4, 3, 3, 3}, ir.Float32},
		{"dot", x.Dot(f32(t, []int{4, 5}, seq(20, 1, 0)...)), []int{2, 3, 5}, ir.Float32},
		{"linear", x.Linear(tc.Zeros([]int{4, 2}, ir.Float32), tc.Zeros([]int{2}, ir.Float32)), []int{2, 3, 2}, ir.Float32},
		{"conv2d", img.Conv2d(tc.Zeros([]int{4, 3, 3, 3}, ir.Float32), tc.Zeros([]int{4}, ir.Float32), ConvOpts{Padding: []int{1}}), []int{2, 4, 8, 8}, ir.Float32},
		{"conv2d half", img.Cast(ir.Float16).Conv2d(tc.Zeros([]int{4, 3, 3, 3}, ir.Float16), nil, ConvOpts{Stride: []int{2}}), []int{2, 4, 3, 3}, ir.Float16},
		{"max_pool2d", img.MaxPool2d(PoolOpts{}), []int{2, 3, 4, 4}, ir.Float32},
		{"avg_pool2d", img.AvgPool2d(PoolOpts{Kernel: []int{3}, Stride: []int{1}}, true), []int{2, 3, 6, 6}, ir.Float32},
		{"layernorm", x.Layernorm(1e-5), []int{2, 3, 4}, ir.Float32},
		{"sparse ce", x.SparseCategoricalCrossentropy(tc.Zeros([]int{2, 3}, ir.Int32), -1, 0, "mean"), []int{}, ir.Float32},
		{"one_hot", tc.Zeros([]int{5}, ir.Uint8).OneHot(3), []int{5, 3}, ir.Int32},
		{"tril", xi.Tril(0), []int{2, 3, 4}, ir.Int32},
		{"softmax 0-d", tc.Const(2, ir.Float32).Softmax(-1), []int{}, ir.Float32},
		{"mean 0-d axis", tc.Const(2, ir.Int32).Mean(false, -1), []int{}, ir.Float32},
		{"argmax 0-d", tc.Const(2, ir.Float32).Argmax(&zero, false), []int{}, ir.Int32},
	}
	for _, c := range cases {
		if c.got.Err() != nil {
			t.Errorf("%s: %v", c.name, c.got.Err())
			continue
		}
		if !slices.Equal(c.got.Shape(), c.shape) && !(len(c.shape) == 0 && c.got.Ndim() == 0) {
			t.Errorf("%s: shape %s, want %s", c.name, FormatShape(c.got.Shape()), FormatShape(c.shape))
		}
		if c.got.DType() != c.dt {
			t.Errorf("%s: dtype %s, want %s", c.name, c.got.DType(), c.dt)
		}
		eval(t, c.got)
	}
}

// TestNoNewOps checks that the functions only build primitive graph ops.
func TestNoNewOps(t *testing.T) {
	x := f32(t, []int{2, 3, 8, 8}, seq(384, 0.01, -1)...)
	out := x.Conv2d(tc.Zeros([]int{4, 3, 3, 3}, ir.Float32), nil, ConvOpts{Padding: []int{1}}).Relu().MaxPool2d(PoolOpts{}).
		Flatten(1, -1).Linear(tc.Zeros([]int{64, 10}, ir.Float32), nil).SparseCategoricalCrossentropy(tc.Zeros([]int{2}, ir.Int32), -1, 0.1, "mean")
	if out.Err() != nil {
		t.Fatal(out.Err())
	}
	for _, n := range Toposort([]*Node{out.Node()}) {
		if !(n.Op.IsALU() || n.Op.IsReduce() || n.Op.IsMovement() || n.Op == ir.OpBuffer || n.Op == ir.OpConst) {
			t.Errorf("unexpected op %s in the graph", n.Op)
		}
	}
}
