package ir_test

import (
	"testing"

	"tgc/pkg/fuse"
	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// TestCostCountsLoops: Cost counts an expression once per iteration of
// the loops it sits in, down to the innermost loop it reads, as the C runs
// it: a row's max and sum once per row, not once per element of the row
// (softmax's and layernorm's kernels counted 4096× and 768× their work
// before, DEBUG=2 printing 150000 GFLOP/s for a softmax); a sum that reads
// no global axis once per launch. The kernel's optimizations (unrolled
// and split axes) leave it but for the adds that combine an unrolled
// reduce's partial sums.
func TestCostCountsLoops(t *testing.T) {
	tg := ir.Target{Upcast: true, VecWidth: 16, VecRegs: 32}
	cases := []struct {
		name     string
		x        *tensor.Tensor
		min, max int64 // flops
	}{
		// a multiply and an add per weight
		{"matrix-vector product", input(1, 768).Matmul(input(768, 64)), 2 * 768 * 64, 2 * 768 * 64},
		// a row's mean and variance once per row; a subtract, multiply
		// and a few more per element
		{"one row's layernorm", input(1, 768).Layernorm(1e-5, -1), 3 * 768, 8 * 768},
		{"six rows' layernorm", input(6, 768).Layernorm(1e-5, -1), 6 * 3 * 768, 6 * 8 * 768},
		// per element the max, the sum's subtract, scale, exp2 and add,
		// the output's subtract, scale, exp2 and multiply; a reciprocal
		// per row
		{"softmax rows", input(64, 256).Softmax(-1), 64 * 256 * 9, 64*256*9 + 64},
	}
	for _, c := range cases {
		s, err := fuse.Create([]*tensor.Node{c.x.Node()}, fuse.Options{HoistReduces: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Items) != 1 {
			t.Fatalf("%s: %d kernels, want one", c.name, len(s.Items))
		}
		plain := s.Items[0].Kernel
		flops, bytes := plain.Cost()
		if flops < c.min || flops > c.max {
			t.Errorf("%s: %d flops, want %d to %d:\n%s", c.name, flops, c.min, c.max, plain.Dump())
		}
		var want int64
		for _, b := range plain.Bufs {
			want += b.Size * 4
		}
		if bytes != want {
			t.Errorf("%s: %d bytes, want its buffers' %d", c.name, bytes, want)
		}
		k, err := ir.OptimizeFor(plain, tg, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := k.Cost(); got < flops || got > flops+flops/32 || len(k.Opts) == 0 {
			t.Errorf("%s: %d flops after %v, %d before", c.name, got, k.Opts, flops)
		}
	}
}
