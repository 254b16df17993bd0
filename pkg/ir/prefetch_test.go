package ir_test

import (
	"strings"
	"testing"

	"tgc/pkg/fuse"
	"tgc/pkg/ir"
	"tgc/pkg/render"
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
	for name, damage := range map[string]func(*ir.PrefetchAt){
		"every 3 iterations":         func(at *ir.PrefetchAt) { at.Every = 3 },
		"every 32 iterations":        func(at *ir.PrefetchAt) { at.Every = 32 },
		"no iterations ahead":        func(at *ir.PrefetchAt) { at.Ahead = 0 },
		"a line every 16 iterations": func(at *ir.PrefetchAt) {},
	} {
		k := matmulKernel(t, input(512, 64).Dot(input(64, 32)), smallCaches)
		for ld, at := range k.Prefetch.Loads {
			damage(&at)
			k.Prefetch.Loads[ld] = at
		}
		err := k.Verify()
		if intact := name == "a line every 16 iterations"; intact != (err == nil) {
			t.Errorf("%s: Verify says %v", name, err)
		}
	}
}

// TestEpiloguePrefetch: a product with a residual added (a 1x1 conv's
// epilogue) past the small L2 prefetches the residual's lines before the
// sum, one per line of each register block (8 rows x 2 lines of 16
// columns); the renderer writes them ahead of the reduce's loop. A bias
// in cache, an unknown L2 and a sum too short to hide a line's latency
// prefetch nothing; Verify refuses a plan that names a load inside the
// reduce.
func TestEpiloguePrefetch(t *testing.T) {
	res := input(512, 32)
	k := matmulKernel(t, input(512, 64).Dot(input(64, 32)).Add(res), smallCaches)
	if k.Prefetch == nil || len(k.Prefetch.Epilogue) == 0 {
		t.Fatalf("no epilogue prefetch:\n%s", k.Dump())
	}
	if n := len(k.Prefetch.Epilogue); n != 8*2 {
		t.Errorf("%d epilogue prefetches, want 16 (8 rows x 2 lines)", n)
	}
	resBuf := -1
	for i, b := range k.Bufs {
		if b.Size == 512*32 && !b.Output {
			resBuf = i
		}
	}
	for _, ld := range k.Prefetch.Epilogue {
		if ld.Arg.(int) != resBuf {
			t.Errorf("prefetch of buffer %d, want the residual's (%d)", ld.Arg.(int), resBuf)
		}
	}
	if !strings.Contains(k.Dump(), "before the reduce") {
		t.Errorf("the dump does not show the plan:\n%s", k.Dump())
	}
	src := render.Render(render.C, k)
	pf, loop := strings.Index(src, "__builtin_prefetch(&in"), strings.Index(src, "for (int ridx")
	if pf < 0 || loop < 0 || pf > loop || strings.Count(src, "__builtin_prefetch(&in") < 16 {
		t.Errorf("the C source does not prefetch the residual before the reduce's loop:\n%s", src)
	}
	for name, x := range map[string]struct {
		x  *tensor.Tensor
		tg ir.Target
	}{
		"bias in cache": {input(512, 64).Dot(input(64, 32)).Add(input(32)), smallCaches},
		"L2 unknown":    {input(512, 64).Dot(input(64, 32)).Add(input(512, 32)), ir.Target{Upcast: true, VecWidth: 16, VecRegs: 32}},
		"short sum":     {input(512, 16).Dot(input(16, 32)).Add(input(512, 32)), smallCaches},
	} {
		if k := matmulKernel(t, x.x, x.tg); k.Prefetch != nil && len(k.Prefetch.Epilogue) > 0 {
			t.Errorf("%s: prefetches the epilogue:\n%s", name, k.Dump())
		}
	}
	var inner *ir.Expr
	ir.Walk(k.Stores, func(e *ir.Expr) {
		if e.Op == ir.OpReduce && inner == nil {
			ir.Walk(e.Src, func(x *ir.Expr) {
				if x.Op == ir.OpLoad && inner == nil {
					inner = x
				}
			})
		}
	})
	k.Prefetch.Epilogue[0] = inner
	if err := k.Verify(); err == nil || !strings.Contains(err.Error(), "prefetch") {
		t.Errorf("an epilogue prefetch of a load inside the reduce: Verify says %v", err)
	}
}
