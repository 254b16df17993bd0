package ir_test

import (
	"fmt"
	"strings"
	"testing"

	"tgc/pkg/fuse"
	"tgc/pkg/ir"
	"tgc/pkg/render"
	"tgc/pkg/tensor"
)

// TestStreamingReduce: a split sum's partials (64 rows of 16 lanes, each
// row a contiguous run of the input) read from memory go 4 rows side by
// side, 2 vectors each along the sum (fewer rows with AVX2's 12
// accumulators); with the input in L3, without a known L3, and for rows
// that are not whole vectors (a batch norm's 20-lane image rows) the
// heuristic is the usual one.
func TestStreamingReduce(t *testing.T) {
	small := func(tg ir.Target) ir.Target { tg.L3 = 1 << 20; return tg } // a 4 MiB input is past it
	avx2 := ir.Target{Upcast: true, VecWidth: 8, L1: 32 << 10, L2: 1 << 20}
	noL3 := zen4(16)
	noL3.L3 = 0
	sum := input(1 << 20).Sum(false)
	for _, c := range []struct {
		name   string
		out    *tensor.Tensor
		target ir.Target
		opts   string
	}{
		{"16 lanes", sum, small(zen4(16)), "[UPCAST(1,16) UPCAST(0,4) UNROLL(0,2)]"},
		{"8 lanes", sum, small(zen4(8)), "[UPCAST(1,16) UPCAST(0,4) UNROLL(0,2)]"},
		{"AVX2", sum, small(avx2), "[UPCAST(1,16) UPCAST(0,2) UNROLL(0,2)]"},
		{"input in L3", sum, zen4(16), "[UPCAST(1,16) UPCAST(0,16)]"},
		{"no L3", sum, noL3, "[UPCAST(1,16) UPCAST(0,16)]"},
		{"20-lane rows", input(512, 32, 20, 20).Sum(false, 0, 2, 3), small(zen4(16)), "[UPCAST(2,20) UPCAST(1,8)]"},
	} {
		s, err := fuse.Create([]*tensor.Node{c.out.Node()}, fuse.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := heuristicOpts(t, s.Items[0].Kernel, c.target); got != c.opts {
			t.Errorf("%s: %s heuristic %s, want %s", c.name, s.Items[0].Kernel.Name, got, c.opts)
		}
	}
}

// TestStreamPrefetch: the streaming form's loads (4 rows of 2 vectors,
// each row a contiguous stream of an input past the L3) are prefetched
// 512 bytes ahead along their own reduce loop, a line each; not with the
// input in L3, nor for rows the loads do not read whole (a batch norm's
// 20-lane image rows, 32 columns of 768-wide rows: a decode's attention
// reads the KV cache so). Verify refuses such a prefetch one element off its
// stride, or along a reduce loop other than its own.
func TestStreamPrefetch(t *testing.T) {
	small := func(tg ir.Target) ir.Target { tg.L3 = 1 << 20; return tg }
	along := func(k *ir.Kernel) (n int) {
		if k.Prefetch != nil {
			for _, at := range k.Prefetch.Loads {
				if at.Next == at.Loop {
					n++
				}
			}
		}
		return n
	}
	k := matmulKernel(t, input(1<<20).Sum(false), small(zen4(16)))
	if n := along(k); n != 8 {
		t.Fatalf("%d loads prefetched along their loop, want 8 (4 rows x 2 lines):\n%s", n, k.Dump())
	}
	var loop *ir.Axis
	for _, at := range k.Prefetch.Loads {
		if at.Ahead != 4 || at.Dist != 32 || at.Every != 1 {
			t.Errorf("prefetch %d iterations of %d elements ahead every %d, want 4 of 32 (512 bytes), every iteration", at.Ahead, at.Dist, at.Every)
		}
		loop = at.Loop
	}
	src := render.Render(render.C, k)
	if want := fmt.Sprintf("(%s + 4 < %d ? 128 : 0)", loop.Name(), loop.Size); strings.Count(src, want) != 8 {
		t.Errorf("want 8 prefetches %s:\n%s", want, src)
	}
	for name, c := range map[string]struct {
		out *tensor.Tensor
		tg  ir.Target
	}{
		"input in L3":  {input(1 << 20).Sum(false), zen4(16)},
		"20-lane rows": {input(512, 32, 20, 20).Sum(false, 0, 2, 3), small(zen4(16))},
		// 32 columns of each 768-wide row: two lines of every 48 read
		"slices of rows": {input(1024, 768).Shrink([][2]int{{0, 1024}, {0, 32}}).Sum(false, 0), small(zen4(16))},
	} {
		if k := matmulKernel(t, c.out, c.tg); along(k) != 0 {
			t.Errorf("%s: prefetched along the reduce loop:\n%s", name, k.Dump())
		}
	}
	for name, damage := range map[string]func(*ir.PrefetchAt){
		"one element off": func(at *ir.PrefetchAt) { at.Dist++ },
		"another loop":    func(at *ir.PrefetchAt) { at.Next = &ir.Axis{ID: 99, Size: at.Loop.Size, Kind: ir.AxisReduce} },
		"no loop":         func(at *ir.PrefetchAt) { at.Loop, at.Next = nil, nil },
	} {
		k := matmulKernel(t, input(1<<20).Sum(false), small(zen4(16)))
		for ld, at := range k.Prefetch.Loads {
			damage(&at)
			k.Prefetch.Loads[ld] = at
		}
		if err := k.Verify(); err == nil || !strings.Contains(err.Error(), "prefetch") {
			t.Errorf("%s: Verify says %v", name, err)
		}
	}
}
