package realize

import (
	"errors"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"tgc/pkg/backend"
	"tgc/pkg/ir"
	"tgc/pkg/nn"
	"tgc/pkg/tensor"
)

func seqVals(n, k int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = float64((i*k)%11) - 5
	}
	return v
}

// TestJitReplayMatches: replays equal the un-jitted function over calls
// with different inputs, random tensors made inside draw new numbers as
// the function would, and replays do not schedule.
func TestJitReplayMatches(t *testing.T) {
	for _, dev := range []string{"GO", "CPU"} {
		ctx, e, err := NewContext(dev, Options{})
		if err != nil {
			t.Logf("skipping %s: %v", dev, err)
			continue
		}
		outside := ctx.Rand(3, 4).Realize() // read, not redrawn
		f := func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
			x, y := in[0], in[1]
			h := x.Dot(y).Relu().Add(outside.Sum(false))
			noise := ctx.Rand(3, 2)
			return []*tensor.Tensor{h.Add(noise), h.Sum(false)}, nil
		}
		run := func(call func([]*tensor.Tensor) ([]*tensor.Tensor, error)) [][]float64 {
			ctx.ManualSeed(5)
			var res [][]float64
			for i := range 5 {
				x, y := matPair(t, ctx, i)
				out, err := call([]*tensor.Tensor{x, y})
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range out {
					res = append(res, vals(t, o))
				}
			}
			_, ctr := ctx.RandState()
			res = append(res, []float64{float64(ctr)})
			return res
		}
		want := run(f)
		j := NewJit(ctx, "f", f)
		var scheduled int
		got := run(func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
			out, err := j.Call(in...)
			if j.Captured() && scheduled == 0 {
				scheduled = e.Stats.Scheduled
			}
			return out, err
		})
		for i := range want {
			near(t, dev+" output", got[i], want[i], 1e-6)
		}
		if !j.Captured() || e.Stats.JitReplays < 3 {
			t.Errorf("%s: captured %v, %d replays, want 3", dev, j.Captured(), e.Stats.JitReplays)
		}
		if e.Stats.Scheduled != scheduled {
			t.Errorf("%s: replays scheduled %d graphs", dev, e.Stats.Scheduled-scheduled)
		}
	}
}

// TestJitRefuses: a changed input shape or dtype, and a value read inside
// the function, are errors.
func TestJitRefuses(t *testing.T) {
	ctx, _, err := NewContext("GO", Options{})
	if err != nil {
		t.Fatal(err)
	}
	j := NewJit(ctx, "double", func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		return []*tensor.Tensor{in[0].Mul(ctx.Const(2, ir.Float32))}, nil
	})
	for range 3 {
		if _, err := j.Call(mkVec(t, ctx, []int{2, 2}, 1, 2, 3, 4)); err != nil {
			t.Fatal(err)
		}
	}
	_, err = j.Call(mkVec(t, ctx, []int{4}, 1, 2, 3, 4))
	if err == nil || !strings.Contains(err.Error(), "(4,)") || !strings.Contains(err.Error(), "(2, 2)") {
		t.Errorf("changed shape: err = %v", err)
	}
	xi, _ := ctx.FromFloats(ir.Int32, []int{2, 2}, []float64{1, 2, 3, 4})
	if _, err := j.Call(xi); err == nil || !strings.Contains(err.Error(), "int32") {
		t.Errorf("changed dtype: err = %v", err)
	}
	out, err := j.Call(mkVec(t, ctx, []int{2, 2}, 5, 6, 7, 8))
	if err != nil {
		t.Fatal(err)
	}
	near(t, "after refusals", vals(t, out[0]), []float64{10, 12, 14, 16}, 0)

	reads := NewJit(ctx, "reads", func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		if _, err := in[0].Sum(false).Item(); err != nil {
			return nil, err
		}
		return []*tensor.Tensor{in[0]}, nil
	})
	if _, err := reads.Call(mkVec(t, ctx, []int{2}, 1, 2)); err == nil || !strings.Contains(err.Error(), "TinyJit function reads") {
		t.Errorf("item inside: err = %v", err)
	}
	// the engine reads values again after the refused call
	if _, err := mkVec(t, ctx, []int{1}, 3).Item(); err != nil {
		t.Errorf("item after a refused call: %v", err)
	}
}

// TestJitTrainStep: a jitted training step (MLP + Adam) gives the losses
// of the un-jitted loop, and its replays schedule nothing.
func TestJitTrainStep(t *testing.T) {
	ctx, e, err := NewContext("GO", Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx.SetTraining(true)
	losses := func(jit bool) []float64 {
		ctx.ManualSeed(21)
		m := newTinyMLP(ctx, 6, 12, 3)
		opt, err := nn.NewAdam(nn.Parameters(m), 0.02, 0.9, 0.999, 1e-8)
		if err != nil {
			t.Fatal(err)
		}
		step := trainStep(m, opt)
		if jit {
			step = NewJit(ctx, "train_step", step).Call0
		}
		var out []float64
		var scheduled int
		for i := range 7 {
			x, y := mkBatch(t, ctx, i, 16, 6, 3)
			l, err := step([]*tensor.Tensor{x, y})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, vals(t, l[0])...)
			if i == 2 {
				scheduled = e.Stats.Scheduled
			}
		}
		if jit && e.Stats.Scheduled != scheduled {
			t.Errorf("replayed steps scheduled %d graphs", e.Stats.Scheduled-scheduled)
		}
		return out
	}
	want := losses(false)
	replays := e.Stats.JitReplays
	got := losses(true)
	near(t, "losses", got, want, 1e-5)
	if e.Stats.JitReplays-replays != 5 {
		t.Errorf("%d replays, want 5", e.Stats.JitReplays-replays)
	}
	if !(want[len(want)-1] < want[0]) {
		t.Errorf("loss did not decrease: %v", want)
	}
}

// TestJitValuesAfterReplay: a replay writes the parameters in place, so a
// value computed from them between calls (an evaluation, W.sum()) must be
// computed again, not the interned result of an earlier call.
func TestJitValuesAfterReplay(t *testing.T) {
	ctx, _, err := NewContext("GO", Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx.SetTraining(true)
	sums := func(jit bool) []float64 {
		ctx.ManualSeed(21)
		m := newTinyMLP(ctx, 6, 12, 3)
		opt, err := nn.NewAdam(nn.Parameters(m), 0.02, 0.9, 0.999, 1e-8)
		if err != nil {
			t.Fatal(err)
		}
		step := trainStep(m, opt)
		if jit {
			step = NewJit(ctx, "train_step", step).Call0
		}
		var out []float64
		for i := range 5 {
			x, y := mkBatch(t, ctx, i, 16, 6, 3)
			if _, err := step([]*tensor.Tensor{x, y}); err != nil {
				t.Fatal(err)
			}
			out = append(out, vals(t, m.L2.Weight.Sum(false))...) // the same graph after every step
		}
		return out
	}
	want := sums(false)
	near(t, "W.sum() after each step", sums(true), want, 1e-5)
	if want[4] == want[1] {
		t.Fatalf("the weights did not change: %v", want)
	}
}

// allocCounter counts a device's allocations, and apart from them those
// the engine asks for as one-shot scratch (backend.ScratchAllocator).
type allocCounter struct {
	backend.Device
	allocs, scratch int
}

func (d *allocCounter) Alloc(dt ir.DType, n int) (backend.Buffer, error) {
	d.allocs++
	return d.Device.Alloc(dt, n)
}

func (d *allocCounter) AllocScratch(dt ir.DType, n int) (backend.Buffer, error) {
	d.scratch++
	return d.Device.Alloc(dt, n)
}

// TestJitReplayKeepsIntermediates: a replay allocates its outputs afresh
// (a caller may keep them: earlier calls' outputs keep their values) and
// reuses the buffers that live only inside a call. Each call follows the
// plain function on the same inputs, whose realized values interning must
// not hand to the capture (it then recorded no kernels).
func TestJitReplayKeepsIntermediates(t *testing.T) {
	forCountedDevices(t, func(name string, d *allocCounter, ctx *tensor.Context) {
		// three kernels: two intermediates that stay inside, one output
		f := func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
			h := in[0].Dot(in[1]).Relu().Contiguous()
			g := h.Sum(true).Sigmoid().Contiguous()
			return []*tensor.Tensor{h.Mul(g).Sum(false)}, nil
		}
		replaysAllocOutput(t, name, d, f, func(i int) (x, y *tensor.Tensor) { return matPair(t, ctx, i) }, 1e-5)
	})
}

// forCountedDevices runs f on GO and CPU (those available), each device's
// allocations counted.
func forCountedDevices(t *testing.T, f func(name string, d *allocCounter, ctx *tensor.Context)) {
	t.Helper()
	for _, name := range []string{"GO", "CPU"} {
		dev, err := backend.Open(name)
		if err != nil {
			t.Logf("skipping %s: %v", name, err)
			continue
		}
		d := &allocCounter{Device: dev}
		f(name, d, tensor.NewContext(New(d, Options{})))
	}
}

// replaysAllocOutput calls f captured by TinyJit on six pairs of inputs:
// each call's value is f's run plainly, and the replays after the first
// allocate their output alone (the intermediates are the plan's). It
// returns the Jit.
func replaysAllocOutput(t *testing.T, name string, d *allocCounter, f JitFunc, inputs func(i int) (x, y *tensor.Tensor), tol float64) *Jit {
	t.Helper()
	x0, _ := inputs(0)
	j := NewJit(x0.Context(), "f", f)
	var outs []*tensor.Tensor
	var want [][]float64
	for i := range 6 {
		x, y := inputs(i)
		ref, err := f([]*tensor.Tensor{x, y})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, vals(t, ref[0]))
		before := d.allocs
		out, err := j.Call(x, y)
		if err != nil {
			t.Fatal(err)
		}
		if i >= 3 { // replays after the first
			if n := d.allocs - before; n != 1 {
				t.Errorf("%s: replay %d allocated %d buffers, want 1 (its output)", name, i, n)
			}
		}
		outs = append(outs, out[0])
	}
	for i, o := range outs { // read after every call has run
		near(t, name+" output", vals(t, o), want[i], tol)
	}
	return j
}

// TestJitReleaseOutput: a replay's output, which the replay allocated for
// it alone, can be given back (Tensor.Release): the device's live bytes
// fall by its size, the next replay's output is that memory again, and
// the released tensor is an error to read. The capture's output, and an
// output that is the function's input or is returned twice, are not the
// replay's alone: Release refuses them.
func TestJitReleaseOutput(t *testing.T) {
	dev, err := backend.Open("CPU")
	if err != nil {
		t.Skipf("CPU: %v", err)
	}
	mem, ok := dev.(backend.MemoryCounter)
	if !ok {
		t.Fatal("the CPU device keeps no account of its buffers")
	}
	ctx := tensor.NewContext(New(dev, Options{}))
	f := func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		return []*tensor.Tensor{in[0].Dot(in[1]).Relu()}, nil
	}
	j := NewJit(ctx, "f", f)
	// The counts below are exact: no collection runs (a finalizer
	// freeing an earlier graph's buffers during a call would move them).
	stopGC(t)
	for i := range 6 {
		x, y := matPair(t, ctx, i)
		ref, err := f([]*tensor.Tensor{x, y})
		if err != nil {
			t.Fatal(err)
		}
		want := vals(t, ref[0])
		if err := errors.Join(x.Upload(), y.Upload()); err != nil {
			t.Fatal(err)
		}
		start := mem.Memory().Live
		out, err := j.Call(x, y)
		if err != nil {
			t.Fatal(err)
		}
		near(t, "output", vals(t, out[0]), want, 1e-5)
		before := mem.Memory().Live
		released := out[0].Release()
		if i < 2 { // the function's calls: their outputs are ordinary tensors
			if released {
				t.Errorf("call %d: Release gave back a captured call's output", i)
			}
			continue
		}
		if !released {
			t.Fatalf("replay %d: Release refused the replay's output", i)
		}
		if got := before - mem.Memory().Live; got != 3*2*4 {
			t.Errorf("replay %d: Release gave back %d bytes, want 24", i, got)
		}
		if got := mem.Memory().Live; got != start {
			t.Errorf("replay %d: %d bytes live after the release, %d before the call", i, got, start)
		}
		if _, err := out[0].Floats(); err == nil || !strings.Contains(err.Error(), "Release") {
			t.Errorf("replay %d: reading a released output: %v, want the release named", i, err)
		}
		if out[0].Release() {
			t.Errorf("replay %d: released twice", i)
		}
	}
	shared := NewJit(ctx, "g", func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		h := in[0].Add(in[0]).Contiguous()
		return []*tensor.Tensor{h, h, in[0]}, nil
	})
	for i := range 4 {
		x := mkVec(t, ctx, []int{4}, seqVals(4, i+1)...)
		out, err := shared.Call(x)
		if err != nil {
			t.Fatal(err)
		}
		for k, o := range out {
			if o.Release() {
				t.Errorf("call %d: output %d (returned twice, or the input) was released", i, k)
			}
		}
		near(t, "input after the calls", vals(t, x), seqVals(4, i+1), 0)
	}
}

// stopGC turns the garbage collector off for the rest of the test, after
// a collection whose finalizers have run: device buffers freed by
// finalizers then change no count the test reads.
func stopGC(t *testing.T) {
	old := debug.SetGCPercent(-1)
	t.Cleanup(func() { debug.SetGCPercent(old) })
	for range 2 { // a finalizer may free what frees more in the next cycle
		done := make(chan struct{})
		func() { runtime.SetFinalizer(new([16]byte), func(*[16]byte) { close(done) }) }()
		runtime.GC()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("the finalizers did not run")
		}
	}
}

// matPair is call i's inputs of the 3x4 by 4x2 product the jit tests run.
func matPair(t *testing.T, ctx *tensor.Context, i int) (x, y *tensor.Tensor) {
	t.Helper()
	return mkVec(t, ctx, []int{3, 4}, seqVals(12, i+1)...), mkVec(t, ctx, []int{4, 2}, seqVals(8, i+3)...)
}

// TestJitSharesSlots: a captured function whose intermediates live one
// after another (a chain of kernels, each reading the one before) holds
// fewer buffers than it has intermediates: a later one takes the memory
// of one whose last reader has run, never one its own kernel reads. The
// replays equal the function run plainly, and after the first replay they
// allocate their output alone.
func TestJitSharesSlots(t *testing.T) {
	forCountedDevices(t, func(name string, d *allocCounter, ctx *tensor.Context) {
		// five intermediates of one shape in a chain, then a reduce
		f := func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
			h := in[0].Mul(in[1]).Contiguous()
			for k := range 4 {
				h = h.Mul(ctx.Const(1.5, ir.Float32)).Add(in[0].Mul(ctx.Const(float64(k), ir.Float32))).Relu().Contiguous()
			}
			return []*tensor.Tensor{h.Sum(false)}, nil
		}
		j := replaysAllocOutput(t, name, d, f, func(i int) (x, y *tensor.Tensor) {
			x, _ = ctx.FromFloats(ir.Float32, []int{8, 16}, seqVals(128, 3+i))
			y, _ = ctx.FromFloats(ir.Float32, []int{8, 16}, seqVals(128, 5+2*i))
			return x, y
		}, 1e-4)
		p := j.plan
		allocs := 0
		for _, st := range p.steps {
			if st.alloc < 0 {
				continue
			}
			allocs++
			for k, r := range st.args[1:] {
				if r.kind == refSlot && r.idx == st.alloc {
					t.Errorf("%s: kernel %s writes the buffer its argument %d reads", name, st.item.name, k+1)
				}
			}
		}
		if p.nslots >= allocs-1 || p.nslots > 3 {
			t.Errorf("%s: %d buffers for %d slots, want 2 for the chain and 1 for the output", name, p.nslots, allocs)
		}
	})
}
