package ir_test

import (
	"strings"
	"testing"

	"tgc/pkg/fuse"
	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// streamTarget is an AVX-512 host whose last level cache is small enough
// for the test kernels' outputs to be streamed (64 KiB: outputs of 16 KiB
// and more).
var streamTarget = ir.Target{Upcast: true, VecWidth: 16, VecRegs: 32, L3: 64 << 10, BufAlign: 4096}

func lastKernel(t *testing.T, out *tensor.Tensor) *ir.Kernel {
	t.Helper()
	s, err := fuse.Create([]*tensor.Node{out.Node()}, fuse.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s.Items[len(s.Items)-1].Kernel
}

// TestStreamStores: stream_stores streams the whole-line store runs of an
// output of at least a quarter of L3, and nothing when the output is
// smaller, the rows are not line-aligned, the device does not say its
// buffers are aligned, or the kernel reads its output back (KBLOCK's
// partial sums).
func TestStreamStores(t *testing.T) {
	noAlign := streamTarget
	noAlign.BufAlign = 0
	bigL3 := streamTarget
	bigL3.L3 = 32 << 20
	for _, c := range []struct {
		name    string
		out     *tensor.Tensor
		target  ir.Target
		opts    []ir.Opt
		streams int // streamed runs, 0: no plan
	}{
		// 64x64 output (16 KiB), 8x32-lane blocks: four 16-lane runs
		{"matmul", input(64, 64).Dot(input(64, 64)), streamTarget, []ir.Opt{{Kind: ir.OptUpcast, Axis: 1, Amt: 32}, {Kind: ir.OptUpcast, Axis: 0, Amt: 2}}, 4},
		{"small output", input(64, 64).Dot(input(64, 64)), bigL3, []ir.Opt{{Kind: ir.OptUpcast, Axis: 1, Amt: 32}}, 0},
		{"buffers not aligned", input(64, 64).Dot(input(64, 64)), noAlign, []ir.Opt{{Kind: ir.OptUpcast, Axis: 1, Amt: 32}}, 0},
		// rows of 24 floats: the 16-lane run at 24*i is not line-aligned
		{"unaligned rows", input(256, 64).Dot(input(64, 24)), streamTarget, []ir.Opt{{Kind: ir.OptUpcast, Axis: 1, Amt: 24}}, 0},
		{"kblock reads its output", input(64, 64).Dot(input(64, 64)), streamTarget,
			[]ir.Opt{{Kind: ir.OptUpcast, Axis: 1, Amt: 16}, {Kind: ir.OptKBlock, Axis: 0, Amt: 16}}, 0},
	} {
		tg := c.target
		tg.Choose = func(*ir.Kernel) []ir.Opt { return c.opts }
		got, err := ir.OptimizeFor(lastKernel(t, c.out), tg, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !strings.Contains(ir.FormatOpts(got.Opts), c.opts[0].String()) {
			t.Fatalf("%s: opts %s not applied", c.name, ir.FormatOpts(got.Opts))
		}
		n := 0
		if got.Stream != nil {
			n = len(got.Stream.Runs)
		}
		if n != c.streams {
			t.Errorf("%s: %d streamed runs, want %d:\n%s", c.name, n, c.streams, got.Dump())
		}
		if n > 0 && !strings.Contains(got.Dump(), "stream ") {
			t.Errorf("%s: the dump does not list the streamed runs:\n%s", c.name, got.Dump())
		}
	}
}

// TestStreamedElementwise: the heuristic blocks an elementwise kernel in
// cache lines where its output is streamed (16-lane vectors, a known L3,
// aligned buffers), the simd pass plans its store runs without
// accumulators and stream_stores streams them; at 8 lanes, with an output
// smaller than the L3 or a row length that is no multiple of a line, the kernel keeps its
// plain loop (gcc's vectorizer) and nothing is streamed.
func TestStreamedElementwise(t *testing.T) {
	narrow := streamTarget
	narrow.VecWidth = 8
	for _, c := range []struct {
		name    string
		out     *tensor.Tensor
		target  ir.Target
		streams int // streamed store runs (of the line-blocked loop's body)
	}{
		{"relu(a*b+a)", input(16384).Mul(input(16384)).Add(input(16384)).Relu(), streamTarget, 1},
		{"broadcast add", input(128, 128).Add(input(128)), streamTarget, 1},
		{"8 lanes", input(16384).Mul(input(16384)), narrow, 0},
		{"output under L3", input(8192).Mul(input(8192)), streamTarget, 0},
		{"rows of 24", input(1024, 24).Add(input(24)), streamTarget, 0},
	} {
		got, err := ir.OptimizeFor(lastKernel(t, c.out), c.target, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		n := 0
		if got.Stream != nil {
			n = len(got.Stream.Runs)
		}
		if n != c.streams {
			t.Errorf("%s: %d streamed runs, want %d; opts %s:\n%s", c.name, n, c.streams, ir.FormatOpts(got.Opts), got.Dump())
		}
		if n > 0 && !strings.Contains(ir.FormatOpts(got.Opts), "UPCAST") {
			t.Errorf("%s: streamed without the heuristic's UPCAST: %s", c.name, ir.FormatOpts(got.Opts))
		}
	}
}
