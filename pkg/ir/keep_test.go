package ir_test

import (
	"fmt"
	"maps"
	"strings"
	"testing"

	"tgc/pkg/fuse"
	"tgc/pkg/ir"
	"tgc/pkg/render"
	"tgc/pkg/tensor"
)

var keepTargets = []ir.Target{
	{Upcast: true, VecWidth: 8},
	{Upcast: true, VecWidth: 16, VecRegs: 32},
}

// rowKernel is the one kernel of x's CPU schedule (row kernels), after
// the pass table for t.
func rowKernel(t *testing.T, x *tensor.Tensor, tg ir.Target) *ir.Kernel {
	t.Helper()
	s, err := fuse.Create([]*tensor.Node{x.Node()}, fuse.Options{HoistReduces: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Items) != 1 {
		t.Fatalf("%d kernels, want one row kernel", len(s.Items))
	}
	k, err := ir.OptimizeFor(s.Items[0].Kernel, tg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestKeepPlans: softmax's row kernel keeps its exponentials (stored by
// the sum's loop, read back by the column loop), at both vector widths;
// log_softmax and layernorm recompute nothing expensive per column, and a
// softmax over rows that are not hoisted (GPU schedules) gets no plan.
func TestKeepPlans(t *testing.T) {
	for _, tg := range keepTargets {
		k := rowKernel(t, input(6, 64).Softmax(-1), tg)
		if k.Keep == nil {
			t.Fatalf("width %d: softmax has no keep plan:\n%s", tg.VecWidth, k.Dump())
		}
		if !strings.Contains(k.Dump(), "keep ") {
			t.Errorf("width %d: the dump does not show the plan:\n%s", tg.VecWidth, k.Dump())
		}
		if k.Keep.Value.Op != ir.OpExp2 {
			t.Errorf("width %d: kept %s, want the exponential", tg.VecWidth, k.Keep.Value.Op)
		}
		if len(k.Keep.Next) == 0 {
			t.Errorf("width %d: the kept loop prefetches nothing of the next row", tg.VecWidth)
		}
		for ld, s := range k.Keep.Next {
			if s != 64 {
				t.Errorf("width %d: prefetch of %s %d ahead, want one row (64)", tg.VecWidth, ld, s)
			}
		}
		for name, x := range map[string]*tensor.Tensor{
			"log_softmax": input(6, 64).LogSoftmax(-1),
			"layernorm":   input(6, 64).Layernorm(1e-5, -1),
		} {
			if k := rowKernel(t, x, tg); k.Keep != nil {
				t.Errorf("width %d: %s keeps a value:\n%s", tg.VecWidth, name, k.Dump())
			}
		}
		s, err := fuse.Create([]*tensor.Node{input(6, 64).Softmax(-1).Node()}, fuse.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range s.Items {
			k, err := ir.OptimizeFor(it.Kernel, tg, nil)
			if err != nil {
				t.Fatal(err)
			}
			if k.Keep != nil {
				t.Errorf("width %d: %s (no row kernel) keeps a value", tg.VecWidth, k.Name)
			}
		}
	}
	// Not at all on a grid device: its reduces run per output element.
	s, err := fuse.Create([]*tensor.Node{input(6, 64).Softmax(-1).Node()}, fuse.Options{HoistReduces: true})
	if err != nil {
		t.Fatal(err)
	}
	gpu := ir.Target{GPU: &ir.GPU{MaxWorkGroup: 256, MaxLocal: [3]int64{256, 256, 64}, LocalMem: 32 << 10}}
	for _, it := range s.Items {
		if k, err := ir.OptimizeFor(it.Kernel, gpu, nil); err == nil && k.Keep != nil {
			t.Errorf("GPU target: %s keeps a value", k.Name)
		}
	}
}

// TestKeepTails: a softmax over rows that no vector divides (100 columns:
// split_tails sums 96 in vectors and 4 in a scalar tail; 97: a tail of
// one column, whose loop variable leaves its index) keeps the
// exponentials of both loops, at both widths; Verify refuses the plan
// without its tail, with a tail member one column off, and in scratch.
func TestKeepTails(t *testing.T) {
	for _, tc := range []struct {
		tg   ir.Target
		cols int
	}{{keepTargets[0], 100}, {keepTargets[1], 100}, {keepTargets[0], 97}, {keepTargets[1], 97}} {
		tg := tc.tg
		k := rowKernel(t, input(6, tc.cols).Softmax(-1), tg)
		if k.Keep == nil || k.Keep.Tail == nil {
			t.Fatalf("width %d: no keep plan with a tail:\n%s", tg.VecWidth, k.Dump())
		}
		if !strings.Contains(k.Dump(), "and of its tail") {
			t.Errorf("width %d: the dump does not show the tail:\n%s", tg.VecWidth, k.Dump())
		}
		p := ir.Linearize(k)
		tail := p.Members[k.Keep.Tail]
		if n := len(p.Members[k.Keep.Leader]) + len(tail); len(k.Keep.Col) != n || len(tail) == 0 {
			t.Fatalf("width %d: %d columns kept for %d members", tg.VecWidth, len(k.Keep.Col), n)
		}
		copyPlan := func() *ir.Keep {
			kp := *k.Keep
			kp.Col, kp.Index = maps.Clone(k.Keep.Col), maps.Clone(k.Keep.Index)
			return &kp
		}
		b := k.B
		for _, c := range []struct {
			name, want string
			damage     func(kp *ir.Keep)
		}{
			{"no tail", "columns and", func(kp *ir.Keep) { kp.Tail = nil }},
			{"no tail nor its columns", fmt.Sprintf("cover 96 of %d columns", tc.cols), func(kp *ir.Keep) {
				kp.Tail = nil
				for _, m := range tail {
					delete(kp.Col, m)
					delete(kp.Index, m)
				}
			}},
			{"a tail member one column on", "a lane of its own", func(kp *ir.Keep) {
				kp.Col[tail[0]] = b.Add(kp.Col[tail[0]], b.Int(1))
			}},
			{"the tail as the leader", "+ 0 + a lane of its own", func(kp *ir.Keep) { kp.Leader, kp.Tail = kp.Tail, kp.Leader }},
			{"in scratch", "with a tail", func(kp *ir.Keep) { kp.Scratch = true }},
		} {
			nk := *k
			nk.Keep = copyPlan()
			c.damage(nk.Keep)
			if err := nk.Verify(); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("width %d, %d columns, %s: got %v, want an error containing %q", tg.VecWidth, tc.cols, c.name, err, c.want)
			}
		}
	}
}

// TestVerifyCatchesBrokenKeep damages a softmax's keep plan one way at a
// time; Verify must refuse each and say why.
func TestVerifyCatchesBrokenKeep(t *testing.T) {
	good := rowKernel(t, input(6, 64).Softmax(-1), keepTargets[1])
	if good.Keep == nil || len(good.Keep.Col) < 2 {
		t.Fatalf("no keep plan with lanes to damage:\n%s", good.Dump())
	}
	if err := good.Verify(); err != nil {
		t.Fatalf("the plan as made: %v", err)
	}
	p := ir.Linearize(good)
	members := p.Members[good.Keep.Leader]
	m0, m1 := members[0], members[1]
	var maxReduce *ir.Expr
	ir.Walk(good.Stores, func(e *ir.Expr) {
		if e.Op == ir.OpReduce && e.Arg.(*ir.ReduceArg).Op == ir.OpMaxReduce {
			maxReduce = e
		}
	})
	copyPlan := func() *ir.Keep {
		kp := *good.Keep
		kp.Col, kp.Index = map[*ir.Expr]*ir.Expr{}, map[*ir.Expr]*ir.Expr{}
		for m, c := range good.Keep.Col {
			kp.Col[m], kp.Index[m] = c, good.Keep.Index[m]
		}
		return &kp
	}
	b := good.B
	cases := []struct {
		name, want string
		damage     func(kp *ir.Keep)
	}{
		{"two members swap columns", "does not accumulate the kept value", func(kp *ir.Keep) {
			kp.Col[m0], kp.Col[m1] = kp.Col[m1], kp.Col[m0]
		}},
		{"a member stores one further", "not at the store's index", func(kp *ir.Keep) {
			kp.Index[m0] = b.Add(kp.Index[m0], b.Int(1))
		}},
		{"both columns' lanes the same", "a lane of its own", func(kp *ir.Keep) {
			kp.Col[m1] = kp.Col[m0]
		}},
		{"a member without a column", "has no column", func(kp *ir.Keep) {
			delete(kp.Col, m0)
			kp.Col[maxReduce] = kp.Col[m1]
		}},
		{"another value kept", "does not accumulate the kept value", func(kp *ir.Keep) {
			kp.Value = kp.Value.Src[0]
		}},
		{"kept by the max", "not a SUM", func(kp *ir.Keep) {
			kp.Leader = maxReduce
		}},
		{"a far prefetch one row ahead", "rows ahead", func(kp *ir.Keep) { kp.Far = 1 }},
		{"a prefetch two rows ahead", "one row (128) ahead", func(kp *ir.Keep) {
			kp.Next = map[*ir.Expr]int64{}
			for ld, s := range good.Keep.Next {
				kp.Next[ld] = 2 * s
			}
		}},
	}
	for _, c := range cases {
		nk := *good
		nk.Keep = copyPlan()
		c.damage(nk.Keep)
		err := nk.Verify()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.want)
		}
	}
	// A second store to the kept buffer (anything may then read it).
	nk := *good
	st := good.Keep.Store
	nk.Stores = append(append([]*ir.Expr{}, good.Stores...), b.Store(st.Arg.(int), b.Int(0), b.Const(ir.Float32, 1)))
	if err := nk.Verify(); err == nil || !strings.Contains(err.Error(), "only float32 store") {
		t.Errorf("second store: got %v", err)
	}
}

// TestKeepFarPrefetch: where the target prefetches rows far ahead into L2
// (Target.FarPrefetch, Intel's AVX-512 hosts), softmax's kept loop also
// prefetches the row FarPrefetch bytes ahead (8 rows of 16 KiB for 128
// KiB; at least 2 for rows of 64 KiB), and the C source has that prefetch
// beside the next row's; without it, only the next row's.
func TestKeepFarPrefetch(t *testing.T) {
	far := ir.Target{Upcast: true, VecWidth: 16, VecRegs: 32, FarPrefetch: 128 << 10}
	for _, c := range []struct{ cols, rows int64 }{{4096, 8}, {64, 512}, {16384, 2}} {
		k := rowKernel(t, input(4, int(c.cols)).Softmax(-1), far)
		if k.Keep == nil || k.Keep.Far != c.rows {
			t.Fatalf("%d columns: prefetch %v rows ahead into L2, want %d:\n%s", c.cols, k.Keep, c.rows, k.Dump())
		}
		src := render.Render(render.C, k)
		want := fmt.Sprintf("(gidx0 + %d < end ? %d : 0)], 0, 1);", c.rows, c.rows*c.cols)
		if !strings.Contains(src, want) || !strings.Contains(src, fmt.Sprintf("(gidx0 + 1 < end ? %d : 0)]);", c.cols)) {
			t.Errorf("%d columns: the source has not both prefetches (%q):\n%s", c.cols, want, src)
		}
	}
	near := far
	near.FarPrefetch = 0
	k := rowKernel(t, input(4, 4096).Softmax(-1), near)
	if src := render.Render(render.C, k); k.Keep == nil || k.Keep.Far != 0 || strings.Contains(src, ", 0, 1);") {
		t.Errorf("without FarPrefetch: Far %v, source:\n%s", k.Keep, src)
	}
}
