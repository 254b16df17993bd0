package ir_test

import (
	"fmt"
	"strings"
	"testing"

	"tgc/pkg/fuse"
	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// tc is the tests' tensor context (no engine: nothing is realized).
var tc = tensor.NewContext(nil)

func input(shape ...int) *tensor.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	t, err := tc.FromFloats(ir.Float32, shape, make([]float64, n))
	if err != nil {
		panic(err)
	}
	return t
}

// guardedKernel is the kernel of a graph's schedule that has guarded
// loads (a padding), before any pass.
func guardedKernel(t *testing.T, out *tensor.Tensor) *ir.Kernel {
	t.Helper()
	if err := out.Err(); err != nil {
		t.Fatal(err)
	}
	s, err := fuse.Create([]*tensor.Node{out.Node()}, fuse.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range s.Items {
		guarded := false
		ir.Walk(it.Kernel.Stores, func(e *ir.Expr) { guarded = guarded || e.Op == ir.OpLoad && len(e.Src) > 1 })
		if guarded {
			return it.Kernel
		}
	}
	t.Fatal("no kernel with guarded loads")
	return nil
}

// broken passes: each breaks the in-bounds invariant in one way.
var brokenPasses = []struct {
	name, want string
	run        func(k *ir.Kernel, _ ir.Target) (*ir.Kernel, error)
}{
	// every store one element further
	{"store_off_by_one", "store to buf0 at index", func(k *ir.Kernel, _ ir.Target) (*ir.Kernel, error) {
		nk := *k
		nk.Stores = nil
		for _, s := range k.Stores {
			nk.Stores = append(nk.Stores, k.B.Store(s.Arg.(int), k.B.Add(s.Src[0], k.B.Int(1)), s.Src[1]))
		}
		return &nk, nil
	}},
	// guarded loads read without their guard (the padding's out-of-range rows)
	{"drop_guards", "load from buf1 at index", func(k *ir.Kernel, _ ir.Target) (*ir.Kernel, error) {
		return k.Rewrite(func(b *ir.Builder, e *ir.Expr) *ir.Expr {
			if e.Op == ir.OpLoad && len(e.Src) > 1 {
				return b.Load(e.Arg.(int), e.DType, e.Src[0], nil)
			}
			return nil
		}), nil
	}},
	// every guard lets one more row through: x < c becomes x < c+1
	{"widen_guards", "load from buf1 at index", func(k *ir.Kernel, _ ir.Target) (*ir.Kernel, error) {
		return k.Rewrite(func(b *ir.Builder, e *ir.Expr) *ir.Expr {
			if e.Op == ir.OpCmpLt && e.Src[0].DType == ir.Index {
				if c, ok := e.Src[1].ConstInt(); ok && !e.Src[0].IsConst() {
					return b.Lt(e.Src[0], b.Int(c+1))
				}
			}
			return nil
		}), nil
	}},
	// an upcast whose lanes overlap the next block: a = 4*a' + lane with a' over all of a
	{"bad_upcast", "outside its", func(k *ir.Kernel, _ ir.Target) (*ir.Kernel, error) {
		a := k.Global[len(k.Global)-1]
		na := &ir.Axis{ID: a.ID, Size: a.Size, Kind: ir.AxisGlobal}
		nk := k.Rewrite(func(b *ir.Builder, e *ir.Expr) *ir.Expr {
			if e.Op == ir.OpVar && e.Arg.(*ir.Axis) == a {
				return b.Add(b.Mul(b.Var(na), b.Int(4)), b.Int(3))
			}
			return nil
		})
		nk.Global = append(append([]*ir.Axis{}, k.Global[:len(k.Global)-1]...), na)
		return nk, nil
	}},
}

// TestVerifyCatchesBrokenPasses runs the pass table with a broken pass
// inserted after simplify: Verify must refuse its kernel and name it.
func TestVerifyCatchesBrokenPasses(t *testing.T) {
	graphs := map[string]*tensor.Tensor{
		"padded conv": input(1, 2, 8, 8).Conv2d(input(4, 2, 3, 3), nil, tensor.ConvOpts{Padding: []int{1, 1, 1, 1}}),
		"padded sum":  input(6, 10).Pad([][2]int{{2, 2}, {0, 0}}, 0).Sum(false, 0),
		"pad flip":    input(8, 10).Pad([][2]int{{1, 1}, {0, 3}}, 0).Flip(1).Sqrt(),
	}
	for gname, g := range graphs {
		k := guardedKernel(t, g)
		if _, err := ir.OptimizeFor(k, ir.CPUTarget, nil); err != nil {
			t.Fatalf("%s: the real pass table fails: %v", gname, err)
		}
		for _, bp := range brokenPasses {
			table := ir.Passes()
			passes := append([]ir.Pass{table[0], {Name: bp.name, Run: bp.run}}, table[1:]...)
			_, err := ir.RunPasses(k, ir.CPUTarget, passes, nil)
			if err == nil {
				t.Errorf("%s: broken pass %s not caught", gname, bp.name)
				continue
			}
			if msg := err.Error(); !strings.HasPrefix(msg, "after pass "+bp.name+": ") || !strings.Contains(msg, bp.want) {
				t.Errorf("%s: broken pass %s: error %q, want it named and %q", gname, bp.name, msg, bp.want)
			}
		}
	}
}

// relate is -4 < -g && c < r+MAX(3-g, 0), as a reversed exclusive
// cumsum's lowering writes it: for c = 3, r > g.
func relate(b *ir.Builder, g, r *ir.Expr, c int64) *ir.Expr {
	neg := b.Mul(g, b.Int(-1))
	return b.And(b.Lt(b.Int(-4), neg), b.Lt(b.Int(c), b.Add(r, b.Alu(ir.OpMax, b.Add(neg, b.Int(3)), b.Int(0)))))
}

// TestVerifyBounds checks the in-bounds proof on hand-built kernels: a
// guarded load may leave its buffer only where its guard is false.
func TestVerifyBounds(t *testing.T) {
	b := ir.NewBuilder()
	i := &ir.Axis{ID: 0, Size: 12, Kind: ir.AxisGlobal}
	j := &ir.Axis{ID: 1, Size: 5, Kind: ir.AxisGlobal}
	vi, vj := b.Var(i), b.Var(j)
	// the row i-2 of a (8, 5) buffer, padded by 2 rows on each side
	row := b.Add(vi, b.Int(-2))
	inRows := b.And(b.Lt(b.Int(1), vi), b.Lt(vi, b.Int(10)))
	idx := b.Add(b.Mul(row, b.Int(5)), vj)
	cases := []struct {
		name  string
		load  *ir.Expr
		store *ir.Expr
		err   string
	}{
		{"guarded", b.Load(1, ir.Float32, idx, inRows), nil, ""},
		{"unguarded", b.Load(1, ir.Float32, idx, nil), nil, "load from buf1 at index [-10..49] outside its 40 elements"},
		{"guard too wide", b.Load(1, ir.Float32, idx, b.And(b.Lt(b.Int(1), vi), b.Lt(vi, b.Int(11)))), nil, "index [0..44]"},
		{"guard on a scaled sum", b.Load(1, ir.Float32, b.Add(b.Mul(b.Add(vi, vj), b.Int(3)), b.Int(-3)),
			b.And(b.Lt(b.Int(0), b.Add(vi, vj)), b.Lt(b.Add(vi, vj), b.Int(14)))), nil, ""},
		{"never valid", b.Load(1, ir.Float32, b.Add(vi, b.Int(100)), b.And(b.Lt(vi, b.Int(3)), b.Lt(b.Int(5), vi))), nil, ""},
		// a reversed exclusive cumsum's read of x[n+g-r] (i as g, j as r):
		// in bounds only because the guard relates the loops (r > g),
		// which enumeration proves; with r >= g it reads one past the end
		{"loops related by the guard", b.Load(1, ir.Float32, b.Add(b.Sub(vi, vj), b.Int(40)), relate(b, vi, vj, 3)), nil, ""},
		{"g < r", b.Load(1, ir.Float32, b.Add(b.Sub(vi, vj), b.Int(40)), b.Lt(vi, vj)), nil, ""},
		{"related, one too many", b.Load(1, ir.Float32, b.Add(b.Sub(vi, vj), b.Int(40)), relate(b, vi, vj, 2)), nil, "index [36..40] outside its 40 elements"},
		{"store past the end", b.Const(ir.Float32, 1), b.Store(0, b.Add(b.Mul(vi, b.Int(5)), b.Add(vj, b.Int(1))), b.Const(ir.Float32, 1)), "store to buf0 at index [1..60] outside its 60 elements"},
		{"negative store", b.Const(ir.Float32, 1), b.Store(0, b.Add(b.Mul(vi, b.Int(5)), b.Add(vj, b.Int(-1))), b.Const(ir.Float32, 1)), "store to buf0 at index [-1..58]"},
	}
	for _, c := range cases {
		st := c.store
		if st == nil {
			st = b.Store(0, b.Add(b.Mul(vi, b.Int(5)), vj), c.load)
		}
		k := &ir.Kernel{Name: "k", B: b, Global: []*ir.Axis{i, j}, Stores: []*ir.Expr{st},
			Bufs: []ir.BufParam{{DType: ir.Float32, Size: 60, Output: true}, {DType: ir.Float32, Size: 40}}}
		wantVerify(t, c.name, k.Verify(), c.err)
	}
}

// wantVerify reports a verification that failed where it should pass
// (want "") or that did not fail with an error holding want.
func wantVerify(t *testing.T, name string, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("%s: %v", name, err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Errorf("%s: error %v, want %q", name, err, want)
	}
}

// TestVerifyBoundsScaledGuard: a concatenation's last piece read after
// merge_axes joined two axes into i (a loop space too large to
// enumerate): the guard bounds i*2, the index reads i*98, and the proof
// substitutes the guarded i*2 inside it (98*i = 49*(i*2)). One position
// more and the load leaves its buffer.
func TestVerifyBoundsScaledGuard(t *testing.T) {
	for _, c := range []struct {
		name  string
		first int64 // the guard: first-1 < i*2
		err   string
	}{
		{"in bounds", 1536, ""},
		{"one row early", 1534, "load from buf1 at index [-98..125439]"},
	} {
		b := ir.NewBuilder()
		i := &ir.Axis{ID: 0, Size: 2048, Kind: ir.AxisGlobal}
		j := &ir.Axis{ID: 1, Size: 98, Kind: ir.AxisGlobal}
		vi, vj := b.Var(i), b.Var(j)
		idx := b.Add(b.Add(b.Mul(vi, b.Int(98)), vj), b.Int(-768*98))
		load := b.Load(1, ir.Float32, idx, b.Lt(b.Int(c.first-1), b.Mul(vi, b.Int(2))))
		st := b.Store(0, b.Add(b.Mul(vi, b.Int(98)), vj), load)
		k := &ir.Kernel{Name: "k", B: b, Global: []*ir.Axis{i, j}, Stores: []*ir.Expr{st},
			Bufs: []ir.BufParam{{DType: ir.Float32, Size: 2048 * 98, Output: true}, {DType: ir.Float32, Size: 1280 * 98}}}
		wantVerify(t, c.name, k.Verify(), c.err)
	}
}

// TestVerifyBoundsThroughDigits: a convolution's windows over flattened
// output rows p = oy*10 + ox (ONNX's conv as a matrix product, rows padded
// from 100 to 104) read x[oy+ky-1][ox+kx-1] of a 10x10 image, guarded
// digit by digit; the index joins the digits back into p, so the proof
// splits p into p/10 and p%10 to use the guard.
func TestVerifyBoundsThroughDigits(t *testing.T) {
	b := ir.NewBuilder()
	pa := &ir.Axis{ID: 0, Size: 104, Kind: ir.AxisGlobal}
	ta := &ir.Axis{ID: 1, Size: 9, Kind: ir.AxisGlobal}
	p, tap := b.Var(pa), b.Var(ta)
	oy, ox := b.Div(b.Mod(p, b.Int(100)), b.Int(10)), b.Mod(p, b.Int(10))
	y, x := b.Add(oy, b.Div(tap, b.Int(3))), b.Add(ox, b.Mod(tap, b.Int(3)))
	idx := b.Add(b.Mul(b.Add(y, b.Int(-1)), b.Int(10)), b.Add(x, b.Int(-1)))
	guard := func(xmax int64) *ir.Expr {
		return b.And(b.Lt(p, b.Int(100)), b.And(b.And(b.Lt(b.Int(0), y), b.Lt(y, b.Int(11))),
			b.And(b.Lt(b.Int(0), x), b.Lt(x, b.Int(xmax)))))
	}
	for _, c := range []struct {
		name  string
		valid *ir.Expr
		err   string
	}{
		{"guarded digits", guard(11), ""},
		{"a column too many", guard(12), "load from buf1 at index [0..100] outside its 100 elements"},
	} {
		st := b.Store(0, b.Add(b.Mul(p, b.Int(9)), tap), b.Load(1, ir.Float32, idx, c.valid))
		k := &ir.Kernel{Name: "k", B: b, Global: []*ir.Axis{pa, ta}, Stores: []*ir.Expr{st},
			Bufs: []ir.BufParam{{DType: ir.Float32, Size: 104 * 9, Output: true}, {DType: ir.Float32, Size: 100}}}
		err := k.Verify()
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: error %v, want %q", c.name, err, c.err)
		}
	}
}

var gpuTarget = ir.Target{GPU: &ir.GPU{MaxWorkGroup: 256, MaxLocal: [3]int64{1024, 1024, 64},
	MaxGroups: [3]int64{1<<31 - 1, 65535, 65535}, LocalMem: 16 << 10, Vec4: true}}

// brokenPlans damage the decisions of the vectorize passes.
var brokenPlans = []struct {
	name, want string
	target     ir.Target
	graph      func() *tensor.Tensor
	run        func(k *ir.Kernel, _ ir.Target) (*ir.Kernel, error)
}{
	// the lanes of a vector accumulator in reverse: b's row read backwards
	{"simd_reversed_acc", "are not isomorphic", ir.CPUTarget,
		func() *tensor.Tensor { return input(8, 64).Dot(input(64, 32)) },
		func(k *ir.Kernel, _ ir.Target) (*ir.Kernel, error) {
			accs := append([][]*ir.Expr{}, k.SIMD.Accs...)
			r := append([]*ir.Expr{}, accs[0]...)
			for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
				r[i], r[j] = r[j], r[i]
			}
			accs[0] = r
			nk := *k
			nk.SIMD = ir.NewSIMD(k.SIMD.Width, accs, k.SIMD.Stores)
			return &nk, nil
		}},
	// a vector store whose lanes are not consecutive outputs
	{"simd_swapped_store", "is not contiguous", ir.CPUTarget,
		func() *tensor.Tensor { return input(8, 64).Dot(input(64, 32)) },
		func(k *ir.Kernel, _ ir.Target) (*ir.Kernel, error) {
			stores := append([][]*ir.Expr{}, k.SIMD.Stores...)
			r := append([]*ir.Expr{}, stores[0]...)
			r[0], r[1] = r[1], r[0]
			stores[0] = r
			nk := *k
			nk.SIMD = ir.NewSIMD(k.SIMD.Width, k.SIMD.Accs, stores)
			return &nk, nil
		}},
	// a float4 load one element off its alignment: x[4t+1 .. 4t+4]
	{"vec4_unaligned", "is not 4-aligned", gpuTarget,
		func() *tensor.Tensor {
			x := input(1, 65)
			return x.Shrink([][2]int{{0, 1}, {0, 64}}).Add(x.Shrink([][2]int{{0, 1}, {1, 65}}))
		},
		func(k *ir.Kernel, _ ir.Target) (*ir.Kernel, error) {
			var loads []*ir.Expr
			ir.Walk(k.Stores, func(e *ir.Expr) {
				if e.Op == ir.OpLoad {
					loads = append(loads, e)
				}
			})
			g := k.Vec4.Loads[0]
			var shifted [4]*ir.Expr
			for u := range shifted {
				for _, l := range loads { // the load one element after lane u
					if l.Src[0].String() == k.B.Add(g[u].Src[0], k.B.Int(1)).String() {
						shifted[u] = l
					}
				}
			}
			nk := *k
			nk.Vec4 = &ir.Vec4{Loads: [][4]*ir.Expr{shifted}, Stores: k.Vec4.Stores}
			return &nk, nil
		}},
	// a non-temporal store at a row start that is not 64-byte aligned
	// (rows of 24 floats): the instruction would fault
	{"stream_unaligned", "is not one aligned line", streamTarget,
		func() *tensor.Tensor { return input(256, 64).Dot(input(64, 24)) },
		func(k *ir.Kernel, _ ir.Target) (*ir.Kernel, error) {
			for i := len(k.SIMD.Stores) - 1; i >= 0; i-- {
				if len(k.SIMD.Stores[i]) == 16 { // the last: at 192*row + 168
					nk := *k
					nk.Stream = &ir.Stream{Runs: []int{i}}
					return &nk, nil
				}
			}
			return nil, fmt.Errorf("no 16-lane store run:\n%s", k.Dump())
		}},
	// streaming an output the kernel reads back (KBLOCK's partial sums)
	{"stream_read_back", "is read by the kernel", ir.Target{Upcast: true, VecWidth: 16, VecRegs: 32, L3: 64 << 10, BufAlign: 4096,
		Choose: func(*ir.Kernel) []ir.Opt {
			return []ir.Opt{{Kind: ir.OptUpcast, Axis: 1, Amt: 16}, {Kind: ir.OptKBlock, Axis: 0, Amt: 16}}
		}},
		func() *tensor.Tensor { return input(64, 64).Dot(input(64, 64)) },
		func(k *ir.Kernel, _ ir.Target) (*ir.Kernel, error) {
			nk := *k
			nk.Stream = &ir.Stream{Runs: []int{0}}
			return &nk, nil
		}},
	// a GROUP of a lane count that is not a power of two
	{"group_of_3", "group of 3 lanes", gpuTarget,
		func() *tensor.Tensor { return input(4, 4096).Sum(false, 1) },
		func(k *ir.Kernel, _ ir.Target) (*ir.Kernel, error) {
			nk := *k
			nk.Group = 3
			return &nk, nil
		}},
}

// TestVerifyCatchesBrokenPlans runs the whole pass table and then a pass
// that damages the vectorize passes' decisions: Verify must refuse it.
func TestVerifyCatchesBrokenPlans(t *testing.T) {
	for _, bp := range brokenPlans {
		s, err := fuse.Create([]*tensor.Node{bp.graph().Node()}, fuse.Options{})
		if err != nil {
			t.Fatal(err)
		}
		k := s.Items[len(s.Items)-1].Kernel
		good, err := ir.OptimizeFor(k, bp.target, nil)
		if err != nil {
			t.Fatalf("%s: %v", bp.name, err)
		}
		if good.SIMD == nil && good.Vec4 == nil && good.Group == 0 {
			t.Fatalf("%s: the passes made no decision to damage:\n%s", bp.name, good.Dump())
		}
		passes := append(ir.Passes(), ir.Pass{Name: bp.name, Run: bp.run})
		_, err = ir.RunPasses(k, bp.target, passes, nil)
		if err == nil || !strings.HasPrefix(err.Error(), "after pass "+bp.name+": ") || !strings.Contains(err.Error(), bp.want) {
			t.Errorf("%s: error %v, want it named and %q", bp.name, err, bp.want)
		}
	}
}

// TestVerifyHoisting: Verify checks where the reduces of a row kernel
// are evaluated (Program.Hoisted); programs whose hoisting was broken one
// way each are refused and the error says how.
func TestVerifyHoisting(t *testing.T) {
	s, err := fuse.Create([]*tensor.Node{input(6, 40).Softmax(-1).Node()}, fuse.Options{HoistReduces: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Items) != 1 {
		t.Fatalf("softmax: %d kernels, want one row kernel", len(s.Items))
	}
	k, err := ir.Optimize(s.Items[0].Kernel, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(k.Global) != 2 {
		t.Fatalf("softmax: %d global axes, want rows and columns", len(k.Global))
	}
	reduces := func(b *ir.Block) (rs []int) {
		for i, e := range b.Nodes {
			if e.Op == ir.OpReduce {
				rs = append(rs, i)
			}
		}
		return rs
	}
	if p := ir.Linearize(k); len(reduces(p.Hoisted[1])) != 2 {
		t.Fatalf("softmax: want max and sum hoisted out of the column loop:\n%s", k.Dump())
	}
	cases := []struct {
		name, want string
		broken     func(p *ir.Program)
	}{
		{"out of the row loop too", "hoisted out of the loop over gidx0", func(p *ir.Program) {
			p.Hoisted[0], p.Hoisted[1] = p.Hoisted[1], p.Hoisted[0]
		}},
		{"sum before max", "evaluated after it", func(p *ir.Program) {
			n := p.Hoisted[1].Nodes
			rs := reduces(p.Hoisted[1])
			n[rs[0]], n[rs[1]] = n[rs[1]], n[rs[0]]
		}},
		{"max left in the column loop", "evaluated after it", func(p *ir.Program) {
			b := p.Hoisted[1]
			i := reduces(b)[0]
			p.Innermost.Nodes = append([]*ir.Expr{b.Nodes[i]}, p.Innermost.Nodes...)
			b.Nodes = append(b.Nodes[:i:i], b.Nodes[i+1:]...)
		}},
	}
	for _, c := range cases {
		p := ir.Linearize(k)
		if err := p.CheckHoisted(k); err != nil {
			t.Fatalf("softmax as linearized: %v", err)
		}
		c.broken(p)
		err := p.CheckHoisted(k)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.want)
		}
	}
}

// TestVerifyReduceGroups: reduces whose first loop is the same are one
// group, one loop nest (Linearize), so they must loop over the same axes.
// A reduce nested in part beside one over all the axes (factor_reduces
// did that to a group when only some members factored: the others lost
// their inner loop, and the C did not compile) is refused.
func TestVerifyReduceGroups(t *testing.T) {
	s, err := fuse.Create([]*tensor.Node{input(1, 2, 8, 8).Conv2d(input(4, 2, 3, 3), nil, tensor.ConvOpts{}).Node()}, fuse.Options{})
	if err != nil {
		t.Fatal(err)
	}
	k := s.Items[len(s.Items)-1].Kernel // the conv's sum over (Cin, kh, kw)
	if err := k.Verify(); err != nil {
		t.Fatalf("the conv as lowered: %v", err)
	}
	done := false
	split := k.Rewrite(func(b *ir.Builder, e *ir.Expr) *ir.Expr {
		arg, ok := e.Arg.(*ir.ReduceArg)
		if e.Op != ir.OpReduce || !ok || done || len(arg.Axes) < 2 {
			return nil
		}
		done = true
		n := len(arg.Axes)
		nested := b.Reduce(&ir.ReduceArg{Op: arg.Op, Axes: arg.Axes[:n-1]}, b.Reduce(&ir.ReduceArg{Op: arg.Op, Axes: arg.Axes[n-1:]}, e.Src[0]))
		return b.Add(b.Reduce(arg, e.Src[0]), b.Mul(nested, b.Const(e.DType, 0)))
	})
	if !done {
		t.Fatal("the conv has no reduce over two or more axes")
	}
	if err := split.Verify(); err == nil || !strings.Contains(err.Error(), "share their first loop") {
		t.Errorf("a reduce over part of another's axes, same first loop: Verify says %v", err)
	}
	// each reduce over its own axes is a group of its own: allowed
	own := k.Rewrite(func(b *ir.Builder, e *ir.Expr) *ir.Expr {
		arg, ok := e.Arg.(*ir.ReduceArg)
		if e.Op != ir.OpReduce || !ok || len(arg.Axes) < 2 {
			return nil
		}
		n := len(arg.Axes)
		return b.Reduce(&ir.ReduceArg{Op: arg.Op, Axes: arg.Axes[:n-1]}, b.Reduce(&ir.ReduceArg{Op: arg.Op, Axes: arg.Axes[n-1:]}, e.Src[0]))
	})
	if err := own.Verify(); err != nil {
		t.Errorf("every reduce nested the same way: %v", err)
	}
}

// TestPanickingPassIsAnError: a pass that panics, or whose kernel makes
// Verify panic, fails the kernel's optimization with an error that names
// the pass and the site, and the process goes on (passes run on every
// core, where a panic would end it).
func TestPanickingPassIsAnError(t *testing.T) {
	k := guardedKernel(t, input(6, 10).Pad([][2]int{{2, 2}, {0, 0}}, 0).Sum(false, 0))
	boom := ir.Pass{Name: "boom", Run: func(k *ir.Kernel, _ ir.Target) (*ir.Kernel, error) {
		var none []*ir.Expr
		_ = none[len(k.Stores)] // an index past the end
		return k, nil
	}}
	_, err := ir.RunPasses(k, ir.CPUTarget, append(ir.Passes(), boom), nil)
	if err == nil || !strings.Contains(err.Error(), "pass boom: internal error (runtime error: index out of range") ||
		!strings.Contains(err.Error(), "verify_test.go:") {
		t.Errorf("a panicking pass: error %v", err)
	}
	// a pass whose kernel makes Verify panic: a reduce without its
	// argument under the first store
	malformed := ir.Pass{Name: "malformed", Run: func(k *ir.Kernel, _ ir.Target) (*ir.Kernel, error) {
		nk, s := *k, k.Stores[0]
		bad := &ir.Expr{Op: ir.OpReduce, DType: s.Src[1].DType, Src: []*ir.Expr{s.Src[1]}}
		nk.Stores = append([]*ir.Expr{{Op: ir.OpStore, DType: s.DType, Src: []*ir.Expr{s.Src[0], bad}, Arg: s.Arg}}, k.Stores[1:]...)
		return &nk, nil
	}}
	_, err = ir.RunPasses(k, ir.CPUTarget, append(ir.Passes(), malformed), nil)
	if err == nil || !strings.Contains(err.Error(), "after pass malformed: internal error (interface conversion") {
		t.Errorf("a kernel that Verify panics on: error %v", err)
	}
}
