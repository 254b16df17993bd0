package tensor

import (
	"slices"
	"testing"

	"tgc/pkg/ir"
)

func TestTransposeFlattenSqueeze(t *testing.T) {
	x := f32(t, []int{2, 3}, seq(6, 1, 0)...)
	checkVals(t, "T", x.T(), ir.Float32, []int{3, 2}, []float64{0, 3, 1, 4, 2, 5}, 0)
	checkVals(t, "transpose neg", x.Transpose(-1, 0), ir.Float32, []int{3, 2}, []float64{0, 3, 1, 4, 2, 5}, 0)
	checkVals(t, "transpose same", x.Transpose(1, 1), ir.Float32, []int{2, 3}, seq(6, 1, 0), 0)
	y := f32(t, []int{2, 1, 3, 1}, seq(6, 1, 0)...)
	checkVals(t, "flatten all", y.Flatten(0, -1), ir.Float32, []int{6}, seq(6, 1, 0), 0)
	checkVals(t, "flatten mid", y.Flatten(1, 2), ir.Float32, []int{2, 3, 1}, nil, 0)
	checkVals(t, "flatten 0-d", tc.Const(1, ir.Float32).Flatten(0, -1), ir.Float32, []int{1}, []float64{1}, 0)
	checkVals(t, "unflatten", x.Flatten(0, -1).Unflatten(0, 3, -1), ir.Float32, []int{3, 2}, seq(6, 1, 0), 0)
	one, three, neg := 1, 2, -1
	checkVals(t, "squeeze all", y.Squeeze(nil), ir.Float32, []int{2, 3}, nil, 0)
	checkVals(t, "squeeze dim", y.Squeeze(&one), ir.Float32, []int{2, 3, 1}, nil, 0)
	checkVals(t, "squeeze non-1", y.Squeeze(&three), ir.Float32, []int{2, 1, 3, 1}, nil, 0)
	checkVals(t, "squeeze neg", y.Squeeze(&neg), ir.Float32, []int{2, 1, 3}, nil, 0)
	checkVals(t, "unsqueeze 0", x.Unsqueeze(0), ir.Float32, []int{1, 2, 3}, nil, 0)
	checkVals(t, "unsqueeze end", x.Unsqueeze(2), ir.Float32, []int{2, 3, 1}, nil, 0)
	checkVals(t, "unsqueeze -1", x.Unsqueeze(-1), ir.Float32, []int{2, 3, 1}, nil, 0)
	checkVals(t, "unsqueeze -3", x.Unsqueeze(-3), ir.Float32, []int{1, 2, 3}, nil, 0)

	checkErr(t, "T 1-d", f32(t, []int{3}, 1, 2, 3).T(), "T:", "(3,)")
	checkErr(t, "transpose axis", x.Transpose(0, 2), "transpose: axis 2 is out of range for a tensor with 2 dimensions")
	checkErr(t, "flatten order", y.Flatten(2, 1), "flatten:", "start_dim 2", "end_dim 1")
	checkErr(t, "flatten axis", y.Flatten(0, 4), "flatten: axis 4")
	checkErr(t, "unflatten sizes", x.Unflatten(1, 2, 2), "unflatten:", "size 3", "(2, 2)")
	big := 3
	checkErr(t, "squeeze axis", x.Squeeze(&big), "squeeze: axis 3")
	checkErr(t, "unsqueeze axis", x.Unsqueeze(4), "unsqueeze: axis 4 is out of range")
	checkErr(t, "reshape mismatch", x.Reshape(4, 2), "reshape: cannot reshape (2, 3) (6 elements) into (4, 2) (8 elements)")
}

func TestRepeat(t *testing.T) {
	x := f32(t, []int{2, 2}, 1, 2, 3, 4)
	checkVals(t, "repeat", x.Repeat(2, 3), ir.Float32, []int{4, 6},
		[]float64{1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4, 1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4}, 0)
	checkVals(t, "repeat extra dims", f32(t, []int{2}, 1, 2).Repeat(2, 1, 2), ir.Float32, []int{2, 1, 4}, []float64{1, 2, 1, 2, 1, 2, 1, 2}, 0)
	checkVals(t, "repeat ones", x.Repeat(1, 1), ir.Float32, []int{2, 2}, []float64{1, 2, 3, 4}, 0)
	checkVals(t, "repeat zero", x.Repeat(0, 1), ir.Float32, []int{0, 2}, []float64{}, 0)
	d := 0
	checkVals(t, "repeat_interleave", x.RepeatInterleave(2, &d), ir.Float32, []int{4, 2}, []float64{1, 2, 1, 2, 3, 4, 3, 4}, 0)
	checkVals(t, "repeat_interleave flat", x.RepeatInterleave(2, nil), ir.Float32, []int{8}, []float64{1, 1, 2, 2, 3, 3, 4, 4}, 0)
	checkErr(t, "repeat short", x.Repeat(2), "repeat:", "at least one entry per dimension", "(2, 2)")
	checkErr(t, "repeat negative", x.Repeat(-1, 2), "repeat: negative repeat -1")
	checkErr(t, "repeat_interleave axis", x.RepeatInterleave(2, ptr(2)), "repeat_interleave: axis 2")
}

func ptr(i int) *int { return &i }

func TestCatStackSplit(t *testing.T) {
	a := f32(t, []int{2, 2}, 1, 2, 3, 4)
	b := f32(t, []int{2, 1}, 5, 6)
	c := i32(t, []int{1, 2}, 7, 8)
	checkVals(t, "cat dim1", a.Cat(1, b), ir.Float32, []int{2, 3}, []float64{1, 2, 5, 3, 4, 6}, 0)
	checkVals(t, "cat dim0 promote", a.Cat(0, c), ir.Float32, []int{3, 2}, []float64{1, 2, 3, 4, 7, 8}, 0)
	checkVals(t, "cat three", a.Cat(-1, b, b), ir.Float32, []int{2, 4}, []float64{1, 2, 5, 5, 3, 4, 6, 6}, 0)
	checkVals(t, "cat self only", a.Cat(0), ir.Float32, []int{2, 2}, []float64{1, 2, 3, 4}, 0)
	checkVals(t, "stack", Stack(0, a, a), ir.Float32, []int{2, 2, 2}, []float64{1, 2, 3, 4, 1, 2, 3, 4}, 0)
	checkVals(t, "stack last", Stack(-1, b, b), ir.Float32, []int{2, 1, 2}, []float64{5, 5, 6, 6}, 0)
	checkErr(t, "cat mismatch", a.Cat(0, b), "cat:", "(2, 2) and (2, 1) differ in dimension 1")
	checkErr(t, "cat ndim", a.Cat(0, f32(t, []int{2}, 1, 2)), "cat:", "same number of dimensions")
	checkErr(t, "cat 0-d", tc.Const(1, ir.Float32).Cat(0, tc.Const(2, ir.Float32)), "cat: zero-dimensional")
	checkErr(t, "cat axis", a.Cat(2, a), "cat: axis 2 is out of range")
	checkErr(t, "stack shapes", Stack(0, a, b), "stack:", "(2, 2) and (2, 1)")
	checkErr(t, "stack none", Stack(0), "stack:")

	x := f32(t, []int{5, 2}, seq(10, 1, 0)...)
	parts := x.Split(2, 0)
	shapes := [][]int{{2, 2}, {2, 2}, {1, 2}}
	if len(parts) != 3 {
		t.Fatalf("split: %d parts", len(parts))
	}
	for i, p := range parts {
		checkVals(t, "split", p, ir.Float32, shapes[i], seq(2*shapes[i][0], 1, float64(4*i)), 0)
	}
	parts = x.SplitSizes([]int{1, 4}, 0)
	checkVals(t, "split sizes", parts[1], ir.Float32, []int{4, 2}, seq(8, 1, 2), 0)
	parts = x.Chunk(2, 1)
	if len(parts) != 2 || !slices.Equal(parts[0].Shape(), []int{5, 1}) {
		t.Errorf("chunk: %d parts", len(parts))
	}
	checkVals(t, "chunk", parts[1], ir.Float32, []int{5, 1}, []float64{1, 3, 5, 7, 9}, 0)
	if n := len(x.Chunk(3, 0)); n != 3 {
		t.Errorf("chunk 3 of 5: %d parts", n)
	}
	checkErr(t, "split sizes sum", x.SplitSizes([]int{1, 2}, 0)[0], "split:", "add up to 3", "has 5")
	checkErr(t, "split size", x.Split(0, 0)[0], "split: split size must be positive")
	checkErr(t, "chunk n", x.Chunk(0, 0)[0], "chunk:", "positive")
	checkErr(t, "split axis", x.Split(1, 2)[0], "split: axis 2")
}
