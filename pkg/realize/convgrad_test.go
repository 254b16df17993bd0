package realize

import (
	"math"
	"math/rand/v2"
	"testing"

	"tgc/pkg/autograd"
	"tgc/pkg/fuse"
	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// TestConvGradCPUMatchesGO: the gradients of two stacked convolutions
// (each a convolution itself, see tensor.convGrads) agree between the CPU
// and the GO interpreter.
func TestConvGradCPUMatchesGO(t *testing.T) {
	cpu, err := Open("CPU", Options{})
	if err != nil {
		t.Skipf("CPU unavailable: %v", err)
	}
	goe, _ := Open("GO", Options{})
	r := rand.New(rand.NewPCG(3, 3))
	vals := func(n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = r.Float64() - 0.5
		}
		return v
	}
	vx, vw1, vb1, vw2, vb2 := vals(4*1*12*12), vals(4*1*3*3), vals(4), vals(4*4*3*3), vals(4)
	run := func(e *Engine) [][]float64 {
		ctx := tensor.NewContext(e)
		x, _ := ctx.FromFloats(ir.Float32, []int{4, 1, 12, 12}, vx)
		w1, _ := ctx.FromFloats(ir.Float32, []int{4, 1, 3, 3}, vw1)
		b1, _ := ctx.FromFloats(ir.Float32, []int{4}, vb1)
		w2, _ := ctx.FromFloats(ir.Float32, []int{4, 4, 3, 3}, vw2)
		b2, _ := ctx.FromFloats(ir.Float32, []int{4}, vb2)
		y := x.Conv2d(w1, b1, tensor.ConvOpts{}).Conv2d(w2, b2, tensor.ConvOpts{}).Sum(false)
		gs, err := autograd.Gradient(y, []*tensor.Tensor{w1, b1, w2, b2})
		if err != nil {
			t.Fatal(err)
		}
		var out [][]float64
		for _, g := range gs {
			v, err := g.Floats()
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, v)
		}
		return out
	}
	want, got := run(goe), run(cpu)
	for i := range want {
		for j := range want[i] {
			if math.Abs(want[i][j]-got[i][j]) > 1e-3*(1+math.Abs(want[i][j])) {
				t.Errorf("gradient %d element %d: CPU %v, GO %v", i, j, got[i][j], want[i][j])
				break
			}
		}
	}
}

// TestReverseReduces: a reduce that reads a flipped view runs forwards
// after the pass (so the C compiler sees ascending loads) and still
// agrees with the GO interpreter.
func TestReverseReduces(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	v := make([]float64, 16*40)
	for i := range v {
		v[i] = r.Float64() - 0.5
	}
	build := func(ctx *tensor.Context) *tensor.Tensor {
		a, _ := ctx.FromFloats(ir.Float32, []int{16, 40}, v)
		return a.Flip(1).Mul(a.Flip(1)).Sum(false, 1)
	}
	k, err := ir.OptimizeFor(scheduleOf(t, build(tensor.NewContext(nil))), ir.CPUTarget, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ir.ReadsBackwards(k) {
		t.Errorf("the flipped reduce still reads backwards:\n%s", k.Dump())
	}
	var res [2][]float64
	for i, name := range []string{"GO", "CPU"} {
		ctx, _, err := NewContext(name, Options{})
		if err != nil {
			t.Skipf("%s unavailable: %v", name, err)
		}
		if res[i], err = build(ctx).Floats(); err != nil {
			t.Fatal(err)
		}
	}
	for i := range res[0] {
		if math.Abs(res[0][i]-res[1][i]) > 1e-4 {
			t.Fatalf("element %d: CPU %v, GO %v", i, res[1][i], res[0][i])
		}
	}
}

// TestConvChannelsLast: the CPU's copies with the output channels last
// (one kernel more each than the GO interpreter's schedule), and the
// gradients agree with GO's: the weight gradient's output gradient where
// each of its elements takes part in at least 64 multiply-adds
// (Cin*kh*kw), and the weight of a convolution whose output rows are too
// short for whole vectors (10 columns), a small one or a large one whose
// elements are each used at least 64 times (256x32x3x3 at batch 2: 200);
// neither for a 1-channel 5x5 conv with 8-column outputs.
func TestConvChannelsLast(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	vals := func(n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = r.Float64() - 0.5
		}
		return v
	}
	for _, c := range []struct{ cin, k, cout, extra int }{{8, 5, 32, 1}, {1, 5, 32, 0}, {8, 3, 32, 2}, {32, 3, 256, 2}} {
		vx, vw := vals(2*c.cin*12*12), vals(c.cout*c.cin*c.k*c.k)
		run := func(name string) ([][]float64, int) {
			e, err := Open(name, Options{})
			if err != nil {
				t.Skipf("%s unavailable: %v", name, err)
			}
			ctx := tensor.NewContext(e)
			x, _ := ctx.FromFloats(ir.Float32, []int{2, c.cin, 12, 12}, vx)
			w, _ := ctx.FromFloats(ir.Float32, []int{c.cout, c.cin, c.k, c.k}, vw)
			x, w = x.Realize(), w.Realize()
			y := x.Conv2d(w, nil, tensor.ConvOpts{}).Square().Sum(false)
			gs, err := autograd.Gradient(y, []*tensor.Tensor{w, x})
			if err != nil {
				t.Fatal(err)
			}
			before := e.Stats.Kernels
			if err := tensor.RealizeAll(gs...); err != nil {
				t.Fatal(err)
			}
			kernels := e.Stats.Kernels - before
			var out [][]float64
			for _, g := range gs {
				v, err := g.Floats()
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, v)
			}
			return out, kernels
		}
		want, kgo := run("GO")
		got, kcpu := run("CPU")
		if kcpu != kgo+c.extra {
			t.Errorf("cin %d %dx%d to %d: %d kernels on the CPU, %d in GO: want %d more", c.cin, c.k, c.k, c.cout, kcpu, kgo, c.extra)
		}
		for i := range want {
			for j := range want[i] {
				if math.Abs(want[i][j]-got[i][j]) > 1e-3*(1+math.Abs(want[i][j])) {
					t.Errorf("cin %d %dx%d: gradient %d element %d: CPU %v, GO %v", c.cin, c.k, c.k, i, j, got[i][j], want[i][j])
					break
				}
			}
		}
	}
}

// TestPoolCountStored: the gradient of a max pool whose result a
// convolution of 72-long sums reads (the MNIST cnn's conv3 after its
// pool) divides that convolution's input gradient by each window's count
// of maxima. On the CPU's schedule (HoistReduces) the count is a kernel of
// its own (fuse's rows.go: without its window and division rules both the
// count and the input gradient join the kernel of the pool's gradient,
// which then computes the gradient again for each of a window's 4
// outputs), and the gradients agree with the GO interpreter's. The ReLU's
// zeros make ties on purpose, so the count is not 1 everywhere.
func TestPoolCountStored(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	vals := func(n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = r.Float64() - 0.5
		}
		return v
	}
	vx, vw1, vw2 := vals(2*2*12*12), vals(8*2*3*3), vals(8*8*3*3)
	grads := func(ctx *tensor.Context) []*tensor.Tensor {
		x, _ := ctx.FromFloats(ir.Float32, []int{2, 2, 12, 12}, vx)
		w1, _ := ctx.FromFloats(ir.Float32, []int{8, 2, 3, 3}, vw1)
		w2, _ := ctx.FromFloats(ir.Float32, []int{8, 8, 3, 3}, vw2)
		h := x.Conv2d(w1, nil, tensor.ConvOpts{}).Relu().MaxPool2d(tensor.PoolOpts{})
		y := h.Conv2d(w2, nil, tensor.ConvOpts{Padding: []int{1}}).Square().Sum(false)
		gs, err := autograd.Gradient(y, []*tensor.Tensor{w1, x})
		if err != nil {
			t.Fatal(err)
		}
		return gs
	}
	var nodes []*tensor.Node
	for _, g := range grads(tensor.NewContext(nil)) {
		nodes = append(nodes, g.Node())
	}
	s, err := fuse.Create(nodes, fuse.Options{HoistReduces: true})
	if err != nil {
		t.Fatal(err)
	}
	counts := 0
	for _, it := range s.Items {
		if it.Out.DType == ir.Int32 {
			counts++
		}
	}
	if counts != 1 {
		t.Errorf("%d kernels store a window's count, want 1:\n%s", counts, s.Dump())
	}
	var res [2][][]float64
	for i, name := range []string{"GO", "CPU"} {
		ctx, _, err := NewContext(name, Options{})
		if err != nil {
			t.Skipf("%s unavailable: %v", name, err)
		}
		for _, g := range grads(ctx) {
			v, err := g.Floats()
			if err != nil {
				t.Fatal(err)
			}
			res[i] = append(res[i], v)
		}
	}
	want, got := res[0], res[1]
	for i := range want {
		for j := range want[i] {
			if math.Abs(want[i][j]-got[i][j]) > 1e-3*(1+math.Abs(want[i][j])) {
				t.Errorf("gradient %d element %d: CPU %v, GO %v", i, j, got[i][j], want[i][j])
				break
			}
		}
	}
}
