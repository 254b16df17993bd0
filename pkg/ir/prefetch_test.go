package ir_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"tgc/pkg/fuse"
	"tgc/pkg/ir"
	"tgc/pkg/render"
	"tgc/pkg/tensor"
)

// smallCaches is a host whose L2 the test's operands overflow.
var smallCaches = ir.Target{Upcast: true, VecWidth: 16, VecRegs: 32, L1: 8 << 10, L2: 16 << 10, L3: 4 << 10, BufAlign: 4096}

// matmulKernel is x's schedule's first kernel optimized for tg (a
// product's, or a split sum's partials).
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
			for ld, at := range k.Prefetch.Loads {
				if at.At == nil || ld.Arg.(int) != 2 { // 256 columns: the right operand's panels (TestPanelPrefetch)
					t.Errorf("%s: prefetches:\n%s", name, k.Dump())
					break
				}
			}
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

// TestPanelPrefetch: a product whose right operand passes half of the L2
// (a layer's weights), read in column panels that 8 blocks of rows share,
// prefetches the next panel while one is computed: each block its share,
// once every 8 steps of the sum (8 blocks), one prefetch per line of a
// step (two vectors of 16 columns). With the rows outermost (a 1x1
// conv's input, whose next block of 8 rows the column panels share), the
// left operand's next rows, one prefetch per row, once per line. Walking the kernel's loops in order,
// the lines prefetched during a panel are exactly the lines the next one
// reads, and the last panel prefetches nothing; with the operand in half
// of the L2, or with 1024 rows (a panel's wait for memory is little of its
// work), nothing is planned. The C source has one test at the top of
// the sum's loop. Verify refuses a plan that names another loop.
func TestPanelPrefetch(t *testing.T) {
	for _, c := range []struct {
		rows, k, cols int
		buf           int   // the operand prefetched: 2 the right one's panels, 1 the left one's row blocks
		loads, every  int64 // prefetches per test, every so many steps of the sum
		panels, loops int   // the operand's blocks in the loops' order; global loops
	}{
		{64, 256, 512, 2, 2, 8, 16, 1},  // 8 blocks of 8 rows, the panels' and the blocks' loops merged (merge_outer)
		{56, 256, 512, 2, 2, 4, 16, 1},  // 7 blocks
		{16, 256, 2048, 2, 2, 2, 64, 2}, // 2 blocks, 64 panels: two loops
		{512, 8, 256, 1, 1, 64, 256, 2}, // a 1x1 conv's input: its rows (blocks of 1 x 64 columns here, two rows to a line) outermost, the 4 panels inside; a step is a float, so once per line (every 4*16 steps)
	} {
		rows := c.rows
		k := matmulKernel(t, input(rows, c.k).Dot(input(c.k, c.cols)), smallCaches)
		var pfs []*ir.Expr
		var at ir.PrefetchAt
		if k.Prefetch != nil {
			for ld, a := range k.Prefetch.Loads {
				if a.At != nil && ld.Arg.(int) == c.buf {
					pfs, at = append(pfs, a.At), a
				}
			}
		}
		if int64(len(pfs)) != c.loads || at.Every != c.every {
			t.Fatalf("%d rows: %d panel prefetches every %d, want %d every %d:\n%s", rows, len(pfs), at.Every, c.loads, c.every, k.Dump())
		}
		var reads []*ir.Expr // the operand's loads
		ir.Walk(k.Stores, func(e *ir.Expr) {
			if e.Op == ir.OpLoad && e.Arg.(int) == c.buf {
				reads = append(reads, e.Src[0])
			}
		})
		type panel struct{ read, prefetched map[int64]bool }
		var panels []panel
		var last string
		val := map[*ir.Axis]int64{}
		var walk func(i int)
		walk = func(i int) {
			if i < len(k.Global) {
				for v := int64(0); v < k.Global[i].Size; v++ {
					val[k.Global[i]] = v
					walk(i + 1)
				}
				return
			}
			read, pre := map[int64]bool{}, map[int64]bool{}
			for r := int64(0); r < at.Loop.Size; r++ {
				val[at.Loop] = r
				for _, idx := range reads {
					read[evalIndex(t, idx, val)/ir.PrefetchLine] = true
				}
				if r%at.Every == 0 && evalIndex(t, at.If, val) != 0 {
					for _, a := range pfs {
						pre[evalIndex(t, a, val)/ir.PrefetchLine] = true
					}
				}
			}
			if key := fmt.Sprint(slices.Sorted(maps.Keys(read))); key != last {
				panels, last = append(panels, panel{read, map[int64]bool{}}), key
			}
			for l := range pre {
				panels[len(panels)-1].prefetched[l] = true
			}
		}
		walk(0)
		if len(panels) != c.panels || len(k.Global) != c.loops {
			t.Fatalf("%d rows: %d panels, want %d; %d global loops, want %d", rows, len(panels), c.panels, len(k.Global), c.loops)
		}
		// Every line the next panel reads is prefetched during this one,
		// and nothing else is but this one's (the rows of a block less than
		// a line long share lines with the next block).
		for i, p := range panels {
			next := map[int64]bool{}
			if i+1 < len(panels) {
				next = panels[i+1].read
			}
			ok := true
			for l := range next {
				ok = ok && p.prefetched[l]
			}
			for l := range p.prefetched {
				ok = ok && (next[l] || p.read[l] && c.buf == 1)
			}
			if !ok {
				t.Errorf("%d rows: panel %d prefetches lines %v, the next one reads %v", rows, i, slices.Sorted(maps.Keys(p.prefetched)), slices.Sorted(maps.Keys(next)))
			}
		}
	}
	k := matmulKernel(t, input(64, 256).Dot(input(256, 512)), smallCaches)
	src := render.Render(render.C, k)
	if !strings.Contains(src, "if ((ridx0 & 7) == 0 && ") || strings.Count(src, "__builtin_prefetch(&in2[") != 2 {
		t.Errorf("the C source does not prefetch the next panel at the top of the sum:\n%s", src)
	}
	small := ir.Target{Upcast: true, VecWidth: 16, VecRegs: 32, L1: 8 << 10, L2: 1 << 20, L3: 4 << 20}
	if k := matmulKernel(t, input(64, 256).Dot(input(256, 512)), small); k.Prefetch != nil {
		t.Errorf("a 512 KiB operand in half of a 1 MiB L2: prefetches:\n%s", k.Dump())
	}
	if k := matmulKernel(t, input(1024, 256).Dot(input(256, 512)), smallCaches); k.Prefetch != nil {
		for _, at := range k.Prefetch.Loads {
			if at.At != nil {
				t.Errorf("1024 rows (512 flops per byte of the panels): prefetches the next panel:\n%s", k.Dump())
				break
			}
		}
	}
	if err := k.Verify(); err != nil {
		t.Fatal(err)
	}
	for name, damage := range map[string]func(*ir.PrefetchAt){
		"reading another loop": func(at *ir.PrefetchAt) {
			at.At = k.B.Add(at.At, k.B.Var(&ir.Axis{ID: 99, Size: 4, Kind: ir.AxisReduce}))
		},
		"every 4 iterations, the other every 8": func(at *ir.PrefetchAt) { at.Every = 4 },
		"under a load":                          func(at *ir.PrefetchAt) { at.If = k.B.Lt(k.B.Int(0), k.B.Load(1, ir.Float32, k.B.Int(0), nil)) },
	} {
		k := matmulKernel(t, input(64, 256).Dot(input(256, 512)), smallCaches)
		for ld, at := range k.Prefetch.Loads {
			damage(&at)
			k.Prefetch.Loads[ld] = at
			break
		}
		if err := k.Verify(); err == nil || !strings.Contains(err.Error(), "prefetch") {
			t.Errorf("a panel prefetch %s: Verify says %v", name, err)
		}
	}
}

// TestNoPanelPrefetchOutsideItsLoops: a row kernel's sums (the CPU's
// schedule: hoisted out of the columns' loop, once per row) read their
// row along the sum and not the columns' loop, as a product reads a
// column panel that row blocks share; but they run outside that loop, so
// there is no block to share a panel with. None of them plans a panel
// prefetch (one did for a layernorm past half of the L2, its index over
// the columns' loop: the C source named a variable not declared where it
// stood, and every layernorm of 512x512 or more failed to compile on a 1
// MiB L2). Verify refuses a panel prefetch reading a loop its sum runs
// outside, and takes the same prefetch over the loops around it.
func TestNoPanelPrefetchOutsideItsLoops(t *testing.T) {
	zen5 := ir.Target{Upcast: true, VecWidth: 16, VecRegs: 32, FMAWidth: 16, L1: 48 << 10, L2: 1 << 20, L3: 32 << 20, BufAlign: 4096}
	rms := func(x *tensor.Tensor) *tensor.Tensor {
		return x.Mul(x).Mean(true, -1).Add(tc.Const(1e-6, ir.Float32)).Rsqrt().Mul(x)
	}
	for _, c := range []struct {
		tg         ir.Target
		rows, cols int
	}{{smallCaches, 16, 256}, {zen5, 512, 512}, {zen5, 64, 4096}} {
		for name, x := range map[string]*tensor.Tensor{
			"layernorm":   input(c.rows, c.cols).Layernorm(1e-5, -1),
			"rmsnorm":     rms(input(c.rows, c.cols)),
			"log_softmax": input(c.rows, c.cols).LogSoftmax(-1),
			"softmax":     input(c.rows, c.cols).Softmax(-1),
		} {
			k := rowKernel(t, x, c.tg) // verified after every pass
			if k.Prefetch == nil {
				continue
			}
			for _, at := range k.Prefetch.Loads {
				if at.At != nil {
					t.Errorf("%s of %dx%d, L2 %d KiB: a panel prefetch:\n%s", name, c.rows, c.cols, c.tg.L2>>10, k.Dump())
					break
				}
			}
		}
	}
	// A panel prefetch put on the layernorm's first sum by hand.
	k := rowKernel(t, input(16, 256).Layernorm(1e-5, -1), smallCaches)
	var sum *ir.Expr
	ir.Walk(k.Stores, func(e *ir.Expr) {
		if sum == nil && e.Op == ir.OpReduce {
			sum = e
		}
	})
	var ld *ir.Expr
	ir.Walk([]*ir.Expr{sum}, func(e *ir.Expr) {
		if ld == nil && e.Op == ir.OpLoad {
			ld = e
		}
	})
	if sum == nil || ld == nil || len(k.Global) != 2 {
		t.Fatalf("no sum of a load in two global loops:\n%s", k.Dump())
	}
	rows, cols := k.Global[0], k.Global[1]
	for _, c := range []struct {
		what string
		at   *ir.Expr
		ok   bool
	}{
		{"the next row", k.B.Add(ld.Src[0], k.B.Int(256)), true},
		{"over the columns' loop", k.B.Add(ld.Src[0], k.B.Var(cols)), false},
	} {
		nk := *k
		nk.Prefetch = &ir.Prefetch{Loads: map[*ir.Expr]ir.PrefetchAt{ld: {
			Loop: sum.Arg.(*ir.ReduceArg).Axes[0], Every: 16, At: c.at,
			If: k.B.Lt(k.B.Add(k.B.Var(rows), k.B.Int(1)), k.B.Int(rows.Size)),
		}}}
		err := nk.Verify()
		if c.ok && err != nil {
			t.Errorf("a prefetch of %s: Verify says %v", c.what, err)
		}
		if !c.ok && (err == nil || !strings.Contains(err.Error(), "prefetch")) {
			t.Errorf("a prefetch %s, which the sum runs outside: Verify says %v", c.what, err)
		}
	}
}

// evalIndex evaluates index arithmetic at the loops' values.
func evalIndex(t *testing.T, e *ir.Expr, val map[*ir.Axis]int64) int64 {
	t.Helper()
	switch e.Op {
	case ir.OpConst:
		return e.Arg.(int64)
	case ir.OpVar:
		return val[e.Arg.(*ir.Axis)]
	}
	a, b := evalIndex(t, e.Src[0], val), evalIndex(t, e.Src[1], val)
	switch e.Op {
	case ir.OpAdd:
		return a + b
	case ir.OpMul:
		return a * b
	case ir.OpDiv:
		return a / b
	case ir.OpMod:
		return a % b
	case ir.OpCmpLt:
		if a < b {
			return 1
		}
		return 0
	}
	t.Fatalf("evalIndex: %s", e.Op)
	return 0
}

// TestNarrowPrefetchAhead: a matrix-vector product of float16 weights
// prefetches its rows at least narrowAheadBytes (3 KiB) ahead, in whole
// rows and never fewer than 2: rows of 256 weights (512 bytes) 6 ahead,
// of 768 (1536 bytes) 2, of 4096 (8 KiB) 2. Rows of 512 bytes two ahead
// (1 KiB) left the bus idle between rows: a Q8_0 row of 768 weights (816
// bytes) four rows ahead made the 110M model's decode step 10 % faster.
func TestNarrowPrefetchAhead(t *testing.T) {
	for _, c := range []struct{ cols, ahead int64 }{{256, 6}, {768, 2}, {4096, 2}} {
		w, err := tc.FromFloats(ir.Float16, []int{64, int(c.cols)}, make([]float64, 64*c.cols))
		if err != nil {
			t.Fatal(err)
		}
		x := input(1, int(c.cols)).Dot(w.Cast(ir.Float32).T())
		k := matmulKernel(t, x, smallCaches)
		if k.Prefetch == nil {
			t.Fatalf("%d columns: no prefetch plan:\n%s", c.cols, k.Dump())
		}
		found := false
		for ld, at := range k.Prefetch.Loads {
			if k.Bufs[ld.Arg.(int)].DType != ir.Float16 {
				continue
			}
			found = true
			if at.Ahead != c.ahead || at.Dist != c.cols {
				t.Errorf("%d columns: a row of float16 prefetched %d rows of %d ahead, want %d", c.cols, at.Ahead, at.Dist, c.ahead)
			}
		}
		if !found {
			t.Errorf("%d columns: the weight is not prefetched:\n%s", c.cols, k.Dump())
		}
	}
}
