package ir_test

import (
	"testing"

	"tgc/pkg/fuse"
	"tgc/pkg/ir"
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
