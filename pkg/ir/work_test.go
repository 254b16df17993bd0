package ir_test

import (
	"testing"

	"tgc/pkg/ir"
)

// TestWork: a kernel's sums that are the same for every output (one
// row's layernorm: its mean and variance) count once in Work and once per
// output in Cost; where every sum depends on the output (a matrix-vector
// product, the layernorms of several rows) the two agree.
func TestWork(t *testing.T) {
	tg := ir.Target{Upcast: true, VecWidth: 16, VecRegs: 32}
	one := rowKernel(t, input(1, 768).Layernorm(1e-5, -1), tg)
	flops, _ := one.Cost()
	// Cost counts a reduce that reads no loop around it once too (not
	// once per output: 768×768 multiply-adds)
	if w := one.Work(); w <= 0 || w > 8*768 || flops > 64*768 {
		t.Errorf("one row's layernorm: Work %d (want at most %d), Cost %d (want at most %d):\n%s", w, 8*768, flops, 64*768, one.Dump())
	}
	for name, k := range map[string]*ir.Kernel{
		"six rows' layernorm":   rowKernel(t, input(6, 768).Layernorm(1e-5, -1), tg),
		"matrix-vector product": rowKernel(t, input(1, 768).Matmul(input(768, 64)), tg),
	} {
		if flops, _ := k.Cost(); k.Work() != flops {
			t.Errorf("%s: Work %d, Cost %d:\n%s", name, k.Work(), flops, k.Dump())
		}
	}
}
