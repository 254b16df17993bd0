package realize

import (
	"math"
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
		near(t, e.Dev.Name(), got, want, 0)
	}
}

// TestOneHotSumOfComputedTable: a lookup of several rows (a prompt's
// tokens) in a table that is computed, not stored (a quantized
// embedding's dequantization: bytes times a per-row scale), reads only the
// rows asked for. The table is broadcast over the lookups, but the gather
// computes each looked-up element once, so the schedule is one kernel on
// the raw bytes, not the table stored as floats first (98 MB for a
// 32000-token model). Its values are GO's and a float64 reference's.
func TestOneHotSumOfComputedTable(t *testing.T) {
	const vocab, dim = 40, 8
	rows := []float64{3, 39, 0, 3, vocab, 17}
	q := make([]float64, vocab*dim)
	for i := range q {
		q[i] = float64((i * 37) % 256)
	}
	scale := make([]float64, vocab)
	for i := range scale {
		scale[i] = float64(i%7)/8 - 0.4
	}
	build := func(ctx *tensor.Context) *tensor.Tensor {
		qb, _ := ctx.FromFloats(ir.Uint8, []int{vocab, dim}, q)
		sc, _ := ctx.FromFloats(ir.Float32, []int{vocab, 1}, scale)
		table := qb.Cast(ir.Float32).Mul(sc.Exp()) // an exp per element: dearer than a load
		idx, _ := ctx.FromFloats(ir.Int32, []int{1, len(rows)}, rows)
		hit := idx.Reshape(1, len(rows), 1, 1).Eq(ctx.Arange(0, vocab, 1, ir.Int32).Reshape(vocab, 1))
		return hit.Where(table, ctx.Const(0, ir.Float32)).Sum(false, -2)
	}
	s, err := fuse.Create([]*tensor.Node{build(tensor.NewContext(nil)).Node()}, fuse.Options{HoistReduces: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Items) != 1 || s.Items[0].Kernel.Kind() != "E" {
		t.Errorf("the lookup is not one gather kernel on the raw table:\n%s", s.Dump())
	}
	var want []float64
	for _, r := range rows {
		for j := range dim {
			if r < 0 || r >= vocab {
				want = append(want, 0)
			} else {
				want = append(want, q[int(r)*dim+j]*math.Exp(scale[int(r)]))
			}
		}
	}
	var ref []float64
	for _, e := range symEngines(t) {
		got, err := build(tensor.NewContext(e)).Floats()
		if err != nil {
			t.Fatal(err)
		}
		near(t, e.Dev.Name(), got, want, 1e-5)
		if e.Dev.Name() == "GO" {
			ref = got
		} else if ref != nil {
			near(t, e.Dev.Name()+" vs GO", got, ref, 1e-6)
		}
	}
}
