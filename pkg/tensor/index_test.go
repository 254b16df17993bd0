package tensor

import (
	"testing"

	"tgc/pkg/ir"
)

// pyIndex is a reference for one dimension: the positions Python's
// range(*slice.indices(size)) visits.
func pyIndex(size int, start, stop, step *int) []int {
	first, st, n := sliceIndices(SliceIndex(start, stop, step), size)
	out := make([]int, n)
	for i := range out {
		out[i] = first + i*st
	}
	return out
}

func TestSliceIndicesMatchesPython(t *testing.T) {
	// values of slice(start, stop, step).indices(len) in CPython, for len 5
	cases := []struct {
		start, stop, step *int
		want              []int
	}{
		{nil, nil, nil, []int{0, 1, 2, 3, 4}},
		{ptr(1), ptr(4), nil, []int{1, 2, 3}},
		{ptr(-2), nil, nil, []int{3, 4}},
		{nil, ptr(-1), nil, []int{0, 1, 2, 3}},
		{nil, nil, ptr(2), []int{0, 2, 4}},
		{ptr(1), nil, ptr(3), []int{1, 4}},
		{nil, nil, ptr(-1), []int{4, 3, 2, 1, 0}},
		{nil, nil, ptr(-2), []int{4, 2, 0}},
		{ptr(3), ptr(0), ptr(-1), []int{3, 2, 1}},
		{ptr(-1), ptr(-6), ptr(-2), []int{4, 2, 0}},
		{ptr(10), nil, ptr(-3), []int{4, 1}},
		{ptr(-10), ptr(10), nil, []int{0, 1, 2, 3, 4}},
		{ptr(3), ptr(1), nil, []int{}},
		{ptr(1), ptr(3), ptr(-1), []int{}},
		{ptr(7), ptr(9), nil, []int{}},
	}
	for _, c := range cases {
		got := pyIndex(5, c.start, c.stop, c.step)
		if len(got) != len(c.want) {
			t.Errorf("%v: got %v, want %v", SliceIndex(c.start, c.stop, c.step), got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%v: got %v, want %v", SliceIndex(c.start, c.stop, c.step), got, c.want)
				break
			}
		}
	}
}

func TestIndex(t *testing.T) {
	x := f32(t, []int{3, 4}, seq(12, 1, 0)...) // x[i][j] = 4i + j
	S := SliceIndex
	cases := []struct {
		name  string
		idx   []IndexItem
		shape []int
		want  []float64
	}{
		{"int", []IndexItem{IntIndex(1)}, []int{4}, []float64{4, 5, 6, 7}},
		{"neg int", []IndexItem{IntIndex(-1)}, []int{4}, []float64{8, 9, 10, 11}},
		{"two ints", []IndexItem{IntIndex(2), IntIndex(-3)}, []int{}, []float64{9}},
		{"slice", []IndexItem{S(ptr(1), nil, nil)}, []int{2, 4}, seq(8, 1, 4)},
		{"col", []IndexItem{S(nil, nil, nil), IntIndex(2)}, []int{3}, []float64{2, 6, 10}},
		{"step", []IndexItem{S(nil, nil, nil), S(nil, nil, ptr(2))}, []int{3, 2}, []float64{0, 2, 4, 6, 8, 10}},
		{"step 3", []IndexItem{S(nil, nil, nil), S(ptr(1), nil, ptr(3))}, []int{3, 1}, []float64{1, 5, 9}},
		{"both steps", []IndexItem{S(nil, nil, ptr(2)), S(ptr(3), nil, ptr(-2))}, []int{2, 2}, []float64{3, 1, 11, 9}},
		{"reverse", []IndexItem{S(nil, nil, ptr(-1))}, []int{3, 4}, append(append(seq(4, 1, 8), seq(4, 1, 4)...), seq(4, 1, 0)...)},
		{"reverse step", []IndexItem{IntIndex(0), S(nil, nil, ptr(-3))}, []int{2}, []float64{3, 0}},
		{"empty", []IndexItem{S(ptr(2), ptr(1), nil)}, []int{0, 4}, []float64{}},
		{"empty strided", []IndexItem{S(nil, nil, nil), S(ptr(3), ptr(0), ptr(2))}, []int{3, 0}, []float64{}},
		{"clamped", []IndexItem{S(ptr(-10), ptr(10), nil), S(ptr(2), ptr(99), nil)}, []int{3, 2}, []float64{2, 3, 6, 7, 10, 11}},
		{"newaxis", []IndexItem{NewAxisIndex(), IntIndex(0)}, []int{1, 4}, seq(4, 1, 0)},
		{"newaxis middle", []IndexItem{S(nil, nil, nil), NewAxisIndex(), IntIndex(1)}, []int{3, 1}, []float64{1, 5, 9}},
		{"ellipsis", []IndexItem{EllipsisIndex(), IntIndex(0)}, []int{3}, []float64{0, 4, 8}},
		{"ellipsis newaxis", []IndexItem{EllipsisIndex(), NewAxisIndex()}, []int{3, 4, 1}, seq(12, 1, 0)},
		{"ellipsis front", []IndexItem{IntIndex(1), EllipsisIndex()}, []int{4}, seq(4, 1, 4)},
		{"ellipsis all", []IndexItem{IntIndex(1), EllipsisIndex(), IntIndex(1)}, []int{}, []float64{5}},
		{"nothing", nil, []int{3, 4}, seq(12, 1, 0)},
	}
	for _, c := range cases {
		checkVals(t, "index "+c.name, x.Index(c.idx), ir.Float32, c.shape, c.want, 0)
	}
	// a 0-d tensor: None and ... only
	s := tc.Const(5, ir.Int32)
	checkVals(t, "0-d none", s.Index([]IndexItem{NewAxisIndex()}), ir.Int32, []int{1}, []float64{5}, 0)
	checkVals(t, "0-d ellipsis", s.Index([]IndexItem{EllipsisIndex()}), ir.Int32, nil, []float64{5}, 0)
	// 3-D with steps on every axis and a negative one
	y := i32(t, []int{4, 5, 6}, seq(120, 1, 0)...)
	got := y.Index([]IndexItem{S(ptr(1), nil, ptr(2)), S(nil, nil, ptr(-2)), S(ptr(5), ptr(0), ptr(-4))})
	var want []float64
	for _, i := range []int{1, 3} {
		for _, j := range []int{4, 2, 0} {
			for _, k := range []int{5, 1} {
				want = append(want, float64(i*30+j*6+k))
			}
		}
	}
	checkVals(t, "index 3-d", got, ir.Int32, []int{2, 3, 2}, want, 0)

	checkErr(t, "index out of range", x.Index([]IndexItem{IntIndex(3)}), "index: index 3 is out of bounds for dimension 0 with size 3")
	checkErr(t, "index negative out of range", x.Index([]IndexItem{IntIndex(0), IntIndex(-5)}), "index: index -5 is out of bounds for dimension 1 with size 4")
	checkErr(t, "too many", x.Index([]IndexItem{IntIndex(0), IntIndex(0), IntIndex(0)}), "index: too many indices", "(3, 4)", "2-dimensional, but 3 were indexed")
	checkErr(t, "two ellipses", x.Index([]IndexItem{EllipsisIndex(), EllipsisIndex()}), "index: an index can only have a single ellipsis")
	checkErr(t, "zero step", x.Index([]IndexItem{S(nil, nil, ptr(0))}), "index: slice step cannot be zero")
	checkErr(t, "0-d int", s.Index([]IndexItem{IntIndex(0)}), "index: too many indices")
}

func TestGather(t *testing.T) {
	x := f32(t, []int{2, 3}, 1, 2, 3, 4, 5, 6)
	idx := i32(t, []int{2, 2}, 2, 0, 1, 1)
	checkVals(t, "gather 1", x.Gather(1, idx), ir.Float32, []int{2, 2}, []float64{3, 1, 5, 5}, 0)
	idx0 := i32(t, []int{1, 3}, 1, 0, 1)
	checkVals(t, "gather 0", x.Gather(0, idx0), ir.Float32, []int{1, 3}, []float64{4, 2, 6}, 0)
	checkVals(t, "gather int", i32(t, []int{3}, 7, 8, 9).Gather(-1, i32(t, []int{4}, 2, 2, 0, 1)), ir.Int32, []int{4}, []float64{9, 9, 7, 8}, 0)
	checkErr(t, "gather ndim", x.Gather(0, i32(t, []int{2}, 0, 1)), "gather:", "index (2,)", "input (2, 3)")
	checkErr(t, "gather size", x.Gather(0, i32(t, []int{1, 4}, 0, 0, 0, 0)), "gather:", "larger than the input", "dimension 1")
	checkErr(t, "gather dtype", x.Gather(0, x), "gather: index must be integers")
	checkErr(t, "gather axis", x.Gather(2, idx), "gather: axis 2")
}
