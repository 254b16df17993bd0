package autograd_test

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"tgc/pkg/autograd"
	"tgc/pkg/ir"
	"tgc/pkg/realize"
	"tgc/pkg/tensor"
)

// tc is the context of the tests' tensors, realized on the GO device.
var tc *tensor.Context

func TestMain(m *testing.M) {
	var err error
	if tc, _, err = realize.NewContext("GO", realize.Options{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// in describes one input of a gradient check: its shape and the range of
// its (deterministic pseudo-random) values.
type in struct {
	shape  []int
	lo, hi float64
}

func u(lo, hi float64, shape ...int) in { return in{shape, lo, hi} }

// pseudo returns n values in [lo, hi) from a fixed LCG stream.
func pseudo(n int, lo, hi float64, seed uint64) []float64 {
	x := seed*0x9E3779B97F4A7C15 + 12345
	v := make([]float64, n)
	for i := range v {
		x = x*6364136223846793005 + 1442695040888963407
		v[i] = lo + (hi-lo)*float64(x>>11)/float64(1<<53)
	}
	return v
}

func mustTensor(tb testing.TB, dt ir.DType, shape []int, vals []float64) *tensor.Tensor {
	tb.Helper()
	t, err := tc.FromFloats(dt, shape, vals)
	if err != nil {
		tb.Fatal(err)
	}
	return t
}

// gradCheck differentiates sum(f(xs) * w) (w fixed pseudo-random weights,
// so every output element matters differently) with respect to every
// input, and checks the gradient graph against central finite differences
// of the forward graph, both evaluated in float64 by the reference
// evaluator; then realizes the gradients on the GO device (float32) and
// checks them against the same reference.
func gradCheck(t *testing.T, name string, f func(x []*tensor.Tensor) *tensor.Tensor, ins ...in) {
	devTol := 2e-4
	if strings.Contains(name, "f16") { // float16 rounds to ~1e-3
		devTol = 2e-3
	}
	t.Helper()
	xs := make([]*tensor.Tensor, len(ins))
	for i, s := range ins {
		n := 1
		for _, d := range s.shape {
			n *= d
		}
		xs[i] = mustTensor(t, ir.Float32, s.shape, pseudo(n, s.lo, s.hi, uint64(i+1)*7919+uint64(len(name))))
	}
	y := f(xs)
	if err := y.Err(); err != nil {
		t.Fatalf("%s: forward: %v", name, err)
	}
	y = y.Cast(ir.Float32)
	w := mustTensor(t, ir.Float32, y.Shape(), pseudo(y.Numel(), 0.5, 1.5, 99))
	loss := y.Mul(w).Sum(false)
	grads, err := autograd.Gradient(loss, xs)
	if err != nil {
		t.Fatalf("%s: gradient: %v", name, err)
	}
	lossAt := func(x *tensor.Tensor, v []float64) float64 {
		return eval64(loss.Node(), map[*tensor.Node][]float64{x.Node(): v})[0]
	}
	if err := tensor.RealizeAll(grads...); err != nil {
		t.Fatalf("%s: realizing the gradients: %v", name, err)
	}
	for i, x := range xs {
		analytic := eval64(grads[i].Node(), map[*tensor.Node][]float64{})
		base := eval64(x.Node(), map[*tensor.Node][]float64{})
		scale := 0.0
		for k := range base {
			const eps = 1e-6
			v := append([]float64{}, base...)
			v[k] = base[k] + eps
			fp := lossAt(x, v)
			v[k] = base[k] - eps
			fm := lossAt(x, v)
			num := (fp - fm) / (2 * eps)
			if math.IsNaN(analytic[k]) || math.Abs(analytic[k]-num) > 1e-5*(1+math.Abs(num)) {
				t.Errorf("%s: d/dx%d[%d]: gradient graph %.9g, finite difference %.9g", name, i, k, analytic[k], num)
				return
			}
			scale = math.Max(scale, math.Abs(num))
		}
		dev, err := grads[i].Floats()
		if err != nil {
			t.Fatalf("%s: reading the gradient: %v", name, err)
		}
		for k := range dev {
			if math.IsNaN(dev[k]) || math.Abs(dev[k]-analytic[k]) > devTol*(1+scale) {
				t.Errorf("%s: d/dx%d[%d] on %s: %.7g, float64 reference %.7g", name, i, k, "GO", dev[k], analytic[k])
				return
			}
		}
	}
}

func ip(i int) *int { return &i }

func TestGradientsOfPrimitives(t *testing.T) {
	cases := []struct {
		name string
		f    func(x []*tensor.Tensor) *tensor.Tensor
		ins  []in
	}{
		{"add", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Add(x[1]) }, []in{u(-2, 2, 2, 3), u(-2, 2, 2, 3)}},
		{"add_broadcast", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Add(x[1]) }, []in{u(-2, 2, 2, 3), u(-2, 2, 3)}},
		{"sub", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Sub(x[1]) }, []in{u(-2, 2, 2, 3), u(-2, 2, 2, 1)}},
		{"mul", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Mul(x[1]) }, []in{u(-2, 2, 2, 3), u(-2, 2, 2, 3)}},
		{"mul_self", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Mul(x[0]).Mul(x[0]) }, []in{u(-2, 2, 5)}},
		{"div", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Div(x[1]) }, []in{u(-2, 2, 2, 3), u(0.5, 2, 2, 3)}},
		{"neg", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Neg() }, []in{u(-2, 2, 4)}},
		{"reciprocal", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Reciprocal() }, []in{u(0.5, 2, 4)}},
		{"exp2", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Exp2() }, []in{u(-2, 2, 4)}},
		{"log2", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Log2() }, []in{u(0.2, 3, 4)}},
		{"sin", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Sin() }, []in{u(-3, 3, 6)}},
		{"sqrt", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Sqrt() }, []in{u(0.2, 3, 4)}},
		{"trunc_plus_x", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Trunc().Add(x[0].Mul(x[0])) }, []in{u(-3, 3, 5)}},
		{"cast_f16", func(x []*tensor.Tensor) *tensor.Tensor {
			return x[0].Cast(ir.Float16).Mul(tc.Const(3, ir.Float16)).Cast(ir.Float32)
		}, []in{u(-2, 2, 4)}},
		{"maximum", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Maximum(x[1]) }, []in{u(-2, 2, 2, 4), u(-2, 2, 2, 4)}},
		{"where", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Gt(x[1]).Where(x[0].Mul(x[1]), x[1]) }, []in{u(-2, 2, 6), u(-2, 2, 6)}},
		{"sum", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Sum(false, 1) }, []in{u(-2, 2, 2, 3, 4)}},
		{"sum_all", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Mul(x[0]).Sum(false) }, []in{u(-2, 2, 2, 3)}},
		{"max_reduce", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Max(false, 0, 2) }, []in{u(-2, 2, 2, 3, 4)}},
		{"reshape", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Reshape(3, 4).Mul(x[0].Reshape(3, 4)) }, []in{u(-2, 2, 2, 6)}},
		{"permute", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Permute(2, 0, 1).Mul(x[1]) }, []in{u(-2, 2, 2, 3, 4), u(-2, 2, 4, 2, 3)}},
		{"expand", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Expand(3, 2, 4).Mul(x[1]) }, []in{u(-2, 2, 1, 2, 1), u(-2, 2, 3, 2, 4)}},
		{"pad", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Pad([][2]int{{1, 2}, {0, 1}}, 0).Mul(x[1]) }, []in{u(-2, 2, 2, 3), u(-2, 2, 5, 4)}},
		{"pad_value", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Pad([][2]int{{1, 0}, {2, 1}}, -3).Exp() }, []in{u(-2, 2, 2, 3)}},
		{"shrink", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Shrink([][2]int{{1, 3}, {0, 2}}).Exp() }, []in{u(-2, 2, 4, 3)}},
		{"flip", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Flip(0, 1).Mul(x[1]) }, []in{u(-2, 2, 2, 3), u(-2, 2, 2, 3)}},
		{"contiguous", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Contiguous().Mul(x[0]) }, []in{u(-2, 2, 5)}},
		{"detach_stops", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Mul(x[0].Detach()) }, []in{u(-2, 2, 5)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { gradCheck(t, c.name, c.f, c.ins...) })
	}
}

func TestGradientsOfFunctions(t *testing.T) {
	conv := func(o tensor.ConvOpts) func(x []*tensor.Tensor) *tensor.Tensor {
		return func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Conv2d(x[1], x[2], o) }
	}
	labels := func(vals ...float64) *tensor.Tensor {
		l, _ := tc.FromFloats(ir.Int32, []int{len(vals)}, vals)
		return l
	}
	cases := []struct {
		name string
		f    func(x []*tensor.Tensor) *tensor.Tensor
		ins  []in
	}{
		{"relu", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Relu() }, []in{u(-2, 2, 3, 4)}},
		{"leaky_relu", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].LeakyRelu(0.1) }, []in{u(-2, 2, 8)}},
		{"sigmoid", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Sigmoid() }, []in{u(-3, 3, 8)}},
		{"tanh", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Tanh() }, []in{u(-3, 3, 8)}},
		{"gelu", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Gelu() }, []in{u(-3, 3, 8)}},
		{"silu", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Silu() }, []in{u(-3, 3, 8)}},
		{"elu", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Elu(1) }, []in{u(-3, 3, 8)}},
		{"softplus", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Softplus(1) }, []in{u(-3, 3, 8)}},
		{"mish", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Mish() }, []in{u(-3, 3, 8)}},
		{"hardswish", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Hardswish() }, []in{u(-2.5, 2.5, 8)}},
		{"exp", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Exp() }, []in{u(-2, 2, 6)}},
		{"log", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Log() }, []in{u(0.2, 3, 6)}},
		{"cos_tan", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Cos().Add(x[0].Tan()) }, []in{u(-1, 1, 6)}},
		{"erf", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Erf() }, []in{u(-2, 2, 6)}},
		{"abs", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Abs() }, []in{u(-2, 2, 6)}},
		{"clip", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Clip(-0.5, 0.7) }, []in{u(-2, 2, 8)}},
		{"pow_const", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Pow(tc.Const(3, ir.Float32)) }, []in{u(-2, 2, 6)}},
		{"pow_tensor", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Pow(x[1]) }, []in{u(0.3, 2, 6), u(-2, 2, 6)}},
		{"pow_half", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Pow(tc.Const(2.5, ir.Float32)) }, []in{u(0.3, 2, 6)}},
		{"rsqrt", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Rsqrt() }, []in{u(0.3, 2, 6)}},
		{"div_broadcast", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Div(x[1]) }, []in{u(-2, 2, 2, 3), u(0.5, 2, 3)}},
		{"maximum_minimum", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Maximum(x[1]).Add(x[0].Minimum(x[1]).Mul(x[1])) }, []in{u(-2, 2, 8), u(-2, 2, 8)}},
		{"max_min", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Max(false, 1).Add(x[0].Min(false, 1)) }, []in{u(-2, 2, 3, 5)}},
		{"mean", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Mean(false, 0) }, []in{u(-2, 2, 3, 4)}},
		{"var", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Var(false, 1, 1) }, []in{u(-2, 2, 3, 4)}},
		{"std", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Std(false, 1) }, []in{u(-2, 2, 3, 4)}},
		{"softmax", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Softmax(-1) }, []in{u(-3, 3, 3, 5)}},
		{"log_softmax", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].LogSoftmax(1) }, []in{u(-3, 3, 3, 5)}},
		{"logsumexp", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Logsumexp(false, 0) }, []in{u(-3, 3, 3, 5)}},
		{"dot", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Dot(x[1]) }, []in{u(-2, 2, 3, 4), u(-2, 2, 4, 5)}},
		{"matmul_batched", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Matmul(x[1]) }, []in{u(-2, 2, 2, 3, 4), u(-2, 2, 4, 2)}},
		{"matvec", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Dot(x[1]) }, []in{u(-2, 2, 3, 4), u(-2, 2, 4)}},
		{"linear", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Linear(x[1], x[2]).Relu() }, []in{u(-2, 2, 4, 3), u(-1, 1, 3, 5), u(-1, 1, 5)}},
		{"conv2d", conv(tensor.ConvOpts{}), []in{u(-2, 2, 2, 2, 5, 5), u(-1, 1, 3, 2, 3, 3), u(-1, 1, 3)}},
		{"conv2d_pad_asymmetric", conv(tensor.ConvOpts{Padding: []int{0, 2, 1, 0}}), []in{u(-2, 2, 2, 2, 5, 6), u(-1, 1, 3, 2, 3, 3), u(-1, 1, 3)}},
		{"conv2d_rect_kernel_pad", conv(tensor.ConvOpts{Padding: []int{1, 2}}), []in{u(-2, 2, 1, 3, 4, 6), u(-1, 1, 2, 3, 2, 3), u(-1, 1, 2)}},
		{"conv1d_pad", conv(tensor.ConvOpts{Padding: []int{2}}), []in{u(-2, 2, 2, 2, 7), u(-1, 1, 3, 2, 3), u(-1, 1, 3)}},
		{"conv3d_pad", conv(tensor.ConvOpts{Padding: []int{1}}), []in{u(-2, 2, 1, 2, 3, 4, 3), u(-1, 1, 2, 2, 2, 3, 2), u(-1, 1, 2)}},
		{"conv2d_twice", func(x []*tensor.Tensor) *tensor.Tensor {
			return x[0].Conv2d(x[1], nil, tensor.ConvOpts{Padding: []int{1}}).Relu().Conv2d(x[2], nil, tensor.ConvOpts{})
		}, []in{u(-2, 2, 1, 2, 5, 5), u(-1, 1, 3, 2, 3, 3), u(-1, 1, 2, 3, 2, 2)}},
		{"maxpool_then_conv", func(x []*tensor.Tensor) *tensor.Tensor {
			return x[0].Conv2d(x[1], nil, tensor.ConvOpts{}).MaxPool2d(tensor.PoolOpts{}).Conv2d(x[2], nil, tensor.ConvOpts{Padding: []int{1}})
		}, []in{u(-2, 2, 1, 2, 7, 7), u(-1, 1, 3, 2, 2, 2), u(-1, 1, 2, 3, 2, 2)}},
		{"conv2d_stride_pad", conv(tensor.ConvOpts{Stride: []int{2}, Padding: []int{1}}), []in{u(-2, 2, 1, 2, 5, 5), u(-1, 1, 2, 2, 3, 3), u(-1, 1, 2)}},
		{"conv2d_groups_dilation", conv(tensor.ConvOpts{Groups: 2, Dilation: []int{2}, Padding: []int{1, 2}}), []in{u(-2, 2, 1, 4, 5, 5), u(-1, 1, 4, 2, 2, 2), u(-1, 1, 4)}},
		{"max_pool2d", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].MaxPool2d(tensor.PoolOpts{Kernel: []int{2, 2}}) }, []in{u(-2, 2, 1, 2, 4, 6)}},
		{"max_pool2d_overlap", func(x []*tensor.Tensor) *tensor.Tensor {
			return x[0].MaxPool2d(tensor.PoolOpts{Kernel: []int{3, 3}, Stride: []int{1}, Padding: []int{1}})
		}, []in{u(-2, 2, 1, 1, 4, 4)}},
		{"avg_pool2d", func(x []*tensor.Tensor) *tensor.Tensor {
			return x[0].AvgPool2d(tensor.PoolOpts{Kernel: []int{2, 2}, Stride: []int{1}}, true)
		}, []in{u(-2, 2, 1, 2, 4, 5)}},
		{"avg_pool2d_pad_exclude", func(x []*tensor.Tensor) *tensor.Tensor {
			return x[0].AvgPool2d(tensor.PoolOpts{Kernel: []int{3, 3}, Stride: []int{2}, Padding: []int{1}}, false)
		}, []in{u(-2, 2, 1, 1, 5, 5)}},
		{"layernorm", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Layernorm(1e-5) }, []in{u(-2, 2, 3, 5)}},
		{"batchnorm", func(x []*tensor.Tensor) *tensor.Tensor {
			m := x[0].Mean(false, 0, 2, 3)
			v := x[0].Var(false, 0, 0, 2, 3)
			invstd := v.Add(tc.Const(1e-5, ir.Float32)).Rsqrt()
			return x[0].Batchnorm(x[1], x[2], m, invstd)
		}, []in{u(-2, 2, 2, 3, 2, 2), u(0.5, 1.5, 3), u(-1, 1, 3)}},
		{"sparse_categorical_crossentropy", func(x []*tensor.Tensor) *tensor.Tensor {
			return x[0].SparseCategoricalCrossentropy(labels(2, 0, 4), -1, 0, "mean")
		}, []in{u(-3, 3, 3, 5)}},
		{"sparse_ce_smoothing_ignore", func(x []*tensor.Tensor) *tensor.Tensor {
			return x[0].SparseCategoricalCrossentropy(labels(2, 1, 4, 1), 1, 0.1, "mean")
		}, []in{u(-3, 3, 4, 5)}},
		{"cross_entropy", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].CrossEntropy(labels(1, 3, 0), "mean", 0.05) }, []in{u(-3, 3, 3, 4)}},
		{"binary_crossentropy", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Sigmoid().BinaryCrossentropy(x[1], "mean") }, []in{u(-3, 3, 6), u(0, 1, 6)}},
		{"binary_crossentropy_logits", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].BinaryCrossentropyLogits(x[1], "sum") }, []in{u(-3, 3, 6), u(0, 1, 6)}},
		{"cumsum", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Cumsum(1) }, []in{u(-2, 2, 2, 6)}},
		{"cat_stack", func(x []*tensor.Tensor) *tensor.Tensor { return tensor.Stack(0, x[0].Cat(1, x[1]), x[1].Cat(1, x[0])) }, []in{u(-2, 2, 2, 3), u(-2, 2, 2, 3)}},
		{"transpose_flatten", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Transpose(0, 2).Flatten(0, 1).Exp() }, []in{u(-2, 2, 2, 3, 2)}},
		{"indexing", func(x []*tensor.Tensor) *tensor.Tensor {
			return x[0].Index([]tensor.IndexItem{tensor.SliceIndex(ip(1), nil, ip(2)), tensor.IntIndex(-1), tensor.NewAxisIndex(), tensor.SliceIndex(nil, nil, ip(-1))}).Exp()
		}, []in{u(-2, 2, 5, 3, 4)}},
		{"gather", func(x []*tensor.Tensor) *tensor.Tensor {
			idx, _ := tc.FromFloats(ir.Int32, []int{2, 3}, []float64{0, 2, 2, 1, 0, 1})
			return x[0].Gather(1, idx)
		}, []in{u(-2, 2, 2, 3)}},
		{"repeat", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Repeat(2, 3).Mul(x[0].Repeat(2, 3)) }, []in{u(-2, 2, 2, 2)}},
		{"lerp", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Lerp(x[1], x[2]) }, []in{u(-2, 2, 4), u(-2, 2, 4), u(0, 1, 4)}},
		{"attention", func(x []*tensor.Tensor) *tensor.Tensor { return x[0].ScaledDotProductAttention(x[1], x[2], nil, true) }, []in{u(-1, 1, 1, 3, 4), u(-1, 1, 1, 3, 4), u(-1, 1, 1, 3, 4)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { gradCheck(t, c.name, c.f, c.ins...) })
	}
}

// read evaluates t on the device.
func read(t *testing.T, x *tensor.Tensor) []float64 {
	t.Helper()
	v, err := x.Floats()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func near(a, b []float64, tol float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > tol*(1+math.Abs(b[i])) {
			return false
		}
	}
	return true
}

// Gradients computed by hand, outside tgc.
func TestAnalyticGradients(t *testing.T) {
	x := mustTensor(t, ir.Float32, []int{4}, []float64{1, -2, 3, 0.5})
	g, err := autograd.Gradient(x.Mul(x).Sum(false), []*tensor.Tensor{x})
	if err != nil {
		t.Fatal(err)
	}
	if got := read(t, g[0]); !near(got, []float64{2, -4, 6, 1}, 1e-6) {
		t.Errorf("d sum(x*x)/dx = %v, want 2x", got)
	}

	// softmax cross entropy: d/dlogits mean CE = (softmax - onehot) / N
	logits := []float64{1, 2, 0.5, -1, 0, 3}
	z := mustTensor(t, ir.Float32, []int{2, 3}, logits)
	y := mustTensor(t, ir.Int32, []int{2}, []float64{2, 0})
	g, err = autograd.Gradient(z.SparseCategoricalCrossentropy(y, -1, 0, "mean"), []*tensor.Tensor{z})
	if err != nil {
		t.Fatal(err)
	}
	var want []float64
	for r := range 2 {
		row := logits[3*r : 3*r+3]
		s := 0.0
		for _, v := range row {
			s += math.Exp(v)
		}
		for j, v := range row {
			p := math.Exp(v) / s
			if (r == 0 && j == 2) || (r == 1 && j == 0) {
				p--
			}
			want = append(want, p/2)
		}
	}
	if got := read(t, g[0]); !near(got, want, 1e-5) {
		t.Errorf("softmax CE gradient = %v, want %v", got, want)
	}

	// reduce max with ties: the gradient is split among the maxima
	m := mustTensor(t, ir.Float32, []int{2, 3}, []float64{1, 3, 3, 5, 2, 5})
	g, err = autograd.Gradient(m.Max(false, 1).Sum(false), []*tensor.Tensor{m})
	if err != nil {
		t.Fatal(err)
	}
	if got := read(t, g[0]); !near(got, []float64{0, 0.5, 0.5, 0.5, 0, 0.5}, 1e-6) {
		t.Errorf("max ties gradient = %v", got)
	}

	// binary max with a tie splits in half
	a := mustTensor(t, ir.Float32, []int{2}, []float64{1, 2})
	b := mustTensor(t, ir.Float32, []int{2}, []float64{1, 3})
	g, err = autograd.Gradient(a.Maximum(b).Sum(false), []*tensor.Tensor{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if ga, gb := read(t, g[0]), read(t, g[1]); !near(ga, []float64{0.5, 0}, 1e-6) || !near(gb, []float64{0.5, 1}, 1e-6) {
		t.Errorf("maximum tie gradients = %v, %v", ga, gb)
	}

	// relu at 0 has gradient 0, as in tinygrad
	r := mustTensor(t, ir.Float32, []int{3}, []float64{-1, 0, 2})
	g, err = autograd.Gradient(r.Relu().Sum(false), []*tensor.Tensor{r})
	if err != nil {
		t.Fatal(err)
	}
	if got := read(t, g[0]); !near(got, []float64{0, 0, 1}, 0) {
		t.Errorf("relu gradient = %v", got)
	}
}

func TestBackwardAccumulatesAndErrors(t *testing.T) {
	w := mustTensor(t, ir.Float32, []int{3}, []float64{1, 2, 3}).SetRequiresGrad(true)
	c := mustTensor(t, ir.Float32, []int{3}, []float64{4, 5, 6}) // no grad
	loss := w.Mul(c).Sum(false)
	if _, err := loss.Item(); err != nil { // realized first: backward goes through it
		t.Fatal(err)
	}
	if err := autograd.Backward(loss); err != nil {
		t.Fatal(err)
	}
	if c.Grad != nil {
		t.Errorf("a tensor without requires_grad got a gradient")
	}
	if got := read(t, w.Grad); !near(got, []float64{4, 5, 6}, 1e-6) {
		t.Errorf("grad = %v, want c", got)
	}
	if err := autograd.Backward(w.Mul(w).Sum(false)); err != nil {
		t.Fatal(err)
	}
	if got := read(t, w.Grad); !near(got, []float64{6, 9, 12}, 1e-6) {
		t.Errorf("accumulated grad = %v, want c + 2w", got)
	}

	err := autograd.Backward(w.Mul(c))
	if err == nil || !strings.Contains(err.Error(), "scalar") {
		t.Errorf("non-scalar loss: err = %v", err)
	}
	err = autograd.Backward(c.Sum(false))
	if err == nil || !strings.Contains(err.Error(), "requires grad") {
		t.Errorf("no grad path: err = %v", err)
	}
	_, err = autograd.Gradient(w.Sum(false), []*tensor.Tensor{c})
	if err == nil || !strings.Contains(err.Error(), "not used") {
		t.Errorf("unreachable target: err = %v", err)
	}
	// the only path goes through a comparison: no gradient, Backward gives zeros
	v := mustTensor(t, ir.Float32, []int{2}, []float64{1, -1}).SetRequiresGrad(true)
	if err := autograd.Backward(v.Gt(tc.Const(0, ir.Float32)).Cast(ir.Float32).Sum(false)); err != nil {
		t.Fatal(err)
	}
	if got := read(t, v.Grad); !near(got, []float64{0, 0}, 0) {
		t.Errorf("grad through a comparison = %v, want zeros", got)
	}
}

// Equal lazy values are one interned node; marking two of them as
// parameters must still give each its own gradient.
func TestRequiresGradGivesDistinctLeaves(t *testing.T) {
	a := tc.Zeros([]int{3}, ir.Float32).SetRequiresGrad(true)
	b := tc.Zeros([]int{3}, ir.Float32).SetRequiresGrad(true)
	if a.Node() == b.Node() {
		t.Fatal("two parameters share a node")
	}
	k := mustTensor(t, ir.Float32, []int{3}, []float64{1, 2, 3})
	loss := a.Mul(k).Add(b.Mul(k).Mul(k)).Sum(false)
	if err := autograd.Backward(loss); err != nil {
		t.Fatal(err)
	}
	if ga, gb := read(t, a.Grad), read(t, b.Grad); !near(ga, []float64{1, 2, 3}, 1e-6) || !near(gb, []float64{1, 4, 9}, 1e-6) {
		t.Errorf("grads %v %v", ga, gb)
	}
}

// TestConvCustomGradient: stride-1 convolutions carry the convolution
// gradient rule (so the finite-difference cases above exercise it); the
// others differentiate through their primitives.
func TestConvCustomGradient(t *testing.T) {
	x, _ := tc.FromFloats(ir.Float32, []int{1, 2, 6, 6}, make([]float64, 72))
	w, _ := tc.FromFloats(ir.Float32, []int{3, 2, 3, 3}, make([]float64, 54))
	for _, tc := range []struct {
		name string
		o    tensor.ConvOpts
		want bool
	}{
		{"plain", tensor.ConvOpts{}, true},
		{"pad 1", tensor.ConvOpts{Padding: []int{1}}, true},
		{"pad 2", tensor.ConvOpts{Padding: []int{2}}, true},
		{"pad 3 (beyond the kernel)", tensor.ConvOpts{Padding: []int{3}}, false},
		{"stride 2", tensor.ConvOpts{Stride: []int{2}}, false},
		{"dilation 2", tensor.ConvOpts{Dilation: []int{2}}, false},
	} {
		y := x.Conv2d(w, nil, tc.o)
		if got := y.Node().Custom() != nil; got != tc.want {
			t.Errorf("%s: custom gradient %v, want %v", tc.name, got, tc.want)
		}
	}
}
