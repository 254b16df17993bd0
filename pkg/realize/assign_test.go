package realize

import (
	"math"
	"strings"
	"testing"

	"tgc/pkg/autograd"
	"tgc/pkg/ir"
	"tgc/pkg/nn"
	"tgc/pkg/tensor"
)

func vals(t *testing.T, x *tensor.Tensor) []float64 {
	t.Helper()
	v, err := x.Floats()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func mkVec(t *testing.T, ctx *tensor.Context, shape []int, vals ...float64) *tensor.Tensor {
	t.Helper()
	x, err := ctx.FromFloats(ir.Float32, shape, vals)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func near(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.IsNaN(got[i]) || math.Abs(got[i]-want[i]) > tol*(1+math.Abs(want[i])) {
			t.Fatalf("%s: got %v, want %v", what, got, want)
		}
	}
}

func devBuf(t *testing.T, e *Engine, x *tensor.Tensor) any {
	t.Helper()
	b, err := e.DeviceBuffer(x.Node())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestAssignInPlace: assign writes into the target's buffer, reads of the
// old value in the same schedule happen first, and shifted self-reads
// (flip), swaps and reads of both values stay correct.
func TestAssignInPlace(t *testing.T) {
	for _, dev := range []string{"GO", "CPU"} {
		ctx, e, err := NewContext(dev, Options{})
		if err != nil {
			t.Logf("skipping %s: %v", dev, err)
			continue
		}
		x := mkVec(t, ctx, []int{4}, 1, 2, 3, 4).Realize()
		b0 := devBuf(t, e, x)
		x.Assign(x.Mul(ctx.Const(2, ir.Float32)))
		near(t, dev+" x*2", vals(t, x), []float64{2, 4, 6, 8}, 0)
		if devBuf(t, e, x) != b0 {
			t.Errorf("%s: assign moved x to a new buffer", dev)
		}

		// a kernel of the same schedule reads the old value
		y := x.Add(ctx.Const(100, ir.Float32))
		x.Assign(x.Neg())
		if err := tensor.RealizeAll(x, y); err != nil {
			t.Fatal(err)
		}
		near(t, dev+" old read", vals(t, y), []float64{102, 104, 106, 108}, 0)
		near(t, dev+" neg", vals(t, x), []float64{-2, -4, -6, -8}, 0)

		// the new value reads the destination at another index
		x.Assign(x.Flip(0))
		near(t, dev+" flip", vals(t, x), []float64{-8, -6, -4, -2}, 0)
		x.Assign(x.Sub(x.Sum(false).Reshape(1).Expand(4)))
		near(t, dev+" minus sum", vals(t, x), []float64{12, 14, 16, 18}, 0)
		if devBuf(t, e, x) != b0 {
			t.Errorf("%s: shifted assign moved x to a new buffer", dev)
		}

		// a swap in one schedule
		a, b := mkVec(t, ctx, []int{2}, 1, 2).Realize(), mkVec(t, ctx, []int{2}, 3, 4).Realize()
		oa, ob := a.Detach(), b.Detach()
		a.Assign(ob.Add(ctx.Const(0, ir.Float32)))
		b.Assign(oa.Mul(ctx.Const(1, ir.Float32)))
		if err := tensor.RealizeAll(a, b); err != nil {
			t.Fatal(err)
		}
		near(t, dev+" swap a", vals(t, a), []float64{3, 4}, 0)
		near(t, dev+" swap b", vals(t, b), []float64{1, 2}, 0)

		// a kernel needing both the old and the new value
		z := mkVec(t, ctx, []int{3}, 1, 2, 3).Realize()
		old := z.Detach()
		z.Assign(z.Add(ctx.Const(10, ir.Float32)))
		both := z.Mul(old)
		if err := tensor.RealizeAll(both, z); err != nil {
			t.Fatal(err)
		}
		near(t, dev+" old*new", vals(t, both), []float64{11, 24, 39}, 0)

		// assigning twice before a realize
		w := mkVec(t, ctx, []int{2}, 1, 1).Realize()
		w.Assign(w.Add(ctx.Const(1, ir.Float32)))
		w.Assign(w.Mul(ctx.Const(3, ir.Float32)))
		near(t, dev+" twice", vals(t, w), []float64{6, 6}, 0)

		// a lazy tensor on the old value realized after the write is an
		// error, never the new value
		s := mkVec(t, ctx, []int{2}, 5, 6).Realize()
		stale := s.Add(ctx.Const(1, ir.Float32))
		s.Assign(s.Mul(ctx.Const(0, ir.Float32))).Realize()
		if _, err := stale.Floats(); err == nil || !strings.Contains(err.Error(), "overwritten") {
			t.Errorf("%s: reading a stale tensor: err = %v, want an 'overwritten' error", dev, err)
		}
	}
}

type tinyMLP struct{ L1, L2 *nn.Linear }

func newTinyMLP(ctx *tensor.Context, in, hidden, out int) *tinyMLP {
	return &tinyMLP{L1: nn.NewLinear(ctx, in, hidden, true), L2: nn.NewLinear(ctx, hidden, out, true)}
}

func (m *tinyMLP) forward(x *tensor.Tensor) *tensor.Tensor {
	return m.L2.Forward(m.L1.Forward(x).Relu())
}

// batch is a deterministic batch of inputs and labels for step i.
func mkBatch(t testing.TB, ctx *tensor.Context, i, n, in, classes int) (*tensor.Tensor, *tensor.Tensor) {
	xs := make([]float64, n*in)
	ys := make([]float64, n)
	s := uint64(i*7919 + 1)
	for k := range xs {
		s = s*6364136223846793005 + 1442695040888963407
		xs[k] = 2*float64(s>>11)/float64(1<<53) - 1
	}
	for k := range ys {
		ys[k] = float64((k + i) % classes)
	}
	x, err := ctx.FromFloats(ir.Float32, []int{n, in}, xs)
	if err != nil {
		t.Fatal(err)
	}
	y, err := ctx.FromFloats(ir.Int32, []int{n}, ys)
	if err != nil {
		t.Fatal(err)
	}
	return x, y
}

// trainStep is one training step: forward, backward, Adam; returns the loss.
func trainStep(m *tinyMLP, opt nn.Optimizer) JitFunc {
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		opt.ZeroGrad()
		loss := m.forward(in[0]).SparseCategoricalCrossentropy(in[1], -1, 0, "mean")
		if err := autograd.Backward(loss); err != nil {
			return nil, err
		}
		if err := opt.Step(loss); err != nil {
			return nil, err
		}
		return []*tensor.Tensor{loss}, nil
	}
}

// TestOptimizerKeepsBuffers: parameters and Adam's state keep their memory
// across steps, the step hits the schedule and compiled-kernel caches, and
// the losses equal a step without in-place updates (fresh tensors).
func TestOptimizerKeepsBuffers(t *testing.T) {
	ctx, e, err := NewContext("GO", Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx.SetTraining(true)
	ctx.ManualSeed(11)
	m := newTinyMLP(ctx, 4, 8, 3)
	opt, err := nn.NewAdam(nn.Parameters(m), 0.01, 0.9, 0.999, 1e-8)
	if err != nil {
		t.Fatal(err)
	}
	// reference: the same Adam with new tensors each step, on copies
	ctx.ManualSeed(11)
	ref := newTinyMLP(ctx, 4, 8, 3)
	params := nn.Parameters(ref)
	ms := make([][]float64, len(params))
	vs := make([][]float64, len(params))
	step := trainStep(m, opt)
	var bufs []any
	for _, p := range append(append(append([]*tensor.Tensor{}, opt.Params()...), opt.M...), opt.V...) {
		bufs = append(bufs, devBuf(t, e, p.Realize()))
	}
	for i := range 6 {
		x, y := mkBatch(t, ctx, i, 16, 4, 3)
		out, err := step([]*tensor.Tensor{x, y})
		if err != nil {
			t.Fatal(err)
		}
		got := vals(t, out[0])

		// reference step computed in Go from the gradients of fresh tensors
		for _, p := range params {
			p.Grad = nil
		}
		loss := ref.forward(x).SparseCategoricalCrossentropy(y, -1, 0, "mean")
		want := vals(t, loss)
		grads, err := autograd.Gradient(loss, params)
		if err != nil {
			t.Fatal(err)
		}
		b1t, b2t := math.Pow(0.9, float64(i+1)), math.Pow(0.999, float64(i+1))
		for k, p := range params {
			pv, gv := vals(t, p), vals(t, grads[k])
			if ms[k] == nil {
				ms[k], vs[k] = make([]float64, len(pv)), make([]float64, len(pv))
			}
			for j := range pv {
				ms[k][j] = 0.9*ms[k][j] + 0.1*gv[j]
				vs[k][j] = 0.999*vs[k][j] + 0.001*gv[j]*gv[j]
				pv[j] -= 0.01 * (ms[k][j] / (1 - b1t)) / (math.Sqrt(vs[k][j]/(1-b2t)) + 1e-8)
			}
			params[k] = mkVec(t, ctx, p.Shape(), pv...).SetRequiresGrad(true)
			for _, f := range []**tensor.Tensor{&ref.L1.Weight, &ref.L1.Bias, &ref.L2.Weight, &ref.L2.Bias} {
				if *f == p {
					*f = params[k]
				}
			}
		}
		near(t, "loss", got, want, 1e-4)
	}
	for k, p := range append(append(append([]*tensor.Tensor{}, opt.Params()...), opt.M...), opt.V...) {
		if devBuf(t, e, p) != bufs[k] {
			t.Errorf("tensor %d of the optimizer moved to a new buffer", k)
		}
	}
}

// TestTrainStepHitsCaches: without TinyJit, a repeated training step is
// not re-scheduled, re-lowered or re-compiled after the warm-up.
func TestTrainStepHitsCaches(t *testing.T) {
	ctx, e, err := NewContext("CPU", Options{})
	if err != nil {
		t.Skip(err)
	}
	ctx.SetTraining(true)
	ctx.ManualSeed(3)
	m := newTinyMLP(ctx, 8, 16, 4)
	opt, err := nn.NewAdam(nn.Parameters(m), 0.01, 0.9, 0.999, 1e-8)
	if err != nil {
		t.Fatal(err)
	}
	step := trainStep(m, opt)
	var scheduled, compiled, hits int
	for i := range 8 {
		x, y := mkBatch(t, ctx, i, 32, 8, 4)
		if _, err := step([]*tensor.Tensor{x, y}); err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			scheduled, compiled, hits = e.Stats.Scheduled, e.Stats.Compiled, e.Stats.CacheHits
		}
	}
	if e.Stats.Scheduled != scheduled || e.Stats.Compiled != compiled {
		t.Errorf("steps 3..8 scheduled %d graphs and compiled %d kernels, want 0 and 0", e.Stats.Scheduled-scheduled, e.Stats.Compiled-compiled)
	}
	if e.Stats.CacheHits-hits < 6 {
		t.Errorf("steps 3..8 hit the schedule cache %d times, want at least 6", e.Stats.CacheHits-hits)
	}
}
