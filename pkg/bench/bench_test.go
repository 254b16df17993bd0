// Package bench holds the benchmarks that docs/performance.md quotes:
// fused vs unfused elementwise, and matmul GFLOP/s, on the CPU device.
package bench

import (
	"sort"
	"testing"
	"time"

	"tgc/pkg/ir"
	"tgc/pkg/realize"
	"tgc/pkg/tensor"
)

func engine(b *testing.B, opts realize.Options) *realize.Engine {
	b.Helper()
	e, err := realize.Install("CPU", opts)
	if err != nil {
		b.Skipf("CPU device unavailable: %v", err)
	}
	return e
}

func randn(b *testing.B, shape ...int) *tensor.Tensor {
	t := tensor.Rand(shape...).Realize()
	if err := t.Err(); err != nil {
		b.Fatal(err)
	}
	return t
}

// run times the realization of out (median device time per iteration) and
// reports it with work-based rates.
func run(b *testing.B, e *realize.Engine, out *tensor.Tensor, flops, bytes float64) {
	b.Helper()
	if err := out.Err(); err != nil {
		b.Fatal(err)
	}
	if _, err := e.Time(1, out.Node()); err != nil { // compile, warm up
		b.Fatal(err)
	}
	b.ResetTimer()
	times, err := e.Time(b.N, out.Node())
	if err != nil {
		b.Fatal(err)
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	med := times[len(times)/2].Seconds()
	b.ReportMetric(med*1e3, "ms/op(median)")
	if flops > 0 {
		b.ReportMetric(flops/med/1e9, "GFLOP/s")
	}
	if bytes > 0 {
		b.ReportMetric(bytes/med/1e9, "GB/s")
	}
	_ = time.Second
}

// (a*b+a).relu() on 16M floats: fused it is one pass over memory (two
// loads, one store); unfused it is three kernels and two scratch buffers.
func benchElementwise(b *testing.B, noFusion bool) {
	e := engine(b, realize.Options{NoFusion: noFusion})
	const n = 16 << 20
	x, y := randn(b, n), randn(b, n)
	out := x.Mul(y).Add(x).Maximum(tensor.Const(0, ir.Float32))
	run(b, e, out, 0, 3*4*n)
}

func BenchmarkElementwiseFused16M(b *testing.B)   { benchElementwise(b, false) }
func BenchmarkElementwiseUnfused16M(b *testing.B) { benchElementwise(b, true) }

func BenchmarkMatmul1024(b *testing.B) {
	e := engine(b, realize.Options{})
	const n = 1024
	x, y := randn(b, n, n), randn(b, n, n)
	out := x.Reshape(n, n, 1).Mul(y.Reshape(1, n, n)).Sum(false, 1)
	run(b, e, out, 2*n*n*n, 3*4*n*n)
}
