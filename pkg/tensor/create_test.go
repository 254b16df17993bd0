package tensor

import (
	"math"
	"testing"

	"tgc/pkg/ir"
)

func TestConstantCreation(t *testing.T) {
	checkVals(t, "zeros", tc.Zeros([]int{2, 3}, ir.Float32), ir.Float32, []int{2, 3}, make([]float64, 6), 0)
	checkVals(t, "ones int", tc.Ones([]int{3}, ir.Int32), ir.Int32, []int{3}, []float64{1, 1, 1}, 0)
	checkVals(t, "empty", tc.Empty([]int{2}, ir.Float16), ir.Float16, []int{2}, []float64{0, 0}, 0)
	x := i32(t, []int{2, 2}, 1, 2, 3, 4)
	checkVals(t, "full_like", x.FullLike(7), ir.Int32, []int{2, 2}, []float64{7, 7, 7, 7}, 0)
	checkVals(t, "zeros_like", x.ZerosLike(), ir.Int32, []int{2, 2}, []float64{0, 0, 0, 0}, 0)
	checkVals(t, "ones_like", x.OnesLike(), ir.Int32, []int{2, 2}, []float64{1, 1, 1, 1}, 0)
	checkErr(t, "zeros negative", tc.Zeros([]int{2, -1}, ir.Float32), "full:", "negative dimension")
}

func TestIdxRange(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 7, 8, 9, 64, 1000, 4099} {
		checkVals(t, "idxRange", tc.idxRange(n), ir.Int32, []int{n}, seq(n, 1, 0), 0)
	}
}

func TestArange(t *testing.T) {
	cases := []struct {
		name              string
		start, stop, step float64
		dt                ir.DType
		want              []float64
	}{
		{"ints", 0, 5, 1, ir.Int32, []float64{0, 1, 2, 3, 4}},
		{"start", 2, 6, 1, ir.Int32, []float64{2, 3, 4, 5}},
		{"step", 1, 10, 3, ir.Int32, []float64{1, 4, 7}},
		{"negative step", 5, 0, -2, ir.Int32, []float64{5, 3, 1}},
		{"empty", 5, 0, 1, ir.Int32, []float64{}},
		{"floats", 0, 1, 0.25, ir.Float32, []float64{0, 0.25, 0.5, 0.75}},
		{"float stop", -1, 0.9, 0.5, ir.Float32, []float64{-1, -0.5, 0, 0.5}},
		{"half", 0, 3, 1, ir.Float16, []float64{0, 1, 2}},
		{"long", 10, 1010, 1, ir.Int32, seq(1000, 1, 10)},
	}
	for _, c := range cases {
		checkVals(t, "arange "+c.name, tc.Arange(c.start, c.stop, c.step, c.dt), c.dt, []int{len(c.want)}, c.want, 1e-6)
	}
	checkErr(t, "arange step 0", tc.Arange(0, 5, 0, ir.Int32), "arange: step must not be zero")
	checkErr(t, "arange dtype", tc.Arange(0, 300, 1, ir.Int8), "arange:", "not representable in dtype int8")
	checkErr(t, "arange inf", tc.Arange(0, math.Inf(1), 1, ir.Float32), "arange:", "finite")
	checkVals(t, "linspace", tc.Linspace(0, 1, 5, ir.Float32), ir.Float32, []int{5}, []float64{0, 0.25, 0.5, 0.75, 1}, 1e-6)
	checkVals(t, "linspace 1", tc.Linspace(3, 9, 1, ir.Float32), ir.Float32, []int{1}, []float64{3}, 0)
	checkErr(t, "linspace steps", tc.Linspace(0, 1, -1, ir.Float32), "linspace:")
}

func TestEye(t *testing.T) {
	checkVals(t, "eye", tc.Eye(2, 3, ir.Float32), ir.Float32, []int{2, 3}, []float64{1, 0, 0, 0, 1, 0}, 0)
	checkVals(t, "eye square int", tc.Eye(3, 3, ir.Int32), ir.Int32, []int{3, 3}, []float64{1, 0, 0, 0, 1, 0, 0, 0, 1}, 0)
	checkErr(t, "eye negative", tc.Eye(-1, 2, ir.Float32), "eye:")
}

// moments returns the mean and standard deviation of v.
func moments(v []float64) (mean, std float64) {
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	for _, x := range v {
		std += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(std / float64(len(v)))
}

func TestRandom(t *testing.T) {
	tc.ManualSeed(1)
	n := 4000
	check := func(name string, x *Tensor, dt ir.DType, lo, hi, mean, std, tol float64) {
		t.Helper()
		checkVals(t, name, x, dt, []int{n / 40, 40}, nil, 0)
		v := eval(t, x)
		for _, e := range v {
			if e < lo || e >= hi {
				t.Errorf("%s: value %g outside [%g, %g)", name, e, lo, hi)
				return
			}
		}
		m, s := moments(v)
		if math.Abs(m-mean) > tol || math.Abs(s-std) > tol {
			t.Errorf("%s: mean %g std %g, want about %g and %g", name, m, s, mean, std)
		}
	}
	check("uniform", tc.Uniform(-2, 4, n/40, 40), ir.Float32, -2, 4, 1, 6/math.Sqrt(12), 0.1)
	check("randn", tc.Randn(n/40, 40), ir.Float32, -10, 10, 0, 1, 0.06)
	check("normal", tc.Normal(3, 2, n/40, 40), ir.Float32, -20, 30, 3, 2, 0.12)
	check("randint", tc.Randint(-3, 3, n/40, 40), ir.Int32, -3, 3, -0.5, math.Sqrt(35.0/12), 0.1)
	b := math.Sqrt(3) * math.Sqrt(2/(1+5.0)) / math.Sqrt(40)
	check("kaiming_uniform", tc.KaimingUniform(math.Sqrt(5), n/40, 40), ir.Float32, -b, b, 0, b/math.Sqrt(3), 0.02)
	g := math.Sqrt(6 / float64(n/40+40))
	check("glorot_uniform", tc.GlorotUniform(n/40, 40), ir.Float32, -g, g, 0, g/math.Sqrt(3), 0.02)
	check("kaiming_normal", tc.KaimingNormal(0, n/40, 40), ir.Float32, -5, 5, 0, math.Sqrt(2.0/40), 0.02)
	check("scaled_uniform", tc.ScaledUniform(n/40, 40), ir.Float32, -1/math.Sqrt(float64(n)), 1/math.Sqrt(float64(n)), 0, 1/math.Sqrt(3*float64(n)), 0.002)

	// the same seed gives the same graph, so the same numbers
	tc.ManualSeed(7)
	r1 := tc.Randn(3)
	tc.ManualSeed(7)
	r2 := tc.Randn(3)
	if r1.Node() != r2.Node() {
		t.Error("randn with the same seed built different graphs")
	}
	x := f32(t, []int{2, 3}, seq(6, 1, 1)...)
	checkVals(t, "rand_like", x.RandLike(), ir.Float32, []int{2, 3}, nil, 0)
	checkVals(t, "randn_like", x.RandnLike(), ir.Float32, []int{2, 3}, nil, 0)
	checkVals(t, "dropout 0", x.Dropout(0), ir.Float32, []int{2, 3}, seq(6, 1, 1), 0)
	d := eval(t, x.Dropout(0.5))
	for i, v := range d {
		if v != 0 && v != 2*float64(i+1) {
			t.Errorf("dropout: element %d is %g", i, v)
		}
	}
	checkErr(t, "dropout p", x.Dropout(1.5), "dropout:", "[0, 1]")
	checkErr(t, "randint range", tc.Randint(3, 3, 2), "randint: low (3) must be less than high (3)")
	checkErr(t, "randn shape", tc.Randn(2, -1), "randn:", "negative dimension")
	checkErr(t, "kaiming shape", tc.KaimingUniform(1), "kaiming_uniform:", "at least one dimension")
}
