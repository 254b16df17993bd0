package ir_test

import (
	"strings"
	"testing"

	"tgc/pkg/fuse"
	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// smallCaches is a host whose L2 the test's operands overflow.
var smallCaches = ir.Target{Upcast: true, VecWidth: 16, VecRegs: 32, L1: 8 << 10, L2: 16 << 10, L3: 4 << 10, BufAlign: 4096}

func matmulKernel(t *testing.T, x *tensor.Tensor, tg ir.Target) *ir.Kernel {
	t.Helper()
	s, err := fuse.Create([]*tensor.Node{x.Node()}, fuse.Options{})
	if err != nil {
		t.Fatal(err)
	}
	k, err := ir.OptimizeFor(s.Items[0].Kernel, tg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestPrefetchPlan: a product whose left operand overflows the caches and
// feeds few outputs per element (32 columns, a 1x1 conv's input rows)
// prefetches its rows one row block ahead, once a line of the sum; with
// 256 columns (each element reused 256 times), where the L2 is unknown, or
// with the operand in cache, nothing is prefetched. Verify refuses a
// damaged plan.
func TestPrefetchPlan(t *testing.T) {
	k := matmulKernel(t, input(512, 64).Dot(input(64, 32)), smallCaches)
	if k.Prefetch == nil {
		t.Fatalf("no prefetch plan:\n%s", k.Dump())
	}
	for ld, at := range k.Prefetch.Loads {
		if ld.Arg.(int) != 1 || at.Dist != 8*64 || at.Next != k.Global[0] {
			t.Errorf("prefetch of buffer %d one %s (%d) ahead, want the left operand one block of 8 rows (512) ahead", ld.Arg.(int), at.Next.Name(), at.Dist)
		}
	}
	if !strings.Contains(k.Dump(), "prefetch ") {
		t.Errorf("the dump does not show the plan:\n%s", k.Dump())
	}
	for name, x := range map[string]struct {
		x  *tensor.Tensor
		tg ir.Target
	}{
		"256 columns": {input(512, 64).Dot(input(64, 256)), smallCaches},
		"L2 unknown":  {input(512, 64).Dot(input(64, 32)), ir.Target{Upcast: true, VecWidth: 16, VecRegs: 32}},
		"in the L2":   {input(32, 64).Dot(input(64, 32)), smallCaches},
	} {
		if k := matmulKernel(t, x.x, x.tg); k.Prefetch != nil {
			t.Errorf("%s: prefetches:\n%s", name, k.Dump())
		}
	}
	for ld, at := range k.Prefetch.Loads {
		at.Dist++
		k.Prefetch.Loads[ld] = at
		break
	}
	if err := k.Verify(); err == nil || !strings.Contains(err.Error(), "prefetch") {
		t.Errorf("a prefetch one element off its stride: Verify says %v", err)
	}
}
