package ir_test

import (
	"testing"

	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// zen5 is the Zen 5 host: Zen 4's registers and L2 with a 48 KiB L1d and
// two 512-bit FMA units (FMAWidth 16), at either vector width.
func zen5(width int) ir.Target {
	t := zen4(width)
	t.L1, t.FMAWidth = 48<<10, 16
	return t
}

// TestFullVectors: on a target whose FMA units run its whole vector width
// (FMAWidth 16 at width 16), an image row whose width is not a multiple
// of the vector width is blocked whole when that fills the vectors
// better (56 columns: 3x16+8 lanes, 4 output channels for 16
// accumulators; 40: 2x16+8), instead of 8 lanes (one half vector); a
// row that already makes full vectors (64), or one short enough to be
// taken whole anyway (28), keeps its blocks (48, three vectors that two
// do not divide, is blocked whole by 4 channels at any FMA width), and
// Zen 4 (FMAWidth 8) and 8-lane vectors keep the choices from before.
func TestFullVectors(t *testing.T) {
	conv := func(cols int) *tensor.Tensor {
		return input(2, 8, 6, cols).Conv2d(input(64, 8, 3, 3), nil, tensor.ConvOpts{Padding: []int{1}})
	}
	for _, c := range []struct {
		name   string
		cols   int
		target ir.Target
		opts   string
	}{
		{"56 columns, Zen 5", 56, zen5(16), "[UPCAST(3,56) UPCAST(1,4)]"},
		{"56 columns, Zen 4", 56, zen4(16), "[UPCAST(3,8) UPCAST(1,16)]"},
		{"56 columns, Zen 5 at 8 lanes", 56, zen5(8), "[UPCAST(3,8) UPCAST(1,16)]"},
		{"56 columns, AVX2", 56, ir.Target{Upcast: true, VecWidth: 8}, "[UPCAST(3,8) UPCAST(1,8)]"},
		{"40 columns, Zen 5", 40, zen5(16), "[UPCAST(3,40) UPCAST(1,4)]"},
		{"40 columns, Zen 4", 40, zen4(16), "[UPCAST(3,8) UPCAST(1,16)]"},
		{"64 columns, Zen 5", 64, zen5(16), "[UPCAST(3,32) UPCAST(1,8)]"},
		{"48 columns, Zen 5", 48, zen5(16), "[UPCAST(3,48) UPCAST(1,4)]"},
		{"28 columns, Zen 5", 28, zen5(16), "[UPCAST(3,28) UPCAST(1,8)]"},
	} {
		k := lastKernel(t, conv(c.cols))
		if s := heuristicOpts(t, k, c.target); s != c.opts {
			t.Errorf("%s: heuristic %s, want %s", c.name, s, c.opts)
		}
	}
}
