package realize

import (
	"testing"

	"tgc/pkg/fuse"
	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// TestOneHotSumIsGather: an embedding lookup written as a one-hot sum
// compiles to a kernel without a reduce (it reads only the rows asked
// for) and gives the one-hot sum's values, 0 for indices outside the
// table, on every device.
func TestOneHotSumIsGather(t *testing.T) {
	const vocab, dim = 50, 8
	build := func(ctx *tensor.Context) *tensor.Tensor {
		vals := make([]float64, vocab*dim)
		for i := range vals {
			vals[i] = float64(i)
		}
		w, _ := ctx.FromFloats(ir.Float32, []int{vocab, dim}, vals)
		idx, _ := ctx.FromFloats(ir.Int32, []int{5}, []float64{3, -1, 0, vocab, 49})
		hit := idx.Reshape(5, 1, 1).Eq(ctx.Arange(0, vocab, 1, ir.Int32).Reshape(vocab, 1))
		return hit.Where(w, ctx.Const(0, ir.Float32)).Sum(false, -2)
	}
	s, err := fuse.Create([]*tensor.Node{build(tensor.NewContext(nil)).Node()}, fuse.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Items) != 1 || s.Items[0].Kernel.Kind() != "E" {
		t.Errorf("the lookup is not one gather kernel:\n%s", s.Dump())
	}
	want := make([]float64, 0, 5*dim)
	for _, row := range []int{3, -1, 0, vocab, 49} {
		for j := range dim {
			if row < 0 || row >= vocab {
				want = append(want, 0)
			} else {
				want = append(want, float64(row*dim+j))
			}
		}
	}
	for _, e := range symEngines(t) {
		got, err := build(tensor.NewContext(e)).Floats()
		if err != nil {
			t.Fatal(err)
		}
		closeTo(t, e.Dev.Name(), got, want, 0)
	}
}
