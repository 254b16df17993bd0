package realize

import (
	"math"
	"math/rand/v2"
	"testing"

	"tgc/pkg/autograd"
	"tgc/pkg/backend"
	"tgc/pkg/fuse"
	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// TestPackedMatmul: on the CPU a large matmul's right operand is repacked
// into column panels (one extra kernel); the product, and the gradients
// through it, equal the GO device's, which does not repack.
func TestPackedMatmul(t *testing.T) {
	cpu, err := Open("CPU", Options{})
	if err != nil {
		t.Skipf("CPU unavailable: %v", err)
	}
	goe, _ := Open("GO", Options{})
	r := rand.New(rand.NewPCG(5, 5))
	va, vb := make([]float64, 96*256), make([]float64, 256*256)
	for i := range va {
		va[i] = r.Float64() - 0.5
	}
	for i := range vb {
		vb[i] = r.Float64() - 0.5
	}
	run := func(e *Engine) (out, ga, gb []float64, kernels int) {
		ctx := tensor.NewContext(e)
		a, _ := ctx.FromFloats(ir.Float32, []int{96, 256}, va)
		b, _ := ctx.FromFloats(ir.Float32, []int{256, 256}, vb)
		c := a.Dot(b)
		s, err := fuse.Create([]*tensor.Node{c.Node()}, fuse.Options{})
		if err != nil {
			t.Fatal(err)
		}
		kernels = len(s.Items)
		g, err := autograd.Gradient(c.Mul(c).Sum(false), []*tensor.Tensor{a, b})
		if err != nil {
			t.Fatal(err)
		}
		if out, err = c.Floats(); err != nil {
			t.Fatal(err)
		}
		if ga, err = g[0].Floats(); err != nil {
			t.Fatal(err)
		}
		if gb, err = g[1].Floats(); err != nil {
			t.Fatal(err)
		}
		return
	}
	o1, a1, b1, k1 := run(goe)
	o2, a2, b2, k2 := run(cpu)
	if k1 != 1 || k2 != 2 {
		t.Errorf("kernels for the product: GO %d (want 1), CPU %d (want 2: pack + product)", k1, k2)
	}
	for name, pair := range map[string][2][]float64{"product": {o1, o2}, "grad a": {a1, a2}, "grad b": {b1, b2}} {
		for i := range pair[0] {
			if d := math.Abs(pair[0][i] - pair[1][i]); d > 1e-3*(1+math.Abs(pair[0][i])) {
				t.Errorf("%s element %d: GO %v, CPU %v", name, i, pair[0][i], pair[1][i])
				break
			}
		}
	}
}

// TestDemoRandMatmul: the introductory demo, Tensor.rand(N, N) ·
// Tensor.rand(N, N). The left operand's random numbers are stored first
// (the product would hash each of them once per column it meets), the
// right one's are drawn by the panel copy: three kernels, the product one
// of them, with no RAND inside it; its values are the float64 product of
// the same random numbers.
func TestDemoRandMatmul(t *testing.T) {
	cpu, err := Open("CPU", Options{})
	if err != nil {
		t.Skipf("CPU unavailable: %v", err)
	}
	ctx := tensor.NewContext(cpu)
	const n = 128
	a, b := ctx.Rand(n, n), ctx.Rand(n, n)
	c := a.Dot(b)
	s, err := fuse.Create([]*tensor.Node{c.Node()}, fuse.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reduces := 0
	for _, it := range s.Items {
		k := it.Kernel
		if k.Kind() != "r" {
			continue
		}
		reduces++
		draws := false
		ir.Walk(k.Stores, func(e *ir.Expr) { draws = draws || e.Op == ir.OpParam })
		if draws {
			t.Errorf("the product %s draws random numbers:\n%s", k.Name, k.Dump())
		}
	}
	if len(s.Items) != 3 || reduces != 1 {
		t.Errorf("%d kernels (%d reduces), want 3 (rand, pack, product):\n%s", len(s.Items), reduces, s.Dump())
	}
	got, err := c.Floats()
	if err != nil {
		t.Fatal(err)
	}
	va, err := a.Floats()
	if err != nil {
		t.Fatal(err)
	}
	vb, err := b.Floats()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			want := 0.0
			for k := 0; k < n; k++ {
				want += va[i*n+k] * vb[k*n+j]
			}
			if d := math.Abs(got[i*n+j] - want); d > 1e-4*want {
				t.Fatalf("c[%d,%d] = %v, want %v", i, j, got[i*n+j], want)
			}
		}
	}
}

// TestStoredTransposedOperand: q @ k.T over a stack of heads (attention's
// scores) stores k.T first when q has many rows (one copy kernel, then the
// product), and not for one row; the values equal a float64 reference
// either way.
func TestStoredTransposedOperand(t *testing.T) {
	e, err := Open("CPU", Options{})
	if err != nil {
		t.Skipf("CPU unavailable: %v", err)
	}
	const heads, n, k = 3, 24, 16
	r := rand.New(rand.NewPCG(7, 8))
	for _, m := range []int{1, 32} {
		vq, vk := make([]float64, heads*m*k), make([]float64, heads*n*k)
		for i := range vq {
			vq[i] = r.Float64() - 0.5
		}
		for i := range vk {
			vk[i] = r.Float64() - 0.5
		}
		ctx := tensor.NewContext(e)
		q, _ := ctx.FromFloats(ir.Float32, []int{heads, m, k}, vq)
		kk, _ := ctx.FromFloats(ir.Float32, []int{heads, n, k}, vk)
		c := q.Dot(kk.Transpose(1, 2))
		s, err := fuse.Create([]*tensor.Node{c.Node()}, fuse.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if want := map[int]int{1: 1, 32: 2}[m]; len(s.Items) != want {
			t.Errorf("%d rows: %d kernels, want %d", m, len(s.Items), want)
		}
		got, err := c.Floats()
		if err != nil {
			t.Fatal(err)
		}
		want := make([]float64, heads*m*n)
		for h := range heads {
			for i := range m {
				for j := range n {
					for x := range k {
						want[(h*m+i)*n+j] += vq[(h*m+i)*k+x] * vk[(h*n+j)*k+x]
					}
				}
			}
		}
		near(t, "scores", got, want, 1e-5)
	}
}

// TestRowsTimesTransposedWeight: x @ w.T with w a (N, K) weight larger than
// x's rows is computed as (w @ x.T).T, so the panels packed on the CPU are
// x's, never the weight's: no kernel writes K*N elements, and the product
// is stored as (N, rows). A single row stays one matrix-vector kernel. The
// values and the gradients of both operands equal float64 references.
func TestRowsTimesTransposedWeight(t *testing.T) {
	e, err := Open("CPU", Options{})
	if err != nil {
		t.Skipf("CPU unavailable: %v", err)
	}
	const n, k = 512, 256
	r := rand.New(rand.NewPCG(9, 10))
	vw := make([]float64, n*k)
	for i := range vw {
		vw[i] = r.Float64() - 0.5
	}
	for _, rows := range []int{1, 7, 128} {
		vx := make([]float64, rows*k)
		for i := range vx {
			vx[i] = r.Float64() - 0.5
		}
		ctx := tensor.NewContext(e)
		x, _ := ctx.FromFloats(ir.Float32, []int{1, rows, k}, vx)
		w, _ := ctx.FromFloats(ir.Float32, []int{n, k}, vw)
		y := x.Dot(w.Transpose(0, 1))
		if got := y.Shape(); len(got) != 3 || got[1] != rows || got[2] != n {
			t.Fatalf("%d rows: shape %v", rows, got)
		}
		s, err := fuse.Create([]*tensor.Node{y.Node()}, fuse.Options{})
		if err != nil {
			t.Fatal(err)
		}
		transposed := false
		for _, it := range s.Items {
			sh := it.Out.Shape
			if numelOf(sh) == n*k {
				t.Errorf("%d rows: a kernel writes %v, a copy of the weight", rows, sh)
			}
			transposed = transposed || (len(sh) == 2 && sh[0] == n && sh[1] == rows)
		}
		if rows > 1 && !transposed {
			t.Errorf("%d rows: no kernel stores the (%d, %d) product", rows, n, rows)
		}
		if rows == 1 && len(s.Items) != 1 {
			t.Errorf("one row: %d kernels, want 1", len(s.Items))
		}
		got, err := y.Floats()
		if err != nil {
			t.Fatal(err)
		}
		want := make([]float64, rows*n)
		for i := range rows {
			for j := range n {
				for c := range k {
					want[i*n+j] += vx[i*k+c] * vw[j*k+c]
				}
			}
		}
		near(t, "x @ w.T", got, want, 1e-4)

		// L = sum(y * g): dL/dx = g @ w, dL/dw = g.T @ x
		vg := make([]float64, rows*n)
		for i := range vg {
			vg[i] = r.Float64() - 0.5
		}
		gt, _ := ctx.FromFloats(ir.Float32, []int{1, rows, n}, vg)
		grads, err := autograd.Gradient(y.Mul(gt).Sum(false), []*tensor.Tensor{x, w})
		if err != nil {
			t.Fatal(err)
		}
		wantX, wantW := make([]float64, rows*k), make([]float64, n*k)
		for i := range rows {
			for j := range n {
				for c := range k {
					wantX[i*k+c] += vg[i*n+j] * vw[j*k+c]
					wantW[j*k+c] += vg[i*n+j] * vx[i*k+c]
				}
			}
		}
		for i, want := range [][]float64{wantX, wantW} {
			got, err := grads[i].Floats()
			if err != nil {
				t.Fatal(err)
			}
			near(t, []string{"dL/dx", "dL/dw"}[i], got, want, 1e-4)
		}
	}
}

func numelOf(shape []int) int {
	p := 1
	for _, d := range shape {
		p *= d
	}
	return p
}

// rowPanelDevice is the CPU device with the target of an 8-lane host
// whose caches are small enough for a small matmul to be blocked the
// GotoBLAS way (ir.Target.MatmulRowPanel).
type rowPanelDevice struct{ backend.Device }

func (d rowPanelDevice) Target() ir.Target {
	return ir.Target{Upcast: true, VecWidth: 8, VecRegs: 32, L1: 8 << 10, L2: 64 << 10}
}

// TestPackedRowsMatmul: where the heuristic groups a matmul's rows (both
// operands past half of L2, one-line panels), the CPU packs the left
// operand into row panels as well as the right one into column panels
// (three kernels), and the product is the float64 product of the same
// numbers.
func TestPackedRowsMatmul(t *testing.T) {
	dev, err := backend.Open("CPU")
	if err != nil {
		t.Skipf("CPU unavailable: %v", err)
	}
	e := New(rowPanelDevice{dev}, Options{})
	const m, k, n = 128, 256, 256
	if r := e.MatmulRowPanel(m, k, n); r != 8 {
		t.Fatalf("row panels of %d, want 8", r)
	}
	r := rand.New(rand.NewPCG(6, 6))
	va, vb := make([]float64, m*k), make([]float64, k*n)
	for i := range va {
		va[i] = r.Float64() - 0.5
	}
	for i := range vb {
		vb[i] = r.Float64() - 0.5
	}
	ctx := tensor.NewContext(e)
	a, _ := ctx.FromFloats(ir.Float32, []int{m, k}, va)
	b, _ := ctx.FromFloats(ir.Float32, []int{k, n}, vb)
	c := a.Dot(b)
	s, err := fuse.Create([]*tensor.Node{c.Node()}, fuse.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Items) != 3 {
		t.Errorf("%d kernels for the product, want 3 (both packs and the product)", len(s.Items))
	}
	got, err := c.Floats()
	if err != nil {
		t.Fatal(err)
	}
	for i := range m {
		for j := range n {
			want := 0.0
			for x := range k {
				want += float64(float32(va[i*k+x])) * float64(float32(vb[x*n+j]))
			}
			if d := math.Abs(got[i*n+j] - want); d > 1e-4*(1+math.Abs(want)) {
				t.Fatalf("product [%d,%d] = %v, want %v", i, j, got[i*n+j], want)
			}
		}
	}
}
