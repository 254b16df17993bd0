package realize

import (
	"math"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"tgc/pkg/backend"
	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

func seq(ctx *tensor.Context, shape ...int) *tensor.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	v := make([]float64, n)
	for i := range v {
		v[i] = float64(i%7) - 2.5
	}
	t, err := ctx.FromFloats(ir.Float32, shape, v)
	if err != nil {
		panic(err)
	}
	return t
}

func TestMatmulMatchesHand(t *testing.T) {
	for _, dev := range []string{"GO", "CPU"} {
		ctx, _, err := NewContext(dev, Options{})
		if err != nil {
			t.Logf("skipping %s: %v", dev, err)
			continue
		}
		a, b := seq(ctx, 4, 6), seq(ctx, 6, 3)
		c := a.Reshape(4, 6, 1).Mul(b.Reshape(1, 6, 3)).Sum(false, 1)
		got, err := c.Floats()
		if err != nil {
			t.Fatal(err)
		}
		av, _ := a.Floats()
		bv, _ := b.Floats()
		for i := 0; i < 4; i++ {
			for j := 0; j < 3; j++ {
				want := 0.0
				for k := 0; k < 6; k++ {
					want += av[i*6+k] * bv[k*3+j]
				}
				if math.Abs(got[i*3+j]-want) > 1e-4 {
					t.Errorf("%s: c[%d,%d] = %v, want %v", dev, i, j, got[i*3+j], want)
				}
			}
		}
	}
}

// TestRandSameOnEveryDevice: the same seed gives bit-identical numbers on
// GO and CPU, and different counters give different streams.
func TestRandSameOnEveryDevice(t *testing.T) {
	var streams [][]float64
	for _, dev := range []string{"GO", "CPU"} {
		ctx, _, err := NewContext(dev, Options{})
		if err != nil {
			t.Skipf("%s: %v", dev, err)
		}
		ctx.ManualSeed(42)
		v, err := ctx.Rand(5, 7).Floats()
		if err != nil {
			t.Fatal(err)
		}
		w, _ := ctx.Rand(5, 7).Floats()
		if v[0] == w[0] && v[1] == w[1] {
			t.Errorf("%s: two rand calls gave the same numbers", dev)
		}
		for _, x := range v {
			if x < 0 || x >= 1 {
				t.Errorf("%s: rand value %v outside [0, 1)", dev, x)
			}
		}
		streams = append(streams, v)
	}
	for i := range streams[0] {
		if streams[0][i] != streams[1][i] {
			t.Fatalf("element %d: GO %v, CPU %v", i, streams[0][i], streams[1][i])
		}
	}
}

// TestScheduleCache: realizing the same graph shape twice with new input
// buffers reuses the compiled schedule.
func TestScheduleCache(t *testing.T) {
	ctx, e, err := NewContext("GO", Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		x := seq(ctx, 8, 8)
		if _, err := x.Mul(x).Sum(false, 0).Floats(); err != nil {
			t.Fatal(err)
		}
	}
	if e.Stats.Scheduled != 1 || e.Stats.CacheHits != 2 {
		t.Errorf("scheduled %d times with %d cache hits, want 1 and 2", e.Stats.Scheduled, e.Stats.CacheHits)
	}
}

// TestCompileCountsPerEngine: two engines share one device (and its
// kernel cache); each counts only the compiler runs of its own kernels.
func TestCompileCountsPerEngine(t *testing.T) {
	opts := Options{CacheDir: t.TempDir()}
	ctxA, a, err := NewContext("CPU", opts)
	if err != nil {
		t.Skip(err)
	}
	ctxB, b, err := NewContext("CPU", opts)
	if err != nil {
		t.Fatal(err)
	}
	if a.Dev != b.Dev {
		t.Skip("the engines got two devices; the test wants them shared")
	}
	if _, err := seq(ctxA, 5, 3).Exp().Sum(false, 1).Floats(); err != nil {
		t.Fatal(err)
	}
	builtA := a.Stats.Builds
	if builtA == 0 {
		t.Fatalf("engine A compiled its kernels into an empty cache with %d compiler runs", builtA)
	}
	if _, err := seq(ctxB, 7, 2).Exp().Mul(seq(ctxB, 7, 2)).Sum(false, 0).Floats(); err != nil {
		t.Fatal(err)
	}
	if b.Stats.Builds == 0 {
		t.Errorf("engine B's new kernels: %d compiler runs", b.Stats.Builds)
	}
	if a.Stats.Builds != builtA || a.Stats.KernelLoads != 0 {
		t.Errorf("engine A counts %d builds and %d loads after engine B compiled, want %d and 0", a.Stats.Builds, a.Stats.KernelLoads, builtA)
	}
}

// TestKernelsDifferingInNameShareAProgram: the same kernel over more rows
// (an evaluation's batch of 10000 against a training step's 512) has the
// same C but for its name, as the outermost loop's bounds are arguments:
// the device compiles it once, and the second schedule still computes its
// own rows.
func TestKernelsDifferingInNameShareAProgram(t *testing.T) {
	ctx, e, err := NewContext("CPU", Options{CacheDir: t.TempDir()})
	if err != nil {
		t.Skip(err)
	}
	rowSums := func(rows int) {
		t.Helper()
		got, err := seq(ctx, rows, 48).Exp().Sum(false, 1).Floats()
		if err != nil {
			t.Fatal(err)
		}
		for r, g := range got {
			want := 0.0
			for c := range 48 {
				want += math.Exp(float64((r*48+c)%7) - 2.5)
			}
			if math.Abs(g-want) > 1e-5*want {
				t.Fatalf("%d rows: row %d sums to %g, want %g", rows, r, g, want)
			}
		}
	}
	rowSums(64)
	builds, loads := e.Stats.Builds, e.Stats.KernelLoads
	if builds == 0 {
		t.Fatalf("the first schedule compiled nothing into an empty cache")
	}
	rowSums(256)
	if e.Stats.Builds != builds || e.Stats.KernelLoads != loads {
		t.Errorf("the 256-row sum ran %d compiler runs and %d cache loads, want none: its kernel is the 64-row one's", e.Stats.Builds-builds, e.Stats.KernelLoads-loads)
	}
}

// TestChooserRunsAlone checks that a schedule's kernels, optimized on
// every core, see a chooser of opts (BEAM, which times its candidates on
// every core; the tracer's, which counts its misses) one kernel at a time.
func TestChooserRunsAlone(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	ctx, _, err := NewContext("GO", Options{})
	if err != nil {
		t.Fatal(err)
	}
	var outs []*tensor.Node
	for i := range 8 { // eight kernels of different structure
		outs = append(outs, seq(ctx, 16, 8+i).Exp().Sum(false, 1).Node())
	}
	var running, most, calls atomic.Int32
	tgt := ir.CPUTarget
	tgt.Choose = func(k *ir.Kernel) []ir.Opt {
		n := running.Add(1)
		defer running.Add(-1)
		calls.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(2 * time.Millisecond) // a search takes a while
		return ir.HeuristicOpts(k)
	}
	if _, _, _, err := (pipeline{target: tgt}).lower(outs); err != nil {
		t.Fatal(err)
	}
	if calls.Load() < 8 {
		t.Fatalf("the chooser saw %d kernels, want 8", calls.Load())
	}
	if most.Load() != 1 {
		t.Errorf("the chooser ran for %d kernels at once, want 1", most.Load())
	}
}

// TestBytesInto: BytesInto copies a tensor's bytes into the caller's
// buffer, the same bytes Bytes returns, for a result on the device and for
// host data; a buffer of another size is an error and is left alone.
func TestBytesInto(t *testing.T) {
	for _, dev := range []string{"GO", "CPU"} {
		ctx, _, err := NewContext(dev, Options{})
		if err != nil {
			t.Logf("skipping %s: %v", dev, err)
			continue
		}
		host := seq(ctx, 3, 5)
		computed := host.Mul(host).Add(host) // a kernel's output, on the device
		for _, x := range []*tensor.Tensor{host, computed} {
			want, err := x.Bytes()
			if err != nil {
				t.Fatal(err)
			}
			got := make([]byte, len(want))
			if err := x.BytesInto(got); err != nil {
				t.Fatalf("%s: %v", dev, err)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("%s: byte %d is %d, Bytes has %d", dev, i, got[i], want[i])
				}
			}
			vals, _ := x.Floats()
			for i, v := range vals {
				if f := float64(math.Float32frombits(uint32(got[4*i]) | uint32(got[4*i+1])<<8 | uint32(got[4*i+2])<<16 | uint32(got[4*i+3])<<24)); f != v {
					t.Fatalf("%s: element %d reads %v, want %v", dev, i, f, v)
				}
			}
			short := make([]byte, len(want)-4)
			short[0] = 7
			if err := x.BytesInto(short); err == nil || short[0] != 7 {
				t.Errorf("%s: BytesInto a buffer of %d bytes for %d: err %v, first byte %d", dev, len(short), len(want), err, short[0])
			}
		}
	}
}

// TestOneShotScratch: while SetOneShotScratch is on, the buffers a
// schedule frees when it ends (a prompt's intermediates) come from the
// device's scratch allocator; the realized output does not, and with it
// off nothing does.
func TestOneShotScratch(t *testing.T) {
	for _, on := range []bool{false, true} {
		dev, err := backend.Open("CPU")
		if err != nil {
			t.Skipf("CPU: %v", err)
		}
		sc := &allocCounter{Device: dev}
		e := New(sc, Options{})
		ctx := tensor.NewContext(e)
		e.SetOneShotScratch(on)
		a, b := seq(ctx, 64, 64), seq(ctx, 64, 64)
		// the matmul's input a*2 is broadcast: stored first, freed after
		out := a.Mul(ctx.Const(2, ir.Float32)).Exp().Dot(b).Sum(false)
		if _, err := out.Floats(); err != nil {
			t.Fatal(err)
		}
		if got := sc.scratch > 0; got != on {
			t.Errorf("one-shot %v: %d scratch buffers", on, sc.scratch)
		}
	}
}
