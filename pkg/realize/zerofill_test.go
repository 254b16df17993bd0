package realize

import (
	"math"
	"testing"

	"tgc/pkg/fuse"
	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// TestZeroFillKernels: a kernel is a zero fill when it reads nothing and
// stores only zeros' bits: not -0.0, not ones, not a copy of an input.
func TestZeroFillKernels(t *testing.T) {
	ctx, _, err := NewContext("GO", Options{})
	if err != nil {
		t.Fatal(err)
	}
	x, _ := ctx.FromFloats(ir.Float32, []int{4, 8}, make([]float64, 32))
	for _, c := range []struct {
		name string
		t    *tensor.Tensor
		want bool
	}{
		{"empty", ctx.Empty([]int{4, 8}, ir.Float32), true},
		{"int zeros", ctx.Empty([]int{16}, ir.Int32), true},
		{"minus zero", ctx.Full([]int{4, 8}, math.Copysign(0, -1), ir.Float32).Contiguous(), false},
		{"ones", ctx.Ones([]int{4, 8}, ir.Float32).Contiguous(), false},
		{"input times zero", x.Mul(ctx.Const(0, ir.Float32)), false},
	} {
		s, err := fuse.Create([]*tensor.Node{c.t.Node()}, fuse.Options{})
		if err != nil {
			t.Fatal(err)
		}
		last := s.Items[len(s.Items)-1].Kernel
		if got := zeroFill(last); got != c.want {
			t.Errorf("%s: zero fill %v, want %v\n%s", c.name, got, c.want, last.Dump())
		}
	}
}

// TestEmptyIsNotLaunched: on the CPU a realized Tensor.empty is a zeroed
// mapping, no launch (its pages cost nothing until written: a KV cache of
// 1024 positions decoding its first tokens); it reads as zeros and takes
// an assign into part of it. Inside a TinyJit capture the fill launches,
// so that each replay zeros again.
func TestEmptyIsNotLaunched(t *testing.T) {
	ctx, e, err := NewContext("CPU", Options{})
	if err != nil {
		t.Skipf("CPU unavailable: %v", err)
	}
	cache := ctx.Empty([]int{64, 16}, ir.Float32).Realize()
	if e.Stats.ZeroFills != 1 || e.Stats.Kernels != 0 {
		t.Fatalf("%d zero fills, %d launches; want 1, 0", e.Stats.ZeroFills, e.Stats.Kernels)
	}
	row, _ := ctx.FromFloats(ir.Float32, []int{1, 16}, seqVals(16, 1))
	if err := cache.Shrink([][2]int{{3, 4}, {0, 16}}).Assign(row).Err(); err != nil {
		t.Fatal(err)
	}
	got := vals(t, cache)
	for i, v := range got {
		want := 0.0
		if i/16 == 3 {
			want = seqVals(16, 1)[i%16]
		}
		if v != want {
			t.Fatalf("element %d is %v, want %v", i, v, want)
		}
	}
	j := NewJit(ctx, "fresh", func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		return []*tensor.Tensor{ctx.Empty([]int{8}, ir.Float32).Add(in[0])}, nil
	})
	fills := e.Stats.ZeroFills
	for i := range 4 {
		x, _ := ctx.FromFloats(ir.Float32, []int{8}, seqVals(8, i))
		out, err := j.Call(x)
		if err != nil {
			t.Fatal(err)
		}
		near(t, "jitted", vals(t, out[0]), seqVals(8, i), 0)
	}
	if !j.Captured() {
		t.Error("not captured")
	}
	// the call before the capture may skip its fill; the capture and the
	// replays launch it
	if n := e.Stats.ZeroFills - fills; n > 1 {
		t.Errorf("%d of 4 jitted calls skipped the zero fill, want at most the one before the capture", n)
	}
}
