package realize

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"tgc/pkg/fuse"
	"tgc/pkg/ir"
	"tgc/pkg/render"
	"tgc/pkg/tensor"
)

// symEngines opens GO, CPU, CL and CUDA (those available).
func symEngines(t *testing.T) []*Engine {
	var out []*Engine
	for _, dev := range []string{"GO", "CPU", "CL", "CUDA"} {
		e, err := Open(dev, Options{})
		if err != nil {
			t.Logf("skipping %s: %v", dev, err)
			continue
		}
		out = append(out, e)
	}
	return out
}

func randVals(r *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = r.Float64()*2 - 1
	}
	return v
}

// attendRef is one query's attention over the first n rows of keys
// (dim columns) in float64: softmax(keys[:n]·q)·keys[:n].
func attendRef(keys, q []float64, n, dim int) []float64 {
	s := make([]float64, n)
	m := math.Inf(-1)
	for t := range n {
		for d := range dim {
			s[t] += keys[t*dim+d] * q[d]
		}
		m = max(m, s[t])
	}
	var sum float64
	for t := range s {
		s[t] = math.Exp(s[t] - m)
		sum += s[t]
	}
	out := make([]float64, dim)
	for t := range n {
		for d := range dim {
			out[d] += s[t] / sum * keys[t*dim+d]
		}
	}
	return out
}

// attendHeadsRef is attendRef for each head of a cache of rows (position,
// head, dim), over the first n positions, the heads' outputs in order.
func attendHeadsRef(keys, q []float64, n, heads, hd int) []float64 {
	var out []float64
	for h := range heads {
		hk := make([]float64, n*hd)
		for p := range n {
			copy(hk[p*hd:], keys[(p*heads+h)*hd:(p*heads+h+1)*hd])
		}
		out = append(out, attendRef(hk, q[h*hd:(h+1)*hd], n, hd)...)
	}
	return out
}

// cpuRandom opens a CPU context and a realized tensor of the given shape
// filled by randVals from a seeded stream (scaled by scale), returning the
// stream for more values and the tensor's values; it skips the test where
// the host has no C compiler.
func cpuRandom(t *testing.T, seed uint64, scale float64, shape ...int) (*tensor.Context, *rand.Rand, []float64, *tensor.Tensor) {
	t.Helper()
	e, err := Open("CPU", Options{})
	if err != nil {
		t.Skip(err)
	}
	ctx := tensor.NewContext(e)
	r := rand.New(rand.NewPCG(seed, seed+1))
	n := 1
	for _, d := range shape {
		n *= d
	}
	vals := randVals(r, n)
	for i := range vals {
		vals[i] *= scale
	}
	x, err := ctx.FromFloats(ir.Float32, shape, vals)
	if err != nil {
		t.Fatal(err)
	}
	return ctx, r, vals, x.Contiguous().Realize()
}

// bound is a variable of range [lo, hi] bound to val.
func bound(t *testing.T, name string, lo, hi, val int) tensor.SInt {
	t.Helper()
	v, err := tensor.NewVariable(name, lo, hi)
	if err != nil {
		t.Fatal(err)
	}
	sv, err := v.Bind(val)
	if err != nil {
		t.Fatal(err)
	}
	return sv
}

// symKernels schedules x and returns its kernels with a symbolic loop.
func symKernels(t *testing.T, x *tensor.Tensor, opts fuse.Options) []*ir.Kernel {
	t.Helper()
	s, err := fuse.Create([]*tensor.Node{x.Node()}, opts)
	if err != nil {
		t.Fatal(err)
	}
	var ks []*ir.Kernel
	for _, it := range s.Items {
		if it.Kernel != nil && it.Kernel.HasSym() {
			ks = append(ks, it.Kernel)
		}
	}
	if len(ks) == 0 {
		t.Fatal("no symbolic kernel")
	}
	return ks
}

// xeonTarget is an AVX-512 target with the Xeon guest's caches (2 MiB of
// L2 per core, 4 MiB kept for the next kernel).
var xeonTarget = ir.Target{Upcast: true, VecWidth: 16, VecRegs: 32, L1: 48 << 10, L2: 2 << 20, L3: 4 << 20}

// TestSymbolicAttention: a decode-style step whose attended length is a
// variable (start_pos+1) writes its key into a cache slot at start_pos
// (an assign into a symbolic view) and attends over the positions so
// far. Every position gives the float64 reference's values, and after the
// first step no kernel is scheduled or compiled again: the schedule is
// cached once for the variable, not per value.
func TestSymbolicAttention(t *testing.T) {
	every := make([]int, 24)
	for i := range every {
		every[i] = i
	}
	for _, c := range []struct {
		ctxLen    int
		positions []int // in order; the slots between stay zero in both
	}{
		{24, every},
		{300, []int{0, 1, 2, 3, 130, 257, 299}}, // long enough to be grouped on a GPU
	} {
		for _, e := range symEngines(t) {
			t.Run(fmt.Sprintf("%s/%d", e.Dev.Name(), c.ctxLen), func(t *testing.T) { testSymbolicAttention(t, e, c.ctxLen, c.positions) })
		}
	}
}

func testSymbolicAttention(t *testing.T, e *Engine, ctxLen int, positions []int) {
	const dim = 8
	{
		{
			ctx := tensor.NewContext(e)
			r := rand.New(rand.NewPCG(1, 2))
			cache, err := ctx.FromFloats(ir.Float32, []int{ctxLen, dim}, make([]float64, ctxLen*dim))
			if err != nil {
				t.Fatal(err)
			}
			cache = cache.Contiguous().Realize()
			keys := make([]float64, ctxLen*dim) // the reference's cache
			v, err := tensor.NewVariable("start_pos", 0, ctxLen-1)
			if err != nil {
				t.Fatal(err)
			}
			var scheduled, compiled int
			for _, pos := range positions {
				k := randVals(r, dim)
				q := randVals(r, dim)
				copy(keys[pos*dim:], k)
				sp, err := v.Bind(pos)
				if err != nil {
					t.Fatal(err)
				}
				kt, _ := ctx.FromFloats(ir.Float32, []int{1, dim}, k)
				qt, _ := ctx.FromFloats(ir.Float32, []int{dim}, q)
				slot := cache.ShrinkDims([][2]tensor.SInt{{sp, sp.Add(1)}, {tensor.Int(0), tensor.Int(dim)}})
				if err := slot.Assign(kt).Err(); err != nil {
					t.Fatal(err)
				}
				past := cache.ShrinkDims([][2]tensor.SInt{{tensor.Int(0), sp.Add(1)}, {tensor.Int(0), tensor.Int(dim)}})
				if pos > 0 {
					if d := past.Dims()[0]; !d.IsSym() || d.String() != "start_pos+1" {
						t.Fatalf("attended length %v, want start_pos+1", d)
					}
				}
				out := past.Dot(qt).Softmax(-1).Dot(past)
				got, err := out.Floats()
				if err != nil {
					t.Fatal(err)
				}
				near(t, "attention", got, attendRef(keys, q, pos+1, dim), 1e-5)
				if pos == 2 {
					scheduled, compiled = e.Stats.Scheduled, e.Stats.Compiled
				}
			}
			if e.Stats.Scheduled != scheduled || e.Stats.Compiled != compiled {
				t.Errorf("positions after 2 scheduled %d and compiled %d kernels, want 0", e.Stats.Scheduled-scheduled, e.Stats.Compiled-compiled)
			}
			all, err := cache.Floats()
			if err != nil {
				t.Fatal(err)
			}
			near(t, "cache", all, keys, 1e-7)
		}
	}
}

// TestSymbolicValue: a variable read as a value (a RoPE angle start_pos*f)
// and a symbolic offset into a table give the bound value's results.
func TestSymbolicValue(t *testing.T) {
	for _, e := range symEngines(t) {
		t.Run(e.Dev.Name(), func(t *testing.T) {
			ctx := tensor.NewContext(e)
			table := ctx.Arange(0, 40, 1, ir.Float32).Reshape(10, 4).Contiguous().Realize()
			v, _ := tensor.NewVariable("pos", 1, 8)
			for pos := 1; pos <= 8; pos++ {
				sp, _ := v.Bind(pos)
				row := table.ShrinkDims([][2]tensor.SInt{{sp, sp.Add(2)}, {tensor.Int(0), tensor.Int(4)}})
				val := ctx.VarTensor(sp.Add(3)).Cast(ir.Float32)
				got, err := row.Mul(val).Floats()
				if err != nil {
					t.Fatal(err)
				}
				var want []float64
				for i := pos * 4; i < pos*4+8; i++ {
					want = append(want, float64(i*(pos+3)))
				}
				near(t, "row", got, want, 0)
			}
		})
	}
}

// TestSymbolicJit: a TinyJit function taking a bound variable replays
// with each call's value, without running the function or scheduling.
func TestSymbolicJit(t *testing.T) {
	const n = 12
	for _, e := range symEngines(t) {
		t.Run(e.Dev.Name(), func(t *testing.T) {
			ctx := tensor.NewContext(e)
			vals := make([]float64, n)
			for i := range vals {
				vals[i] = float64(i + 1)
			}
			x, _ := ctx.FromFloats(ir.Float32, []int{n}, vals)
			x = x.Realize()
			v, _ := tensor.NewVariable("len", 1, n-1)
			runs := 0
			j := NewJit(ctx, "prefix_sum", func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
				runs++
				sp, _ := in[0].BoundVar()
				return []*tensor.Tensor{x.ShrinkDims([][2]tensor.SInt{{tensor.Int(0), sp.Add(1)}}).Sum(false)}, nil
			})
			for k := 1; k < n; k++ {
				sp, _ := v.Bind(k)
				out, err := j.Call(ctx.VarTensor(sp))
				if err != nil {
					t.Fatal(err)
				}
				got, err := out[0].Item()
				if err != nil {
					t.Fatal(err)
				}
				if want := float64((k + 1) * (k + 2) / 2); got != want {
					t.Fatalf("len %d: sum %v, want %v", k, got, want)
				}
			}
			if runs != 2 {
				t.Errorf("the function ran %d times, want 2 (then replays)", runs)
			}
		})
	}
}

// TestSymbolicErrors: what symbolic dimensions cannot do is refused with
// a message, before anything runs.
func TestSymbolicErrors(t *testing.T) {
	ctx := tensor.NewContext(nil)
	x := ctx.Full([]int{16, 4}, 1, ir.Float32)
	v, _ := tensor.NewVariable("n", 1, 10)
	sp, _ := v.Bind(3)
	past := x.ShrinkDims([][2]tensor.SInt{{tensor.Int(0), sp.Add(1)}, {tensor.Int(0), tensor.Int(4)}})
	cases := []struct {
		name string
		got  *tensor.Tensor
		want string
	}{
		{"broadcast against a constant", past.Add(x.Shrink([][2]int{{0, 11}, {0, 4}})), "cannot be broadcast"},
		{"merge into another dim", past.Permute(1, 0).Reshape(44), "symbolic dimension must stay"},
		{"flip", past.Flip(0), "cannot flip the symbolic dimension"},
		{"pad", past.Pad([][2]int{{1, 0}, {0, 0}}, 0), "cannot pad the symbolic dimension"},
		{"past the end", x.ShrinkDims([][2]tensor.SInt{{tensor.Int(0), sp.Add(7)}, {tensor.Int(0), tensor.Int(4)}}), "out of range"},
		{"expand assign", past.Assign(past), ""},
	}
	for _, c := range cases {
		err := c.got.Err()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
	if _, err := v.Bind(11); err == nil {
		t.Error("binding outside the range was accepted")
	}
	other, _ := v.Bind(4)
	both := past.Sum(false).Add(x.ShrinkDims([][2]tensor.SInt{{tensor.Int(0), other.Add(1)}, {tensor.Int(0), tensor.Int(4)}}).Sum(false))
	if _, err := tensor.Variables(tensor.Toposort([]*tensor.Node{both.Node()})); err == nil || !strings.Contains(err.Error(), "bound to 3 and to 4") {
		t.Errorf("two values of one variable: %v", err)
	}
}

// TestSymbolicAttentionHeads is a decode step's multi-head attention over
// start_pos+1 cached positions, checked against float64 at every position
// on every engine. Its kernels have symbolic loops; the heuristic still
// blocks their constant ones (the value product's head lanes, the scores'
// dot), never a symbolic one.
func TestSymbolicAttentionHeads(t *testing.T) {
	const ctxLen, heads, hd = 20, 4, 32
	for _, e := range symEngines(t) {
		t.Run(e.Dev.Name(), func(t *testing.T) {
			ctx := tensor.NewContext(e)
			r := rand.New(rand.NewPCG(3, 4))
			cache, err := ctx.FromFloats(ir.Float32, []int{ctxLen, heads, hd}, make([]float64, ctxLen*heads*hd))
			if err != nil {
				t.Fatal(err)
			}
			cache = cache.Contiguous().Realize()
			keys := make([]float64, ctxLen*heads*hd)
			v, err := tensor.NewVariable("start_pos", 0, ctxLen-1)
			if err != nil {
				t.Fatal(err)
			}
			all := func(n tensor.SInt) [][2]tensor.SInt {
				return [][2]tensor.SInt{{tensor.Int(0), n}, {tensor.Int(0), tensor.Int(heads)}, {tensor.Int(0), tensor.Int(hd)}}
			}
			blocked := false
			for pos := 0; pos < ctxLen; pos++ {
				k := randVals(r, heads*hd)
				q := randVals(r, heads*hd)
				copy(keys[pos*heads*hd:], k)
				sp, err := v.Bind(pos)
				if err != nil {
					t.Fatal(err)
				}
				kt, _ := ctx.FromFloats(ir.Float32, []int{1, heads, hd}, k)
				qt, _ := ctx.FromFloats(ir.Float32, []int{1, heads, hd}, q)
				slot := all(sp.Add(1))
				slot[0][0] = sp
				if err := cache.ShrinkDims(slot).Assign(kt).Err(); err != nil {
					t.Fatal(err)
				}
				past := cache.ShrinkDims(all(sp.Add(1))).Permute(1, 0, 2) // (heads, T, hd)
				scores := past.Mul(qt.Permute(1, 0, 2)).Sum(false, 2)     // (heads, T)
				out := scores.Softmax(-1).Unsqueeze(2).Mul(past).Sum(false, 1)
				if err := out.Err(); err != nil {
					t.Fatal(err)
				}
				if pos == ctxLen-1 {
					blocked = symKernelsBlocked(t, out)
				}
				got, err := out.Floats()
				if err != nil {
					t.Fatal(err)
				}
				near(t, "attention", got, attendHeadsRef(keys, q, pos+1, heads, hd), 1e-5)
			}
			if !blocked {
				t.Error("the heuristic blocked no constant loop of the symbolic attention kernels")
			}
		})
	}
}

// symKernelsBlocked schedules x's kernels and checks the heuristic's opts
// for those with symbolic loops: none on a symbolic axis, and true when
// some kernel got any.
func symKernelsBlocked(t *testing.T, x *tensor.Tensor) bool {
	t.Helper()
	s, err := fuse.Create([]*tensor.Node{x.Node()}, fuse.Options{})
	if err != nil {
		t.Fatal(err)
	}
	blocked := false
	for _, it := range s.Items {
		k := it.Kernel
		if k == nil || !k.HasSym() {
			continue
		}
		opts := ir.CPUTarget.HeuristicOpts(k)
		for _, o := range opts {
			sym := false
			if o.Kind == ir.OptUnroll || o.Kind == ir.OptKBlock {
				sym = k.ReduceAxes()[o.Axis].Sym != nil
			} else if o.Axis < len(k.Global) {
				sym = k.Global[o.Axis].Sym != nil
			}
			if sym {
				t.Errorf("%s: opt %s on a symbolic loop", k.Name, o)
			}
		}
		blocked = blocked || len(opts) > 0
	}
	return blocked
}

// TestDecodeAttentionRowSlices: a decode step's attention with a 110M
// model's heads (12 of 64) over a cache of 1024 positions, for an AVX-512
// target with the Xeon guest's L2 (2 MiB per core, 4 MiB kept for the
// next kernel). The value sum Σ_p P[h,p]·V[p,h,:] takes each head's 64
// columns whole and two heads a piece (so each cached row's slice is read
// in one pass), not 32 columns and six heads as before; with 8 lanes the
// 64 columns are 8 vectors, one head a piece (16 columns before). The
// scores q·K[p] prefetch the next cached row (3 KB) a line at a time. The
// values of both kernels, as the CPU compiles them for this host, agree
// with the float64 reference at the cache's end.
func TestDecodeAttentionRowSlices(t *testing.T) {
	const ctxLen, heads, hd = 1024, 12, 64
	ctx, r, keys, cache := cpuRandom(t, 5, 1, ctxLen, heads, hd)
	const pos = 700
	sp := bound(t, "start_pos", 0, ctxLen-1, pos)
	q := randVals(r, heads*hd)
	qt, _ := ctx.FromFloats(ir.Float32, []int{1, heads, hd}, q)
	// models/llama.tg's one-query form: the scores (positions, heads), so
	// that their kernel reads the cached rows whole, one after another.
	past := cache.ShrinkDims([][2]tensor.SInt{{tensor.Int(0), sp.Add(1)}, {tensor.Int(0), tensor.Int(heads)}, {tensor.Int(0), tensor.Int(hd)}})
	scores := past.Mul(qt).Sum(false, 2).Permute(1, 0) // (heads, positions)
	out := scores.Softmax(-1).Unsqueeze(2).Mul(past.Permute(1, 0, 2)).Sum(false, 1)
	if err := out.Err(); err != nil {
		t.Fatal(err)
	}
	xeon := xeonTarget
	var values, rows *ir.Kernel
	for _, k := range symKernels(t, out, fuse.Options{}) {
		if len(k.Global) != 2 {
			continue
		}
		switch {
		case k.Global[0].Size == heads && k.Global[1].Size == hd:
			values = k
		case k.Global[1].Size == heads:
			rows = k
		}
	}
	if values == nil || rows == nil {
		t.Fatal("no value-sum or scores kernel among the symbolic ones")
	}
	upcasts := func(k *ir.Kernel, tg ir.Target) map[int]int64 {
		ok, err := ir.OptimizeFor(k, tg, nil)
		if err != nil {
			t.Fatal(err)
		}
		m := map[int]int64{}
		for _, o := range ok.Opts {
			if o.Kind == ir.OptUpcast {
				m[o.Axis] = o.Amt
			}
		}
		return m
	}
	if u := upcasts(values, xeon); u[1] != hd || u[0] != 2 {
		t.Errorf("16 lanes: the value sum upcasts %v (axis: amount), want the 64 columns whole and 2 heads", u)
	}
	avx2 := xeon
	avx2.VecWidth, avx2.VecRegs = 8, 16
	if u := upcasts(values, avx2); u[1] != hd || u[0] > 1 {
		t.Errorf("8 lanes: the value sum upcasts %v, want the 64 columns whole (8 vectors) and one head", u)
	}
	ok, err := ir.OptimizeFor(rows, xeon, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ahead []ir.PrefetchAt
	if ok.Prefetch != nil {
		for _, at := range ok.Prefetch.Loads {
			ahead = append(ahead, at)
		}
	}
	if len(ahead) != 2 {
		t.Errorf("scores: %d loads prefetched, want 2 (the two lines of a head's 64 floats an iteration of its sum reads)", len(ahead))
	}
	for _, at := range ahead {
		if at.Next != ok.Global[0] || at.Dist != heads*hd || at.Ahead != 1 || at.Every != 1 {
			t.Errorf("scores: prefetch %d %s (%d) ahead every %d, want the next row (%d) every iteration", at.Ahead, at.Next.Name(), at.Dist, at.Every, heads*hd)
		}
	}
	got, err := out.Floats()
	if err != nil {
		t.Fatal(err)
	}
	near(t, "attention", got, attendHeadsRef(keys, q, pos+1, heads, hd), 1e-5)

	// A float16 cache (tgc generate --kv-cache f16: 1.5 MB, within L2 by
	// size): its scores prefetch the row 2 ahead (its 1.5 KB), one load a
	// line (a line holds 32 halves), read cold in a decode step as the
	// float32 cache is.
	half := cache.Cast(ir.Float16).Contiguous().Realize().ShrinkDims([][2]tensor.SInt{{tensor.Int(0), sp.Add(1)}, {tensor.Int(0), tensor.Int(heads)}, {tensor.Int(0), tensor.Int(hd)}}).Cast(ir.Float32)
	scores16 := half.Mul(qt).Sum(false, 2).Permute(1, 0).Softmax(-1)
	var rows16 *ir.Kernel
	for _, k := range symKernels(t, scores16, fuse.Options{}) {
		if len(k.Global) == 2 && k.Global[1].Size == heads {
			rows16 = k
		}
	}
	if rows16 == nil {
		t.Fatal("no float16 scores kernel")
	}
	if ok, err = ir.OptimizeFor(rows16, xeon, nil); err != nil {
		t.Fatal(err)
	}
	ahead = ahead[:0]
	if ok.Prefetch != nil {
		for _, at := range ok.Prefetch.Loads {
			ahead = append(ahead, at)
		}
	}
	if len(ahead) != 1 || ahead[0].Next != ok.Global[0] || ahead[0].Dist != heads*hd || ahead[0].Ahead != 2 {
		t.Errorf("float16 scores: prefetches %+v, want one load a line, the row 2 ahead", ahead)
	}
}

// TestSymbolicSoftmaxVecLoops: a softmax over rows of symbolic length (a
// prompt chunk's attention over start_pos+n positions) leaves the simd
// pass scalar; the vec_loops pass marks its three loops (the maximum's,
// the sum's, the scaling's) for the C compiler to vectorize, and the C
// renderer writes an omp simd pragma before each, the reductions named.
// The CPU's values (lengths 1, 17 and 37: one lane, and tails the 16
// lanes do not divide) agree with float64's; a softmax of constant length
// gets no such plan, and the plan's check refuses a loop it does not
// cover.
func TestSymbolicSoftmaxVecLoops(t *testing.T) {
	const rows, maxLen = 6, 40
	ctx, _, vals, x := cpuRandom(t, 7, 8, rows, maxLen)
	xeon := xeonTarget
	for _, n := range []int{1, 17, 37} {
		sn := bound(t, "n", 1, maxLen, n)
		out := x.ShrinkDims([][2]tensor.SInt{{tensor.Int(0), tensor.Int(rows)}, {tensor.Int(0), sn}}).Softmax(-1)
		if n == 17 {
			ks := symKernels(t, out, fuse.Options{HoistReduces: true})
			ok, err := ir.OptimizeFor(ks[len(ks)-1], xeon, nil)
			if err != nil {
				t.Fatal(err)
			}
			if ok.VecLoops == nil || len(ok.VecLoops.Axes) != 3 || ok.VecLoops.Width != 16 {
				t.Fatalf("vec loops %+v, want the maximum's, the sum's and the scaling's loops in 16 lanes", ok.VecLoops)
			}
			src := render.Render(render.C, ok)
			for _, want := range []string{"#pragma omp simd simdlen(16) reduction(max:", "#pragma omp simd simdlen(16) reduction(+:", "#pragma omp simd simdlen(16)\n"} {
				if !strings.Contains(src, want) {
					t.Errorf("no %q in\n%s", want, src)
				}
			}
			bad := *ok
			bad.VecLoops = &ir.VecLoops{Width: 16, Axes: []*ir.Axis{ok.Global[0]}} // the loop split across cores
			if err := bad.Verify(); err == nil {
				t.Error("Verify accepted a vec loop over the outer global loop")
			}
		}
		all, err := out.Floats() // the rows at their longest, the first n of each computed
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != rows*maxLen {
			t.Fatalf("softmax of %d: %d values, want %d rows of %d", n, len(all), rows, maxLen)
		}
		var got, want []float64
		for i := range rows {
			got = append(got, all[i*maxLen:i*maxLen+n]...)
			row := vals[i*maxLen : i*maxLen+n]
			m := math.Inf(-1)
			for _, y := range row {
				m = max(m, y)
			}
			var sum float64
			for _, y := range row {
				sum += math.Exp(y - m)
			}
			for _, y := range row {
				want = append(want, math.Exp(y-m)/sum)
			}
		}
		near(t, fmt.Sprintf("softmax of %d", n), got, want, 1e-6)
	}
	fixed, _ := ctx.FromFloats(ir.Float32, []int{rows, maxLen}, vals)
	s, err := fuse.Create([]*tensor.Node{fixed.Softmax(-1).Node()}, fuse.Options{HoistReduces: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range s.Items {
		if it.Kernel == nil {
			continue
		}
		ok, err := ir.OptimizeFor(it.Kernel, xeon, nil)
		if err != nil {
			t.Fatal(err)
		}
		if ok.VecLoops != nil {
			t.Errorf("%s: vec loops %v in a kernel of constant sizes", ok.Name, ok.VecLoops.Axes)
		}
	}
}

// TestChunkScoresBlocked: a prompt chunk's attention scores (per head, the
// chunk's queries times the keys of start_pos+chunk positions, both read
// along head_dim) take 4 queries a block and the 64-long sums in one
// vector each, at 16 and 8 lanes (symDotOpts). The CPU's scores agree
// with float64's.
func TestChunkScoresBlocked(t *testing.T) {
	const ctxLen, heads, hd, chunk = 64, 3, 64, 8
	ctx, r, keys, cache := cpuRandom(t, 9, 1, heads, ctxLen, hd)
	qs := randVals(r, heads*chunk*hd)
	q, _ := ctx.FromFloats(ir.Float32, []int{heads, chunk, hd}, qs)
	const n = 37
	sn := bound(t, "n", 1, ctxLen, n)
	past := cache.ShrinkDims([][2]tensor.SInt{{tensor.Int(0), tensor.Int(heads)}, {tensor.Int(0), sn}, {tensor.Int(0), tensor.Int(hd)}})
	scores := q.Dot(past.Transpose(1, 2)) // (heads, chunk, n)
	ks := symKernels(t, scores, fuse.Options{})
	k := ks[len(ks)-1]
	for _, w := range []int{16, 8} {
		ok, err := ir.OptimizeFor(k, ir.Target{Upcast: true, VecWidth: w, VecRegs: 32}, nil)
		if err != nil {
			t.Fatal(err)
		}
		o := ok.Opts
		if len(o) != 2 || o[0].Kind != ir.OptUpcast || o[0].Amt != 4 || o[1].Kind != ir.OptUnroll || o[1].Amt != int64(w) {
			t.Errorf("%d lanes: opts %s, want the queries by 4 and the sum in one vector (UPCAST(q,4) UNROLL(0,%d))", w, ir.FormatOpts(o), w)
		}
	}
	all, err := scores.Floats() // the rows at their longest, the first n of each computed
	if err != nil {
		t.Fatal(err)
	}
	var got, want []float64
	for h := range heads {
		for i := range chunk {
			row := all[(h*chunk+i)*ctxLen:]
			for p := range n {
				var dot float64
				for d := range hd {
					dot += qs[(h*chunk+i)*hd+d] * keys[(h*ctxLen+p)*hd+d]
				}
				got, want = append(got, row[p]), append(want, dot)
			}
		}
	}
	near(t, "scores", got, want, 1e-4)
}
