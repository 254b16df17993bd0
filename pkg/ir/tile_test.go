package ir_test

import (
	"slices"
	"strings"
	"testing"

	"tgc/pkg/ir"
)

// zen4 is the Zen 4 host's caches (32 KiB L1d, 1 MiB L2 per core) with
// AVX-512's 32 registers, at either vector width.
func zen4(width int) ir.Target {
	return ir.Target{Upcast: true, VecWidth: width, VecRegs: 32, L1: 32 << 10, L2: 1 << 20, L3: 32 << 20}
}

// TestMatmulBlocks: the heuristic groups a matmul's rows (TILE) and
// blocks its sum (KBLOCK) where the left operand does not fit in half of
// L2 and the column panels are one cache line wide (8-lane vectors); not
// with 32-lane panels, nor for a left operand that fits, nor without
// cache sizes. The CPU packs the left operand into row panels exactly
// where the rows are grouped (MatmulRowPanel).
func TestMatmulBlocks(t *testing.T) {
	for _, c := range []struct {
		name    string
		m, k, n int
		target  ir.Target
		opts    string // the heuristic's list
		rows    int64  // MatmulRowPanel
	}{
		{"2048, 8 lanes", 2048, 2048, 2048, zen4(8), "[UPCAST(1,16) UPCAST(0,8) OUTER(1) TILE(0,256) KBLOCK(0,256)]", 8},
		{"4096x1024x512, 8 lanes", 4096, 1024, 512, zen4(8), "[UPCAST(1,16) UPCAST(0,8) OUTER(1) TILE(0,256) KBLOCK(0,256)]", 8},
		// AVX2's 16 registers: 6x2-vector blocks, 4 rows where 6 do not divide
		{"2048, AVX2", 2048, 2048, 2048, ir.Target{Upcast: true, VecWidth: 8, L1: 32 << 10, L2: 1 << 20}, "[UPCAST(1,16) UPCAST(0,4) OUTER(1) TILE(0,256) KBLOCK(0,256)]", 4},
		{"1536, AVX2", 1536, 1536, 1536, ir.Target{Upcast: true, VecWidth: 8, L1: 32 << 10, L2: 1 << 20}, "[UPCAST(1,16) UPCAST(0,6) OUTER(1) TILE(0,192) KBLOCK(0,256)]", 6},
		{"2048, 16 lanes", 2048, 2048, 2048, zen4(16), "[UPCAST(1,32) UPCAST(0,8) OUTER(1)]", 0},
		// 64 x 2048 floats: 512 KiB, half of L2
		{"left operand in L2", 64, 2048, 2048, zen4(8), "[UPCAST(1,16) UPCAST(0,8) OUTER(1)]", 0},
		{"no cache sizes", 2048, 2048, 2048, ir.Target{Upcast: true, VecWidth: 8, VecRegs: 32}, "[UPCAST(1,16) UPCAST(0,8)]", 0},
	} {
		k := lastKernel(t, input(c.m, c.k).Dot(input(c.k, c.n)))
		if s := heuristicOpts(t, k, c.target); s != c.opts {
			t.Errorf("%s: heuristic %s, want %s", c.name, s, c.opts)
		}
		if r := c.target.MatmulRowPanel(int64(c.m), int64(c.k), int64(c.n)); r != c.rows {
			t.Errorf("%s: row panels of %d, want %d", c.name, r, c.rows)
		}
	}
}

// TestBlockSeeds: BEAM's cache block seeds are the heuristic's streaming
// list with a row group and a reduce block whose block of the left operand
// fills half of L2, for each reduce block of 128 to 512 that divides the
// sum; none where the heuristic blocks already, where the left operand
// fits in half of L2, or for a grid device.
func TestBlockSeeds(t *testing.T) {
	zen5 := ir.Target{Upcast: true, VecWidth: 16, VecRegs: 32, L1: 48 << 10, L2: 1 << 20, L3: 32 << 20}
	gpu := zen5
	gpu.GPU = &ir.GPU{}
	for _, c := range []struct {
		name    string
		m, k, n int
		target  ir.Target
		want    []string
	}{
		{"4096, 16 lanes", 4096, 4096, 4096, zen5, []string{
			"[UPCAST(1,32) UPCAST(0,8) OUTER(1) TILE(0,1024) KBLOCK(0,128)]",
			"[UPCAST(1,32) UPCAST(0,8) OUTER(1) TILE(0,512) KBLOCK(0,256)]",
			"[UPCAST(1,32) UPCAST(0,8) OUTER(1) TILE(0,256) KBLOCK(0,512)]",
		}},
		// 1000 rows: groups of 8-row blocks that divide them (125 blocks: 5 or 25)
		{"1000x1024x2048", 1000, 1024, 2048, zen5, []string{
			"[UPCAST(1,32) UPCAST(0,8) OUTER(1) TILE(0,200) KBLOCK(0,128)]",
			"[UPCAST(1,32) UPCAST(0,8) OUTER(1) TILE(0,200) KBLOCK(0,256)]",
			"[UPCAST(1,32) UPCAST(0,8) OUTER(1) TILE(0,200) KBLOCK(0,512)]",
		}},
		{"already blocked (8 lanes)", 2048, 2048, 2048, zen4(8), nil},
		{"left operand in L2", 64, 2048, 2048, zen5, nil},
		{"grid device", 4096, 4096, 4096, gpu, nil},
	} {
		k := lastKernel(t, input(c.m, c.k).Dot(input(c.k, c.n)))
		var got []string
		for _, l := range c.target.BlockSeeds(k, c.target.HeuristicOpts(k)) {
			if _, err := c.target.ApplyOpts(k, l); err != nil {
				t.Errorf("%s: seed %s does not apply: %v", c.name, ir.FormatOpts(l), err)
			}
			got = append(got, ir.FormatOpts(l))
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: seeds %q, want %q", c.name, got, c.want)
		}
	}
}

// TestTileOrder: TILE's block loop is outermost (the loop the cores
// split), KBLOCK's right inside it, the tiled axis's loop within a block
// in its place: GotoBLAS's rowgroup, kb, panel, rows.
func TestTileOrder(t *testing.T) {
	k := lastKernel(t, input(64, 128).Dot(input(128, 64)))
	opts := []ir.Opt{{Kind: ir.OptUpcast, Axis: 1, Amt: 16}, {Kind: ir.OptUpcast, Axis: 0, Amt: 8}, {Kind: ir.OptOuter, Axis: 1}, {Kind: ir.OptTile, Axis: 0, Amt: 32}, {Kind: ir.OptKBlock, Axis: 0, Amt: 64}}
	tg := zen4(8)
	tg.Choose = func(*ir.Kernel) []ir.Opt { return opts }
	got, err := ir.OptimizeFor(k, tg, nil)
	if err != nil {
		t.Fatal(err)
	}
	var sizes []int64
	for _, a := range got.Global {
		sizes = append(sizes, a.Size)
	}
	// 64 rows in groups of 32 (2), 128 in blocks of 64 (2), 4 panels of 16, 4 blocks of 8 rows per group
	if want := []int64{2, 2, 4, 4}; !slices.Equal(sizes, want) {
		t.Errorf("global loops %v, want %v:\n%s", sizes, want, got.Dump())
	}
}

// TestTileRefused: a TILE whose blocks are not whole register blocks, or
// do not divide the axis, or that a grid device would run, is an error.
func TestTileRefused(t *testing.T) {
	k := lastKernel(t, input(64, 128).Dot(input(128, 64)))
	opt, err := ir.OptimizeFor(k, ir.Target{}, nil) // the kernel as the opts pass sees it
	if err != nil {
		t.Fatal(err)
	}
	up := ir.Opt{Kind: ir.OptUpcast, Axis: 0, Amt: 8}
	for _, c := range []struct {
		opts []ir.Opt
		want string
	}{
		{[]ir.Opt{up, {Kind: ir.OptTile, Axis: 0, Amt: 4}}, "not a multiple"},
		{[]ir.Opt{up, {Kind: ir.OptTile, Axis: 0, Amt: 8}}, "not a multiple"},
		{[]ir.Opt{{Kind: ir.OptTile, Axis: 0, Amt: 24}}, "do not divide"},
		{[]ir.Opt{{Kind: ir.OptTile, Axis: 0, Amt: 64}}, "do not divide"},
		{[]ir.Opt{{Kind: ir.OptTile, Axis: 2, Amt: 2}}, "out of range"},
		{[]ir.Opt{{Kind: ir.OptTile, Axis: 0, Amt: 16}, {Kind: ir.OptTile, Axis: 1, Amt: 16}}, "already tiled"},
	} {
		if _, err := ir.ApplyOpts(opt, c.opts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", ir.FormatOpts(c.opts), err, c.want)
		}
	}
	grid := ir.Target{GPU: &ir.GPU{}}
	if _, err := grid.ApplyOpts(opt, []ir.Opt{{Kind: ir.OptTile, Axis: 0, Amt: 16}}); err == nil {
		t.Errorf("a grid target took TILE")
	}
}

// heuristicOpts is the opt list the target's heuristic chooses for k, as
// it was chosen while k was optimized (after the passes before it).
func heuristicOpts(t *testing.T, k *ir.Kernel, target ir.Target) string {
	t.Helper()
	var got []ir.Opt
	tg := target
	tg.Choose = func(k *ir.Kernel) []ir.Opt {
		got = target.HeuristicOpts(k)
		return got
	}
	if _, err := ir.OptimizeFor(k, tg, nil); err != nil {
		t.Fatalf("%v", err)
	}
	return ir.FormatOpts(got)
}

// TestRowsOutermost: weights of up to twice the L2 (K x N) whose rows are
// wider than the sum (N > K), against a left operand past the L2 too (a
// 1x1 conv's 1568 pixels: ResNet-50 b8's stage-3 expand convs), keep the
// rows outermost; a square product of the same size, a left operand in
// L2 (few rows) and weights past twice the L2 keep the column panels
// outermost.
func TestRowsOutermost(t *testing.T) {
	for _, c := range []struct {
		name    string
		m, k, n int
		opts    string
	}{
		{"1568x256x1024 (1 MiB of weights)", 1568, 256, 1024, "[UPCAST(1,32) UPCAST(0,8)]"},
		{"1568x512x1024 (2 MiB)", 1568, 512, 1024, "[UPCAST(1,32) UPCAST(0,8)]"},
		{"1568x1024x256 (N < K)", 1568, 1024, 256, "[UPCAST(1,32) UPCAST(0,8) OUTER(1)]"},
		{"512 (N = K)", 512, 512, 512, "[UPCAST(1,32) UPCAST(0,8) OUTER(1)]"},
		{"16x512x1024 (left operand in L2)", 16, 512, 1024, "[UPCAST(1,32) UPCAST(0,8) OUTER(1)]"},
		{"1568x1024x2048 (8 MiB)", 1568, 1024, 2048, "[UPCAST(1,32) UPCAST(0,8) OUTER(1)]"},
	} {
		k := lastKernel(t, input(c.m, c.k).Dot(input(c.k, c.n)))
		if s := heuristicOpts(t, k, zen4(16)); s != c.opts {
			t.Errorf("%s: heuristic %s, want %s", c.name, s, c.opts)
		}
	}
}

// TestWindowedWeightsPanelsOutermost: a product whose sum runs over two
// axes (a 3x3 conv's kernel rows and kw·Cin, channels-last windows of its
// input) keeps its rows outermost while the weights stay in a cache, but
// takes its column panels outermost when they pass the L2 and half of
// the output cache, where every row block would read them from memory:
// ResNet-50 b8's stage-4 3x3 convs (4608x512, 9.4 MB) on a Xeon guest
// whose L3 keeps nothing (Target.L3 the two L2s); on the Zen 4 target
// (32 MiB L3) they stay as they were.
func TestWindowedWeightsPanelsOutermost(t *testing.T) {
	xeon := ir.Target{Upcast: true, VecWidth: 16, VecRegs: 32, L1: 48 << 10, L2: 2 << 20, L3: 4 << 20}
	conv := func(m, kw, n int) *ir.Kernel {
		// windows: rows of 3 pieces of kw elements, 2*kw apart (not mergeable)
		x := input(m, 3, 2*kw).Shrink([][2]int{{0, m}, {0, 3}, {0, kw}}).Reshape(m, 3, kw, 1)
		w := input(3, kw, n).Reshape(1, 3, kw, n)
		return lastKernel(t, x.Mul(w).Sum(false, 1, 2))
	}
	for _, c := range []struct {
		name     string
		m, kw, n int
		target   ir.Target
		outer    bool
	}{
		{"9.4 MB of weights, Xeon", 392, 1536, 512, xeon, true},
		{"2.4 MB, Xeon", 1568, 768, 256, xeon, true},
		{"1.2 MB, Xeon (in L2)", 1568, 384, 256, xeon, false},
		{"9.4 MB, Zen 4 (in its L3)", 392, 1536, 512, zen4(16), false},
	} {
		k := conv(c.m, c.kw, c.n)
		if got := len(k.ReduceAxes()); got != 2 {
			t.Fatalf("%s: %d reduce axes, want 2 (a windowed sum)", c.name, got)
		}
		s := heuristicOpts(t, k, c.target)
		if got := strings.Contains(s, "OUTER"); got != c.outer {
			t.Errorf("%s: heuristic %s, OUTER %v, want %v", c.name, s, got, c.outer)
		}
	}
}
