package realize

import (
	"math"
	"math/rand/v2"
	"testing"

	"tgc/pkg/autograd"
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
