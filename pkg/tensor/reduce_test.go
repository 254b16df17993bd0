package tensor

import (
	"math"
	"testing"

	"tgc/pkg/ir"
)

// a 2x3 example: [[1, 5, -2], [5, 0, 3]]
func example23(t *testing.T) *Tensor { return f32(t, []int{2, 3}, 1, 5, -2, 5, 0, 3) }

func TestMinMeanVarStd(t *testing.T) {
	x := example23(t)
	checkVals(t, "min all", x.Min(false), ir.Float32, nil, []float64{-2}, 0)
	checkVals(t, "min axis1", x.Min(false, 1), ir.Float32, []int{2}, []float64{-2, 0}, 0)
	checkVals(t, "min keepdim", x.Min(true, 0), ir.Float32, []int{1, 3}, []float64{1, 0, -2}, 0)
	xi := i32(t, []int{3}, math.MinInt32, 4, math.MaxInt32)
	checkVals(t, "min int extremes", xi.Min(false), ir.Int32, nil, []float64{math.MinInt32}, 0)
	xu := tensorOf(t, ir.Uint8, []int{3}, 7, 255, 0)
	checkVals(t, "min uint8", xu.Min(false), ir.Uint8, nil, []float64{0}, 0)
	xb := tensorOf(t, ir.Bool, []int{2, 2}, 1, 0, 1, 1)
	checkVals(t, "min bool", xb.Min(false, 1), ir.Bool, []int{2}, []float64{0, 1}, 0)
	checkVals(t, "any", xb.LogicalNot().Any(false, 1), ir.Bool, []int{2}, []float64{1, 0}, 0)
	checkVals(t, "all", xb.All(false, 1), ir.Bool, []int{2}, []float64{0, 1}, 0)

	checkVals(t, "mean all", x.Mean(false), ir.Float32, nil, []float64{2}, 1e-6)
	checkVals(t, "mean axis0", x.Mean(false, 0), ir.Float32, []int{3}, []float64{3, 2.5, 0.5}, 1e-6)
	checkVals(t, "mean neg axis keepdim", x.Mean(true, -1), ir.Float32, []int{2, 1}, []float64{4.0 / 3, 8.0 / 3}, 1e-6)
	checkVals(t, "mean int", i32(t, []int{4}, 1, 2, 3, 5).Mean(false), ir.Float32, nil, []float64{2.75}, 1e-6)
	checkVals(t, "mean half", tensorOf(t, ir.Float16, []int{2}, 1, 2).Mean(false), ir.Float16, nil, []float64{1.5}, 1e-3)
	checkVals(t, "mean empty", f32(t, []int{0}).Mean(false), ir.Float32, nil, []float64{math.NaN()}, 0)

	// var of row 0 [1 5 -2]: mean 4/3, squares sum = 74/3
	checkVals(t, "var", x.Var(false, 1, 1), ir.Float32, []int{2}, []float64{37.0 / 3, 19.0 / 3}, 1e-5)
	checkVals(t, "var pop", x.Var(false, 0, 1), ir.Float32, []int{2}, []float64{74.0 / 9, 38.0 / 9}, 1e-5)
	checkVals(t, "std", x.Std(true, 1, 1), ir.Float32, []int{2, 1}, []float64{math.Sqrt(37.0 / 3), math.Sqrt(19.0 / 3)}, 1e-5)
	checkVals(t, "var all", x.Var(false, 1), ir.Float32, nil, []float64{(1 + 9 + 16 + 9 + 4 + 1) / 5.0}, 1e-5)
	checkVals(t, "var int", i32(t, []int{3}, 1, 2, 3).Var(false, 1), ir.Float32, nil, []float64{1}, 1e-6)

	checkErr(t, "min axis", x.Min(false, 2), "min: axis 2 is out of range for a tensor with 2 dimensions")
	checkErr(t, "mean axis", x.Mean(false, -3), "mean: axis -3 is out of range")
	checkErr(t, "var axis", x.Var(false, 1, 5), "var: axis 5")
	checkErr(t, "any axis", x.Any(false, 5), "any: axis 5")
}

func TestArgmaxArgmin(t *testing.T) {
	x := example23(t) // [[1, 5, -2], [5, 0, 3]]: ties at 5 pick the first
	ax0, ax1, axNeg := 0, 1, -1
	checkVals(t, "argmax flat", x.Argmax(nil, false), ir.Int32, nil, []float64{1}, 0)
	checkVals(t, "argmax 1", x.Argmax(&ax1, false), ir.Int32, []int{2}, []float64{1, 0}, 0)
	checkVals(t, "argmax 0", x.Argmax(&ax0, false), ir.Int32, []int{3}, []float64{1, 0, 1}, 0)
	checkVals(t, "argmax keepdim", x.Argmax(&axNeg, true), ir.Int32, []int{2, 1}, []float64{1, 0}, 0)
	checkVals(t, "argmin flat", x.Argmin(nil, false), ir.Int32, nil, []float64{2}, 0)
	checkVals(t, "argmin 0", x.Argmin(&ax0, false), ir.Int32, []int{3}, []float64{0, 1, 0}, 0)
	xi := i32(t, []int{5}, 3, 9, 9, -1, -1)
	checkVals(t, "argmax int", xi.Argmax(nil, false), ir.Int32, nil, []float64{1}, 0)
	checkVals(t, "argmin int", xi.Argmin(nil, false), ir.Int32, nil, []float64{3}, 0)
	// a long axis (idxRange with 9 binary digits)
	long := f32(t, []int{300}, seq(300, 1, 0)...).Sub(tc.Const(150, ir.Float32)).Abs()
	checkVals(t, "argmin long", long.Argmin(nil, false), ir.Int32, nil, []float64{150}, 0)
	checkVals(t, "argmax long", long.Argmax(nil, false), ir.Int32, nil, []float64{0}, 0)
	two := 2
	checkErr(t, "argmax axis", x.Argmax(&two, false), "argmax: axis 2 is out of range")
	checkErr(t, "argmin axis", x.Argmin(&two, false), "argmin: axis 2 is out of range")
	checkErr(t, "argmax empty", f32(t, []int{0}).Argmax(nil, false), "argmax", "empty")
}

func softmaxRef(row []float64) []float64 {
	m := math.Inf(-1)
	for _, v := range row {
		m = math.Max(m, v)
	}
	s := 0.0
	for _, v := range row {
		s += math.Exp(v - m)
	}
	out := make([]float64, len(row))
	for i, v := range row {
		out[i] = math.Exp(v-m) / s
	}
	return out
}

func TestSoftmaxFamily(t *testing.T) {
	x := example23(t)
	want := append(softmaxRef([]float64{1, 5, -2}), softmaxRef([]float64{5, 0, 3})...)
	checkVals(t, "softmax", x.Softmax(-1), ir.Float32, []int{2, 3}, want, 1e-6)
	checkVals(t, "log_softmax", x.LogSoftmax(1), ir.Float32, []int{2, 3}, mapf(want, math.Log), 1e-5)
	col := softmaxRef([]float64{1, 5})
	sm0 := eval(t, x.Softmax(0))
	if !closeTo([]float64{sm0[0], sm0[3]}, col, 1e-6) {
		t.Errorf("softmax axis 0: %v", sm0)
	}
	lse := func(r ...float64) float64 {
		m := math.Inf(-1)
		for _, v := range r {
			m = math.Max(m, v)
		}
		s := 0.0
		for _, v := range r {
			s += math.Exp(v - m)
		}
		return m + math.Log(s)
	}
	checkVals(t, "logsumexp axis", x.Logsumexp(false, 1), ir.Float32, []int{2}, []float64{lse(1, 5, -2), lse(5, 0, 3)}, 1e-6)
	checkVals(t, "logsumexp keepdim", x.Logsumexp(true, 0), ir.Float32, []int{1, 3}, []float64{lse(1, 5), lse(5, 0), lse(-2, 3)}, 1e-6)
	checkVals(t, "logsumexp all", x.Logsumexp(false), ir.Float32, nil, []float64{lse(1, 5, -2, 5, 0, 3)}, 1e-6)
	checkVals(t, "logsumexp large", f32(t, []int{2}, 1000, 1000).Logsumexp(false), ir.Float32, nil, []float64{1000 + math.Ln2}, 1e-6)
	checkVals(t, "logsumexp -inf", f32(t, []int{2}, math.Inf(-1), math.Inf(-1)).Logsumexp(false), ir.Float32, nil, []float64{math.Inf(-1)}, 0)
	checkVals(t, "softmax int", i32(t, []int{2}, 0, 0).Softmax(-1), ir.Float32, []int{2}, []float64{0.5, 0.5}, 1e-6)
	checkErr(t, "softmax axis", x.Softmax(2), "softmax: axis 2 is out of range")
	checkErr(t, "log_softmax axis", x.LogSoftmax(-3), "log_softmax: axis -3")
	checkErr(t, "logsumexp axis", x.Logsumexp(false, 3), "logsumexp: axis 3")
}

func TestCumsum(t *testing.T) {
	x := example23(t)
	checkVals(t, "cumsum 1", x.Cumsum(1), ir.Float32, []int{2, 3}, []float64{1, 6, 4, 5, 5, 8}, 1e-6)
	checkVals(t, "cumsum 0", x.Cumsum(0), ir.Float32, []int{2, 3}, []float64{1, 5, -2, 6, 5, 1}, 1e-6)
	checkVals(t, "cumsum -1", x.Cumsum(-1), ir.Float32, []int{2, 3}, []float64{1, 6, 4, 5, 5, 8}, 1e-6)
	checkVals(t, "cummax", x.Cummax(1), ir.Float32, []int{2, 3}, []float64{1, 5, 5, 5, 5, 5}, 0)
	checkVals(t, "cumsum bool", tensorOf(t, ir.Bool, []int{4}, 1, 0, 1, 1).Cumsum(0), ir.Int32, []int{4}, []float64{1, 1, 2, 3}, 0)
	checkVals(t, "cummax int", i32(t, []int{4}, -5, -7, -1, -3).Cummax(0), ir.Int32, []int{4}, []float64{-5, -5, -1, -1}, 0)
	checkVals(t, "cumsum 0-d", tc.Const(3, ir.Float32).Cumsum(0), ir.Float32, nil, []float64{3}, 0)

	// longer than 2*cumSplit: the two-stage scan, along a middle axis
	const n = 2*cumSplit + 37
	vals := make([]float64, 2*n)
	want := make([]float64, 2*n)
	for i := range n {
		for j := range 2 {
			vals[i*2+j] = float64((i*7+j*3)%11) - 5
		}
	}
	for j := range 2 {
		s := 0.0
		for i := range n {
			s += vals[i*2+j]
			want[i*2+j] = s
		}
	}
	long := i32(t, []int{1, n, 2}, vals...)
	checkVals(t, "cumsum long", long.Cumsum(1), ir.Int32, []int{1, n, 2}, want, 0)
	wantMax := make([]float64, 2*n)
	for j := range 2 {
		m := math.Inf(-1)
		for i := range n {
			m = math.Max(m, vals[i*2+j])
			wantMax[i*2+j] = m
		}
	}
	checkVals(t, "cummax long", long.Cast(ir.Float32).Cummax(1), ir.Float32, []int{1, n, 2}, wantMax, 0)
	checkErr(t, "cumsum axis", x.Cumsum(2), "cumsum: axis 2 is out of range")
	checkErr(t, "cummax axis", x.Cummax(-3), "cummax: axis -3")
}
