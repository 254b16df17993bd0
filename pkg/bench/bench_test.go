package bench

import (
	"reflect"
	"testing"

	"tgc/pkg/realize"
)

func engine(b *testing.B, opts realize.Options) *realize.Engine {
	b.Helper()
	e, err := realize.Open("CPU", opts)
	if err != nil {
		b.Skipf("CPU device unavailable: %v", err)
	}
	return e
}

func report(b *testing.B, r Result) {
	b.ReportMetric(r.Seconds*1e3, "ms/op(median)")
	if r.GFLOPS > 0 {
		b.ReportMetric(r.GFLOPS, "GFLOP/s")
	}
	b.ReportMetric(r.GBPS, "GB/s")
	b.ReportMetric(float64(r.Kernels), "kernels")
}

func bench(b *testing.B, name string, opts realize.Options) {
	e := engine(b, opts)
	ws, err := Find([]string{name})
	if err != nil {
		b.Fatal(err)
	}
	r, err := Run(e, ws[0], b.N, nil)
	if err != nil {
		b.Fatal(err)
	}
	report(b, r)
}

// (a*b+a).relu() on 16M floats: fused it is one pass over memory (two
// loads, one store); unfused it is three kernels and two scratch buffers.
func BenchmarkElementwiseFused16M(b *testing.B) { bench(b, "elementwise_16M", realize.Options{}) }
func BenchmarkElementwiseUnfused16M(b *testing.B) {
	bench(b, "elementwise_16M", realize.Options{NoFusion: true})
}

func BenchmarkMatmul1024(b *testing.B) { bench(b, "matmul_1024", realize.Options{}) }
func BenchmarkSum16M(b *testing.B)     { bench(b, "sum_16M", realize.Options{}) }

// TestSuiteBuilds: every workload builds a valid graph (cheap: nothing runs).
func TestSuiteBuilds(t *testing.T) {
	ctx, _, err := realize.NewContext("GO", realize.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range Suite() {
		if w.Name == "conv2d_resnet" || w.Name == "matmul_2048" || w.Build == nil {
			continue // inputs too large for the GO device in a unit test
		}
		if out := w.Build(ctx); out.Err() != nil {
			t.Errorf("%s: %v", w.Name, out.Err())
		}
	}
	// A training step runs and its loss graph is valid (small MLP, GO device).
	ws, err := Find([]string{"mnist_mlp_step"})
	if err != nil {
		t.Fatal(err)
	}
	step, err := ws[0].Setup(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := step(); err != nil {
		t.Fatal(err)
	}
	if _, err := Find([]string{"nope"}); err == nil {
		t.Error("unknown workload accepted")
	}
}

// One training step (forward, backward, Adam) of the MNIST models.
func BenchmarkMnistCNNStep(b *testing.B) { bench(b, "mnist_cnn_step", realize.Options{}) }
func BenchmarkMnistMLPStep(b *testing.B) { bench(b, "mnist_mlp_step", realize.Options{}) }

// BenchmarkSuite runs every workload of `tgc bench` (heuristic opts):
// go test -run '^$' -bench Suite -benchtime 5x ./pkg/bench
func BenchmarkSuite(b *testing.B) {
	for _, w := range Suite() {
		b.Run(w.Name, func(b *testing.B) { bench(b, w.Name, realize.Options{}) })
	}
}

// TestCPUView: rates computed from CPU time scale with the ratio of the
// clock to the CPU time; no CPU time leaves the result as it is.
func TestCPUView(t *testing.T) {
	r := Result{Seconds: 2, CPUSeconds: 1, GFLOPS: 10, GBPS: 4}
	if v := r.CPUView(); v.Seconds != 1 || v.GFLOPS != 20 || v.GBPS != 8 {
		t.Errorf("CPU view %+v", v)
	}
	r.CPUSeconds = 0
	if v := r.CPUView(); !reflect.DeepEqual(v, r) {
		t.Errorf("without CPU time %+v, want %+v", v, r)
	}
}

// TestRunCountsKernelFLOPs: a workload without a FLOP count of its own
// (sigmoid_16M) reports its kernels' operations: a sigmoid is a few
// operations an element (a scale, the exp2, an add, a reciprocal), not 0.
func TestRunCountsKernelFLOPs(t *testing.T) {
	e, err := realize.Open("CPU", realize.Options{})
	if err != nil {
		t.Skipf("CPU device unavailable: %v", err)
	}
	ws, err := Find([]string{"sigmoid_16M"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(e, ws[0], 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	perElement := r.GFLOPS * 1e9 * r.Seconds / (16 << 20)
	if perElement < 3 || perElement > 8 {
		t.Errorf("sigmoid_16M: %.2f operations an element (%.1f GFLOP/s in %g s), want 3 to 8", perElement, r.GFLOPS, r.Seconds)
	}
}
