package realize

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"tgc/pkg/backend"

	"tgc/pkg/fuse"
	"tgc/pkg/ir"
	"tgc/pkg/render"
	"tgc/pkg/tensor"
)

// TestCPUVectorReduces: reduce kernels the C renderer writes with vector
// accumulators (render/c_vec.go) and ones it leaves scalar give the GO
// device's results; and the ones that should vectorize do, so the test
// fails if the pattern matching silently stops applying.
func TestCPUVectorReduces(t *testing.T) {
	cpu, err := Open("CPU", Options{})
	if err != nil {
		t.Skipf("CPU unavailable: %v", err)
	}
	goe, _ := Open("GO", Options{})
	r := rand.New(rand.NewPCG(7, 8))
	in := func(shape ...int) func(ctx *tensor.Context) *tensor.Tensor { return randomInput(r, shape...) }
	a64, b64 := in(64, 64), in(64, 64)
	a128, b128 := in(128, 128), in(128, 128)
	a96, b80 := in(96, 72), in(72, 80)
	ba, bb := in(3, 32, 64), in(3, 64, 48)
	cx, cb, cw := in(2, 8, 14, 14), in(8), in(16, 8, 3, 3)
	cases := []struct {
		name  string
		build func(ctx *tensor.Context) *tensor.Tensor
		vec   bool // the reduce kernel has vector accumulators
	}{
		{"matmul 64", func(ctx *tensor.Context) *tensor.Tensor { return a64(ctx).Dot(b64(ctx)) }, true},
		{"matmul 128 relu", func(ctx *tensor.Context) *tensor.Tensor { return a128(ctx).Dot(b128(ctx)).Relu() }, true},
		{"matmul 96x72x80", func(ctx *tensor.Context) *tensor.Tensor { return a96(ctx).Dot(b80(ctx)) }, true},
		{"batched matmul", func(ctx *tensor.Context) *tensor.Tensor { return ba(ctx).Dot(bb(ctx)) }, true},
		{"conv2d bias relu prologue", func(ctx *tensor.Context) *tensor.Tensor {
			x := cx(ctx).Add(cb(ctx).Reshape(1, 8, 1, 1)).Relu()
			return x.Conv2d(cw(ctx), nil, tensor.ConvOpts{})
		}, true},
		// a[i,k]*b[j,k]: no load is contiguous along an output axis, so the
		// reduce axis is unrolled into vector lanes instead.
		{"matmul by transpose", func(ctx *tensor.Context) *tensor.Tensor { return a64(ctx).Dot(b64(ctx).T()) }, true},
		// Every other column: no axis is read at stride 1.
		{"strided column sums", func(ctx *tensor.Context) *tensor.Tensor {
			return a128(ctx).Reshape(128, 64, 2).Shrink([][2]int{{0, 128}, {0, 64}, {0, 1}}).Sum(false, 0)
		}, false},
		{"max reduce", func(ctx *tensor.Context) *tensor.Tensor { return a128(ctx).Max(false, 1) }, true},
		// exp inside the sum: the vector exp2 of the C prelude (tg_exp2v).
		{"softmax rows", func(ctx *tensor.Context) *tensor.Tensor { return a128(ctx).Softmax(-1) }, true},
	}
	for _, c := range cases {
		var res [2][]float64
		for d, e := range []*Engine{goe, cpu} {
			ctx := tensor.NewContext(e)
			if res[d], err = c.build(ctx).Floats(); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
		}
		for i := range res[0] {
			if a, b := res[0][i], res[1][i]; math.Abs(a-b) > 1e-4+1e-4*math.Abs(a) {
				t.Errorf("%s: element %d: GO %v, CPU %v", c.name, i, a, b)
				break
			}
		}
		src := renderCPU(t, c.build(tensor.NewContext(nil)))
		if c.name == "softmax rows" && !strings.Contains(src, "tg_exp2v(") {
			t.Errorf("softmax: the exp-and-sum reduce does not use the vector exp2:\n%s", src)
		}
		if got := strings.Contains(src, "vacc0"); got != c.vec {
			t.Errorf("%s: vectorized %v, want %v:\n%s", c.name, got, c.vec, src)
		}
	}
}

// renderCPU renders the kernels of x's schedule as the CPU device does.
func renderCPU(t *testing.T, x *tensor.Tensor) string {
	t.Helper()
	s, err := fuse.Create([]*tensor.Node{x.Node()}, fuse.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	for _, it := range s.Items {
		if it.Kernel == nil {
			continue
		}
		k, err := ir.OptimizeFor(it.Kernel, ir.CPUTarget, nil)
		if err != nil {
			t.Fatal(err)
		}
		sb.WriteString(render.Render(render.C, k))
	}
	return sb.String()
}

// TestCPUVectorWidths runs reduce and elementwise kernels on CPU devices
// that render 8-wide (AVX2) and 16-wide (AVX-512) vectors against the GO
// device. The 8-wide code runs on any x86-64 host tgc targets; the
// 16-wide code only where the CPU has avx512f, so that case is skipped
// elsewhere.
func TestCPUVectorWidths(t *testing.T) {
	ctx, _, err := NewContext("GO", Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(9, 10))
	// fresh input tensors for each run: a graph realized once would
	// otherwise be read back, not recomputed, on the next device.
	in := func(shape ...int) func(ctx *tensor.Context) *tensor.Tensor { return randomInput(r, shape...) }
	a, b := in(128, 96), in(96, 128)
	x, w := in(2, 8, 12, 12), in(16, 8, 3, 3)
	bn := in(4, 8, 20, 20)
	pooled := in(4, 8, 10, 10)
	bnBig, poolBig, gradBig := in(128, 8, 20, 20), in(128, 8, 10, 10), in(128, 8, 10, 10)
	img := make([]float64, 2*1*28*28) // bytes, as MNIST's images are
	for i := range img {
		img[i] = float64(r.IntN(256))
	}
	bytes := func(ctx *tensor.Context) *tensor.Tensor {
		x, _ := ctx.FromFloats(ir.Uint8, []int{2, 1, 28, 28}, img)
		return x
	}
	w1 := in(32, 1, 5, 5)
	odd := in(5, 1001)
	up := func(x *tensor.Tensor) *tensor.Tensor {
		return x.Reshape(128, 8, 10, 1, 10, 1).Expand(128, 8, 10, 2, 10, 2).Reshape(128, 8, 20, 20)
	}
	cases := []struct {
		name  string
		build func(ctx *tensor.Context) *tensor.Tensor
		vec   string // the 16-wide render must contain this
	}{
		{"matmul", func(ctx *tensor.Context) *tensor.Tensor { return a(ctx).Dot(b(ctx)).Relu() }, "tg_f16 vacc0"},
		{"conv2d", func(ctx *tensor.Context) *tensor.Tensor { return x(ctx).Conv2d(w(ctx), nil, tensor.ConvOpts{}) }, ""},
		{"matmul by transpose", func(ctx *tensor.Context) *tensor.Tensor { return a(ctx).Dot(a(ctx).T()) }, "tg_f16 vacc0"},
		// batch-norm statistics: a split reduce over (batch, rows, columns)
		{"channel sums", func(ctx *tensor.Context) *tensor.Tensor { return bn(ctx).Mul(bn(ctx)).Sum(false, 0, 2, 3) }, ""},
		// a nearest upsample (x[i/2]): the 20 columns upcast whole, one
		// block of straight-line code that gcc vectorizes (no loop over
		// the 10 column pairs left)
		{"upsample", func(ctx *tensor.Context) *tensor.Tensor {
			return pooled(ctx).Reshape(4, 8, 10, 1, 10, 1).Expand(4, 8, 10, 2, 10, 2).Reshape(4, 8, 20, 20).Mul(bn(ctx))
		}, "gidx3 < 1;"},
		// a padded copy (a conv's input gradient reads its output
		// gradient padded by kernel-1): the 28 columns upcast whole, the
		// padding's column tests constant in each lane
		{"padded copy", func(ctx *tensor.Context) *tensor.Tensor {
			return bn(ctx).Pad([][2]int{{0, 0}, {0, 0}, {4, 4}, {4, 4}}, 0)
		}, "gidx3 < 1;"},
		// a convolution of bytes (an MNIST batch): widened to int32 and
		// converted to float32 in vectors
		{"conv2d of bytes", func(ctx *tensor.Context) *tensor.Tensor {
			return bytes(ctx).Conv2d(w1(ctx), nil, tensor.ConvOpts{})
		}, "__builtin_convertvector(tg_wd_uc16("},
		// a BatchNorm gradient's channel sums through a max pool's
		// gradient (the MNIST cnn's): the split reduce's lanes run along
		// the image rows, the pool's values at x/2 come in window loads
		{"pool gradient sums", func(ctx *tensor.Context) *tensor.Tensor {
			x := bnBig(ctx)
			// the max of each window, so that some elements equal it
			m := up(x.Reshape(128, 8, 10, 2, 10, 2).Max(false, 3, 5))
			g := x.Eq(m).Where(up(gradBig(ctx)), ctx.Const(0, ir.Float32))
			return g.Mul(x.Add(up(poolBig(ctx)))).Sum(false, 0, 2, 3)
		}, "(tg_f16){"},
		// an elementwise exp2 and reciprocal: in vectors of the device's
		// width (tg_exp2v; its target knows the L3), over [-30, 30)
		{"sigmoid", func(ctx *tensor.Context) *tensor.Tensor {
			return a(ctx).Mul(ctx.Const(30, ir.Float32)).Sigmoid()
		}, ""},
		// a softmax over rows no vector divides: its sums split into a
		// vector loop and a scalar tail (split_tails), both keeping their
		// exponentials for the column loop (ir.Keep.Tail)
		{"softmax of 1001 columns", func(ctx *tensor.Context) *tensor.Tensor {
			return odd(ctx).Mul(ctx.Const(8, ir.Float32)).Softmax(-1)
		}, ""},
	}
	want := make([][]float64, len(cases))
	for i, c := range cases {
		// Render first: a realized graph schedules no kernels.
		if src := renderCPUWidth(t, c.build(ctx), 16); c.vec != "" && !strings.Contains(src, c.vec) {
			t.Errorf("%s: 16-wide source lacks %q:\n%s", c.name, c.vec, src)
		}
		if want[i], err = c.build(ctx).Floats(); err != nil {
			t.Fatalf("%s on GO: %v", c.name, err)
		}
	}
	for _, width := range []int{8, 16} {
		t.Run(fmt.Sprintf("width%d", width), func(t *testing.T) {
			if width == 16 && !backend.HostHasAVX512() {
				t.Skip("this CPU has no avx512f: 16-wide vectors would run through memory (and the test checks only that they are correct)")
			}
			dev, err := backend.OpenCPUWidth(width)
			if err != nil {
				t.Skipf("CPU unavailable: %v", err)
			}
			ctx := tensor.NewContext(New(dev, Options{}))
			for i, c := range cases {
				got, err := c.build(ctx).Floats()
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				for j := range got {
					if g, w := got[j], want[i][j]; math.Abs(g-w) > 1e-4+1e-4*math.Abs(w) {
						t.Errorf("%s: element %d: GO %v, CPU %v", c.name, j, w, g)
						break
					}
				}
			}
		})
	}
}

// renderCPUWidth renders x's kernels as a CPU device of the given vector
// width does.
func renderCPUWidth(t *testing.T, x *tensor.Tensor, width int) string {
	t.Helper()
	s, err := fuse.Create([]*tensor.Node{x.Node()}, fuse.Options{})
	if err != nil {
		t.Fatal(err)
	}
	target := ir.CPUTarget
	target.VecWidth = width
	var sb strings.Builder
	for _, it := range s.Items {
		if it.Kernel == nil {
			continue
		}
		k, err := ir.OptimizeFor(it.Kernel, target, nil)
		if err != nil {
			t.Fatal(err)
		}
		sb.WriteString(render.Render(render.C, k))
	}
	return sb.String()
}

// randomInput fixes random values in [-1, 1) for a shape and returns a
// function making a fresh realized tensor of them: a graph realized once
// would otherwise be read back, not recomputed, on the next device.
func randomInput(r *rand.Rand, shape ...int) func(ctx *tensor.Context) *tensor.Tensor {
	n := 1
	for _, s := range shape {
		n *= s
	}
	v := make([]float64, n)
	for i := range v {
		v[i] = r.Float64()*2 - 1
	}
	return func(ctx *tensor.Context) *tensor.Tensor {
		x, _ := ctx.FromFloats(ir.Float32, shape, v)
		return x
	}
}
