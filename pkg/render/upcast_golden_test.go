package render

import (
	"os"
	"path/filepath"
	"testing"

	"tgc/pkg/fuse"
	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// TestGoldenCUpcast pins the CPU rendering of a register-blocked matmul
// (the upcast pass: lanes in one shared loop) with a relu epilogue: 8-wide
// vector accumulators, vector loads of b's row, broadcasts of a, vector
// stores (c_vec.go).
func TestGoldenCUpcast(t *testing.T) {
	a, b := input(ir.Float32, 8, 64), input(ir.Float32, 64, 32)
	goldenCPU(t, a.Dot(b).Relu(), "matmul_upcast.c")
}

// TestGoldenCUpcast16 pins the same matmul rendered for an AVX-512 host
// (vector width 16, explicit so the golden file does not depend on the
// machine the test runs on): 4x32 lanes in 8 tg_f16 accumulators.
func TestGoldenCUpcast16(t *testing.T) {
	a, b := input(ir.Float32, 8, 64), input(ir.Float32, 64, 64)
	goldenCPUWidth(t, a.Dot(b).Relu(), 16, "matmul_upcast16.c")
}

// TestGoldenCStream pins the AVX-512 matmul of TestGoldenCUpcast16 on a
// host whose L3 its 16 KiB output exceeds a quarter of (stream_stores):
// each 16-lane store run is a tg_stream (vmovntps on AVX-512), and the
// kernel ends with tg_sfence.
func TestGoldenCStream(t *testing.T) {
	a, b := input(ir.Float32, 64, 64), input(ir.Float32, 64, 64)
	target := ir.CPUTarget
	target.VecWidth, target.VecRegs, target.L3, target.BufAlign = 16, 32, 64<<10, 4096
	goldenCPUTarget(t, a.Dot(b).Relu(), target, fuse.Options{}, "matmul_stream16.c")
}

// TestGoldenCVecConv pins a conv whose reduce body has a relu prologue on
// its input: 4-wide lanes, the relu as a vector select. (A costlier
// prologue, relu(x+bias), is stored by its own kernel first: the conv
// would compute it again for every output channel.)
func TestGoldenCVecConv(t *testing.T) {
	x, w := input(ir.Float32, 2, 8, 12, 12), input(ir.Float32, 16, 8, 5, 5)
	goldenCPU(t, x.Relu().Conv2d(w, nil, tensor.ConvOpts{}), "conv_vec.c")
}

// TestGoldenCSoftmaxRows pins softmax's row kernel (the CPU's schedule:
// max and sum hoisted out of the column loop) with the keep pass's plan:
// the sum's loop stores each exponential into the output row as a vector,
// the column loop scales it in place instead of computing it again.
func TestGoldenCSoftmaxRows(t *testing.T) {
	goldenCPUOpts(t, input(ir.Float32, 4, 64).Softmax(-1), ir.DefaultVecWidth, fuse.Options{HoistReduces: true}, "softmax_rows.c")
}

// TestGoldenCSoftmaxLag pins softmax's rows on an AVX-512 host whose L3
// the output exceeds and whose L1 holds a row and two scratch rows
// (ir.Stream.Lag): each row's streamed lines are written in the next
// row's exp loop, two lines an iteration, from the previous row's scratch
// row and saved values (tg_lagN); the launch's last row after the rows.
func TestGoldenCSoftmaxLag(t *testing.T) {
	target := ir.CPUTarget
	target.VecWidth, target.VecRegs, target.L1, target.L3, target.BufAlign = 16, 32, 48<<10, 4<<10, 4096
	goldenCPUTarget(t, input(ir.Float32, 16, 1024).Softmax(-1), target, fuse.Options{HoistReduces: true}, "softmax_lag16.c")
}

// TestGoldenCElementwiseStream pins an elementwise kernel on that host:
// blocked in lines (UPCAST 16, Target.streamedLines), its store run a
// vector without accumulators, streamed.
func TestGoldenCElementwiseStream(t *testing.T) {
	target := ir.CPUTarget
	target.VecWidth, target.VecRegs, target.L3, target.BufAlign = 16, 32, 4<<10, 4096
	a, b := input(ir.Float32, 1024), input(ir.Float32, 1024)
	goldenCPUTarget(t, a.Mul(b).Add(a).Relu(), target, fuse.Options{}, "elementwise_stream16.c")
}

func goldenCPU(t *testing.T, out *tensor.Tensor, file string) {
	t.Helper()
	goldenCPUWidth(t, out, ir.DefaultVecWidth, file)
}

func goldenCPUWidth(t *testing.T, out *tensor.Tensor, width int, file string) {
	t.Helper()
	goldenCPUOpts(t, out, width, fuse.Options{}, file)
}

func goldenCPUOpts(t *testing.T, out *tensor.Tensor, width int, opts fuse.Options, file string) {
	t.Helper()
	target := ir.CPUTarget
	target.VecWidth = width
	goldenCPUTarget(t, out, target, opts, file)
}

func goldenCPUTarget(t *testing.T, out *tensor.Tensor, target ir.Target, opts fuse.Options, file string) {
	t.Helper()
	s, err := fuse.Create([]*tensor.Node{out.Node()}, opts)
	if err != nil {
		t.Fatal(err)
	}
	k, err := ir.OptimizeFor(s.Items[0].Kernel, target, nil)
	if err != nil {
		t.Fatal(err)
	}
	k.Name = s.Items[0].Kernel.Name
	got := Render(C, k)
	path := filepath.Join("testdata", file)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./pkg/render -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("rendered C differs from %s:\n%s", path, got)
	}
}

// TestGoldenCMatvecHalf pins a matrix-vector product with float16 weights
// (a decode step's projection) at vector width 16: 2 vector accumulators
// of converted weights times x, each row's 32 lanes then summed pairwise
// as vectors (ir.HSum: tg_pairs16, tg_psum16) instead of a scalar add per
// lane.
func TestGoldenCMatvecHalf(t *testing.T) {
	x, w := input(ir.Float32, 1, 256), input(ir.Float16, 32, 256)
	goldenCPUWidth(t, x.Dot(w.Cast(ir.Float32).T()), 16, "matvec_half16.c")
}

// TestGoldenCScoresRows pins a decode step's attention scores (q·K[p] for
// every cached row p, each head's 64 floats a slice of the row) on a host
// whose caches the keys exceed: each 16-lane load of the keys is followed
// by the prefetch of its line in the next row (ir's row-slice prefetch),
// a float32 vector load's prefetch as the narrow loads' are written.
func TestGoldenCScoresRows(t *testing.T) {
	keys, q := input(ir.Float32, 64, 12, 64), input(ir.Float32, 1, 12, 64)
	target := ir.CPUTarget
	target.VecWidth, target.VecRegs, target.L2, target.L3 = 16, 32, 64<<10, 128<<10
	goldenCPUTarget(t, keys.Mul(q).Sum(false, 2), target, fuse.Options{}, "scores_rows16.c")
}

// TestGoldenCGroupedSums pins dot products of rows (a query block against
// keys stored position-major: both operands read along the sum) on an
// AVX-512 host: an accumulator per output of the block, their horizontal
// sums as one vector of the sums after the loop (hsumGroups).
func TestGoldenCGroupedSums(t *testing.T) {
	q, k := input(ir.Float32, 8, 64), input(ir.Float32, 32, 64)
	goldenCPUWidth(t, q.Dot(k.Permute(1, 0)), 16, "grouped_sums16.c")
}
