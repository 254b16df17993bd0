package ir_test

import (
	"strings"
	"testing"

	"tgc/pkg/fuse"
	"tgc/pkg/ir"
	"tgc/pkg/render"
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
		{"sigmoid (exp2, reciprocal)", input(16384).Sigmoid(), streamTarget, 1},
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

// TestStreamLag: a softmax row kernel whose column loop is streamed in
// lines runs it in the next row's kept loop (Stream.Lag: the row's lines
// over the kept loop's iterations) where the core's L1 holds a row and
// its two scratch rows, and not where it does not or the L1 is unknown;
// the verifier refuses a lag that does not write the row's lines, and a
// lag without streamed lines.
func TestStreamLag(t *testing.T) {
	lagTarget := streamTarget
	lagTarget.L1 = 48 << 10
	smallL1 := lagTarget
	smallL1.L1 = 32 << 10
	noL1 := lagTarget
	noL1.L1 = 0
	rows := func(cols int) *ir.Kernel {
		s, err := fuse.Create([]*tensor.Node{input(16, cols).Softmax(-1).Node()}, fuse.Options{HoistReduces: true})
		if err != nil {
			t.Fatal(err)
		}
		return s.Items[len(s.Items)-1].Kernel
	}
	for _, c := range []struct {
		name   string
		cols   int
		target ir.Target
		lagged bool
	}{
		{"row of 4 KiB", 1024, lagTarget, true},
		{"row of 16 KiB, L1 48 KiB", 4096, lagTarget, true},
		{"row of 16 KiB, L1 32 KiB", 4096, smallL1, false},
		{"L1 unknown", 1024, noL1, false},
	} {
		got, err := ir.OptimizeFor(rows(c.cols), c.target, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got.Stream == nil || !got.Stream.Cols {
			t.Fatalf("%s: the column loop is not streamed in lines:\n%s", c.name, got.Dump())
		}
		lag := got.Stream.Lag
		if (lag > 0) != c.lagged {
			t.Fatalf("%s: lag %d, want lagged %v:\n%s", c.name, lag, c.lagged, got.Dump())
		}
		if !c.lagged {
			continue
		}
		trips := int64(1)
		for _, a := range got.Keep.Leader.Arg.(*ir.ReduceArg).Axes {
			trips *= a.Size
		}
		if lag*trips != int64(c.cols/16) {
			t.Errorf("%s: %d lines an iteration of %d iterations for %d lines", c.name, lag, trips, c.cols/16)
		}
		if !strings.Contains(got.Dump(), "lag ") {
			t.Errorf("%s: the dump does not show the lag:\n%s", c.name, got.Dump())
		}
		bad := *got
		bad.Stream = &ir.Stream{Cols: true, Lag: lag + 1, Loop: got.Stream.Loop}
		if err := bad.Verify(); err == nil {
			t.Errorf("%s: Verify accepted %d lines an iteration", c.name, lag+1)
		}
		bad.Stream = &ir.Stream{Lag: lag}
		if err := bad.Verify(); err == nil {
			t.Errorf("%s: Verify accepted a lag without streamed lines", c.name)
		}
	}
}

// TestRowLag: a row kernel without a keep plan (layernorm, log_softmax,
// RMSNorm: the column loop recomputes its values from the row) writes its
// column loop in streamed lines inside the next row's first sum over the
// row (Stream.Loop), Lag lines an iteration, where the L1 holds three
// rows and the output is one to stream; that sum's loads prefetch the
// next row, or those of a sum of exponentials (log_softmax's), and no
// other sum's loads prefetch anything (the rows are in L1). Not with an L1 of less than three rows, an output in cache, or
// rows that are not whole lines. Verify refuses the lag in another loop
// or of another count.
func TestRowLag(t *testing.T) {
	tg := streamTarget
	tg.L1, tg.L2 = 48<<10, 16<<10 // the rows (64 KiB) from memory
	smallL1 := tg
	smallL1.L1 = 8 << 10
	rms := func(x *tensor.Tensor) *tensor.Tensor {
		return x.Mul(x).Mean(true, -1).Add(tc.Const(1e-6, ir.Float32)).Rsqrt().Mul(x)
	}
	for _, c := range []struct {
		name   string
		x      *tensor.Tensor
		tg     ir.Target
		lagged bool
	}{
		{"layernorm", input(16, 1024).Layernorm(1e-5, -1), tg, true},
		{"log_softmax", input(16, 1024).LogSoftmax(-1), tg, true},
		{"rmsnorm", rms(input(16, 1024)), tg, true},
		{"layernorm, L1 of 8 KiB", input(16, 1024).Layernorm(1e-5, -1), smallL1, false},
		{"layernorm in cache", input(2, 1024).Layernorm(1e-5, -1), tg, false},
		{"layernorm of rows of 1000", input(16, 1000).Layernorm(1e-5, -1), tg, false},
	} {
		k := rowKernel(t, c.x, c.tg)
		if k.Keep != nil {
			t.Fatalf("%s: a keep plan:\n%s", c.name, k.Dump())
		}
		lagged := k.Stream != nil && k.Stream.Cols && k.Stream.Lag > 0
		if lagged != c.lagged {
			t.Fatalf("%s: lagged %v, want %v:\n%s", c.name, lagged, c.lagged, k.Dump())
		}
		if !lagged {
			continue
		}
		// the first sum: the one that reads no other
		var first *ir.Axis
		ir.Walk(k.Stores, func(e *ir.Expr) {
			if e.Op == ir.OpReduce && first == nil {
				first = e.Arg.(*ir.ReduceArg).Axes[0]
			}
		})
		if k.Stream.Loop != first || k.Stream.Lag*first.Size != int64(k.Global[1].Size/16) {
			t.Errorf("%s: %d lines an iteration of %v, want the row's lines over the first sum's loop %s:\n%s", c.name, k.Stream.Lag, k.Stream.Loop, first.Name(), k.Dump())
		}
		if k.Prefetch == nil || len(k.Prefetch.Loads) == 0 {
			t.Fatalf("%s: no prefetch:\n%s", c.name, k.Dump())
		}
		// the next row is prefetched along the first sum, or along the
		// one that computes exponentials (log_softmax's)
		pf := first
		ir.Walk(k.Stores, func(e *ir.Expr) {
			if e.Op != ir.OpReduce {
				return
			}
			ir.WalkPre(e.Src, func(x *ir.Expr) bool {
				if x.Op == ir.OpExp2 {
					pf = e.Arg.(*ir.ReduceArg).Axes[0]
				}
				return x.Op != ir.OpReduce
			})
		})
		if (pf != first) != (c.name == "log_softmax") {
			t.Errorf("%s: exponentials in %s, the first sum %s", c.name, pf.Name(), first.Name())
		}
		for ld, at := range k.Prefetch.Loads {
			if at.Loop != pf || at.Next != k.Global[0] || at.Dist != k.Global[1].Size || at.Ahead != 1 {
				t.Errorf("%s: prefetch of %v along %s, %d ahead: want the next row along %s", c.name, ld, at.Loop.Name(), at.Dist, pf.Name())
			}
		}
		src := render.Render(render.C, k)
		if !strings.Contains(src, "tg_stream_line(tg_dst, tg_line);") || !strings.Contains(src, "if (gidx0 > start) {") || strings.Contains(src, "tg_keep") {
			t.Errorf("%s: the C source does not stream the previous row's lines in the row's loop:\n%s", c.name, src)
		}
		for name, damage := range map[string]func(*ir.Stream){
			"one line more an iteration": func(s *ir.Stream) { s.Lag++ },
			"in another loop":            func(s *ir.Stream) { s.Loop = k.Global[0] },
			"not in lines":               func(s *ir.Stream) { s.Cols = false },
		} {
			bad, st := *k, *k.Stream
			damage(&st)
			bad.Stream = &st
			if err := bad.Verify(); err == nil || !strings.Contains(err.Error(), "stream") {
				t.Errorf("%s: a lag %s: Verify says %v", c.name, name, err)
			}
		}
	}
}

// TestExp2Lanes: an elementwise kernel that takes an exp2 is blocked in
// vectors of the target's width (16 lanes with AVX-512, 8 on an AVX2
// host; not 8 on an AVX-512 host, where gcc's loop takes 16) with its
// output in cache (nothing streamed), its store runs planned by the simd
// pass; one whose lanes the simd pass cannot make vectors of (a float
// division) keeps the plain loop gcc vectorizes, and so does one without
// an exp2.
func TestExp2Lanes(t *testing.T) {
	for _, h := range []struct {
		w, regs int
		lanes   bool
	}{{16, 32, true}, {8, 16, true}, {8, 32, false}} {
		w := h.w
		tg := ir.Target{Upcast: true, VecWidth: w, VecRegs: h.regs, L3: 64 << 20, BufAlign: 4096}
		for _, c := range []struct {
			name  string
			out   *tensor.Tensor
			lanes bool
		}{
			{"sigmoid", input(64, 64).Sigmoid(), h.lanes},
			{"exp over a division", input(64, 64).Div(input(64, 64)).Exp(), false},
			{"product", input(64, 64).Mul(input(64, 64)), false},
		} {
			got, err := ir.OptimizeFor(lastKernel(t, c.out), tg, nil)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			vec := got.SIMD != nil && len(got.SIMD.Stores) > 0
			if vec != c.lanes || got.Stream != nil {
				t.Errorf("width %d (%d registers), %s: store runs in vectors %v (want %v), streamed %v:\n%s", w, h.regs, c.name, vec, c.lanes, got.Stream != nil, got.Dump())
			}
			if vec && len(got.SIMD.Stores[0]) != w {
				t.Errorf("width %d, %s: runs of %d lanes", w, c.name, len(got.SIMD.Stores[0]))
			}
			if !c.lanes && len(got.Opts) > 0 {
				t.Errorf("width %d, %s: opts %s without vectors", w, c.name, ir.FormatOpts(got.Opts))
			}
		}
	}
}
