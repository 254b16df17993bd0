package realize

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"tgc/pkg/autograd"
	"tgc/pkg/backend"
	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// TestOddWidths: products whose output axis no vector width divides (a
// 1001-wide product, GPT-2's 50257 classes in small) are padded (PADTO:
// the last block overlaps the one before it), reduces along rows of such
// widths are split into a vectorized prefix and a scalar rest
// (split_tails: softmax, log_softmax, layernorm, sums, max, argmax, dot
// products along the rows), and all agree with the GO device, which runs
// them as they are, at the host's width and at 8 lanes. An assign that
// reads its destination must not be padded: its last block would read
// elements already stored.
func TestOddWidths(t *testing.T) {
	type cpuRun struct {
		e     *Engine
		width int
		log   *bytes.Buffer
	}
	var cpus []cpuRun
	for _, w := range cpuWidths() {
		dev, err := backend.OpenCPUWidth(w)
		if err != nil {
			t.Skipf("CPU unavailable: %v", err)
		}
		log := &bytes.Buffer{}
		cpus = append(cpus, cpuRun{New(dev, Options{Debug: 3, Out: log}), w, log})
	}
	goe, err := Open("GO", Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	values := func(n int) []float64 { return float32Values(r, n) }
	c := func(x *tensor.Tensor, v float64) *tensor.Tensor { return x.Context().Const(v, ir.Float32) }
	pad1 := tensor.ConvOpts{Padding: []int{1}}
	cases := []struct {
		name   string
		shapes [][]int
		f      func(in []*tensor.Tensor) *tensor.Tensor
		padded bool // PADTO in the CPU's opts (at both widths)
		wide   bool // PADTO at 16 lanes only (two 8-lane vectors divide the axis)
	}{
		{"product 37x100 by 100x1001", [][]int{{37, 100}, {100, 1001}},
			func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Dot(in[1]) }, true, false},
		{"product 45x67 by 67x45", [][]int{{45, 67}, {67, 45}},
			func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Dot(in[1]) }, true, false},
		{"matrix-vector 1x96 by 96x1001", [][]int{{1, 96}, {96, 1001}},
			func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Dot(in[1]) }, true, false},
		{"product by a transposed 1001x100", [][]int{{37, 100}, {1001, 100}},
			func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Dot(in[1].T()) }, false, false}, // dot products along the rows: no upcast to gain
		{"product plus bias, relu", [][]int{{9, 64}, {64, 1001}, {1001}},
			func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Dot(in[1]).Add(in[2]).Relu() }, true, false},
		{"softmax rows of 23x1001", [][]int{{23, 1001}},
			func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Softmax(-1) }, false, false},
		{"log_softmax rows of 23x1001", [][]int{{23, 1001}},
			func(in []*tensor.Tensor) *tensor.Tensor { return in[0].LogSoftmax(-1) }, false, false},
		{"layernorm rows of 23x1001", [][]int{{23, 1001}},
			func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Layernorm(1e-5, -1) }, false, false},
		{"sum and max rows of 23x1001", [][]int{{23, 1001}},
			func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Sum(false, 1).Add(in[0].Max(false, 1)) }, false, false},
		// the rows' maxima in their last 9 columns, where split_tails'
		// scalar rest reads them, or in their first
		{"max and argmax rows with the maxima at their ends", [][]int{{23, 1001}},
			func(in []*tensor.Tensor) *tensor.Tensor {
				one := 1
				x := in[0].Add(tailBumps(in[0]))
				return x.Max(false, 1).Add(x.Argmax(&one, false).Cast(ir.Float32))
			}, false, false},
		{"softmax rows of 5x50257", [][]int{{5, 50257}},
			func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Softmax(-1) }, false, false},
		{"dot products along rows 1001 long", [][]int{{37, 1001}, {64, 1001}},
			func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Dot(in[1].T()) }, false, false},
		{"softmax of a padded product", [][]int{{37, 100}, {100, 1001}},
			func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Dot(in[1]).Mul(c(in[0], 3)).Softmax(-1) }, true, false},
		// rows of 13 (AlexNet's last convs): the CPU stores the weight with
		// its output channels last and pads the rows to blocks of 4, the
		// last block overlapping; at batch 2 too (two more images' rows)
		{"conv 16->32 channels, 13x13", [][]int{{1, 16, 13, 13}, {32, 16, 3, 3}},
			func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Conv2d(in[1], nil, pad1) }, true, false},
		{"conv 8->32 channels, 13x13, batch 2, relu", [][]int{{2, 8, 13, 13}, {32, 8, 3, 3}},
			func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Conv2d(in[1], nil, pad1).Relu() }, true, false},
		// rows of 5 and 7 (small images' last convs): blocked whole, the
		// weight's output channels in vectors
		{"conv 16->32 channels, 5x5, batch 3", [][]int{{3, 16, 5, 5}, {32, 16, 3, 3}},
			func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Conv2d(in[1], nil, pad1) }, false, false},
		{"conv 16->64 channels, 7x7, relu", [][]int{{1, 16, 7, 7}, {64, 16, 3, 3}},
			func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Conv2d(in[1], nil, pad1).Relu() }, false, false},
		// rows of 22 (2 x 11): padded to 24, not blocked by 2
		{"conv 8->32 channels, 22x22", [][]int{{1, 8, 22, 22}, {32, 8, 3, 3}},
			func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Conv2d(in[1], nil, pad1) }, true, false},
		// 25 vectors of 16 wide: padded to 26, two vectors by 8 rows
		{"product 40x64 by 64x400", [][]int{{40, 64}, {64, 400}},
			func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Dot(in[1]) }, false, true},
		// a scale's gradient through a max pool (the MNIST cnn's
		// BatchNorm): per channel and column, sums over the batch's rows
		// of 20 columns read through the pool's x/2; padded to 24 at 8
		// lanes, the simd pass made no vectors of its lanes (10x slower)
		{"a scale's gradient through a max pool", [][]int{{128, 4, 20, 20}, {4}, {128, 4, 10, 10}},
			func(in []*tensor.Tensor) *tensor.Tensor {
				y := in[0].Mul(in[1].Reshape(1, 4, 1, 1)).MaxPool2d(tensor.PoolOpts{}).Mul(in[2]).Sum(false)
				g, err := autograd.Gradient(y, []*tensor.Tensor{in[1]})
				if err != nil {
					t.Fatal(err)
				}
				return g[0]
			}, false, false},
	}
	for _, tc := range cases {
		inputs := make([][]float64, len(tc.shapes))
		for i, sh := range tc.shapes {
			n := 1
			for _, d := range sh {
				n *= d
			}
			inputs[i] = values(n)
		}
		run := func(e *Engine) []float64 {
			ctx := tensor.NewContext(e)
			var in []*tensor.Tensor
			for i, sh := range tc.shapes {
				x, err := ctx.FromFloats(ir.Float32, sh, inputs[i])
				if err != nil {
					t.Fatal(err)
				}
				in = append(in, x.Realize())
			}
			got, err := tc.f(in).Floats()
			if err != nil {
				t.Fatalf("%s on %s: %v", tc.name, e.Dev.Name(), err)
			}
			return got
		}
		want := run(goe)
		for _, cr := range cpus {
			cr.log.Reset()
			got := run(cr.e)
			if i, bad := mismatch(want, got, 1e-5); bad {
				t.Errorf("%s: element %d: GO %v, CPU (%d lanes) %v", tc.name, i, want[i], cr.width, got[i])
			}
			want := tc.padded || tc.wide && cr.width == 16
			if padded := strings.Contains(cr.log.String(), "PADTO("); padded != want {
				t.Errorf("%s at %d lanes: padded %v, want %v; opts:\n%s", tc.name, cr.width, padded, want, optLines(cr.log.String()))
			}
		}
	}

	// An assign into its destination that reads it, twice (gradient
	// accumulation: acc = acc + x @ w): padded, its last block would add
	// the product twice to the elements it shares with the block before.
	xv, wv, accv := values(37*100), values(100*1001), values(37*1001)
	accumulate := func(e *Engine) []float64 {
		ctx := tensor.NewContext(e)
		x, err := ctx.FromFloats(ir.Float32, []int{37, 100}, xv)
		if err != nil {
			t.Fatal(err)
		}
		w, err := ctx.FromFloats(ir.Float32, []int{100, 1001}, wv)
		if err != nil {
			t.Fatal(err)
		}
		acc, err := ctx.FromFloats(ir.Float32, []int{37, 1001}, accv)
		if err != nil {
			t.Fatal(err)
		}
		x, w, acc = x.Realize(), w.Realize(), acc.Realize()
		for range 2 {
			acc.Assign(acc.Add(x.Dot(w))).Realize()
		}
		got, err := acc.Floats()
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	want := accumulate(goe)
	for _, cr := range cpus {
		cr.log.Reset()
		got := accumulate(cr.e)
		if i, bad := mismatch(want, got, 1e-4); bad {
			t.Errorf("accumulating assign at %d lanes: element %d: GO %v, CPU %v", cr.width, i, want[i], got[i])
		}
		if strings.Contains(cr.log.String(), "PADTO(") {
			t.Errorf("accumulating assign at %d lanes: padded:\n%s", cr.width, optLines(cr.log.String()))
		}
	}
}

// TestOddReductions: full reductions whose element count no split into
// 64 chunks of 16 lanes divides (tensor's splitReduce: the rows of the
// last axis first, or a prefix that splits and the rest beside it) give
// the float64 sums and maxima, on the CPU at both widths and on the GO
// device (which runs the same split graph: the float64 reference is what
// tells a lost rest), a maximum placed in the rest included, and the
// gradient through one.
func TestOddReductions(t *testing.T) {
	engines := []*Engine{}
	for _, w := range []int{backend.HostVecWidth(), 8} {
		dev, err := backend.OpenCPUWidth(w)
		if err != nil {
			t.Skipf("CPU unavailable: %v", err)
		}
		engines = append(engines, New(dev, Options{}))
	}
	goe, err := Open("GO", Options{})
	if err != nil {
		t.Fatal(err)
	}
	engines = append(engines, goe)
	r := rand.New(rand.NewPCG(9, 10))
	values := func(n int) []float64 { return float32Values(r, n) }
	sum := func(v []float64) (s, abs float64) {
		for _, x := range v {
			s, abs = s+x, abs+math.Abs(x)
		}
		return s, abs
	}
	maxOf := func(v []float64) float64 { return slices.Max(v) }
	x1, x2, x3 := values(1001*1003), values(100003), values(40009*5)
	bumped := slices.Clone(x2)
	bumped[100003-4] += 5 // in the rest past 97 chunks of 1024
	s1, a1 := sum(x1)
	s2, a2 := sum(x2)
	var cols [5]float64
	for i, v := range x3 {
		cols[i%5] += v
	}
	for _, e := range engines {
		ctx := tensor.NewContext(e)
		in := func(shape []int, v []float64) *tensor.Tensor {
			x, err := ctx.FromFloats(ir.Float32, shape, v)
			if err != nil {
				t.Fatal(err)
			}
			return x.Realize()
		}
		got := func(x *tensor.Tensor) []float64 {
			v, err := x.Floats()
			if err != nil {
				t.Fatalf("%s: %v", e.Dev.Name(), err)
			}
			return v
		}
		check := func(what string, got, want, tol float64) {
			if math.Abs(got-want) > tol {
				t.Errorf("%s on %s: %v, want %v", what, e.Dev.Name(), got, want)
			}
		}
		check("sum of 1001x1003", got(in([]int{1001, 1003}, x1).Sum(false))[0], s1, 1e-5*a1)
		v2 := in([]int{100003}, x2)
		check("sum of 100003", got(v2.Sum(false))[0], s2, 1e-5*a2)
		check("max of 100003", got(v2.Max(false))[0], maxOf(x2), 0)
		check("max of 100003 in its rest", got(in([]int{100003}, bumped).Max(false))[0], maxOf(bumped), 0)
		for j, c := range got(in([]int{40009, 5}, x3).Sum(false, 0)) {
			check(fmt.Sprintf("column %d's sum of 40009x5", j), c, cols[j], 1e-3)
		}
		sq := v2.Mul(ctx.Const(1, ir.Float32)) // a computed tensor's gradient
		g, err := autograd.Gradient(sq.Mul(sq).Sum(false), []*tensor.Tensor{sq})
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range got(g[0]) {
			if v != 2*x2[i] {
				t.Errorf("gradient of a sum of squares on %s: element %d: %v, want %v", e.Dev.Name(), i, v, 2*x2[i])
				break
			}
		}
	}
}

// mismatch is the first element where got differs from want by more than
// abs plus 1e-4 of want, or in being NaN.
func mismatch(want, got []float64, abs float64) (int, bool) {
	for i, a := range want {
		if b := got[i]; math.Abs(a-b) > abs+1e-4*math.Abs(a) || math.IsNaN(b) != math.IsNaN(a) {
			return i, true
		}
	}
	return 0, false
}

// cpuWidths are the vector widths the CPU is tested at: the host's, and
// 8 (an AVX2 host's) where the host's is 16.
func cpuWidths() []int {
	if backend.HostVecWidth() == 16 {
		return []int{16, 8}
	}
	return []int{backend.HostVecWidth()}
}

// float32Values is n values in [-1, 1), each a float32.
func float32Values(r *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = float64(float32(r.Float64()*2 - 1))
	}
	return v
}

// tailBumps is 5 at one column of each row of x (rows x columns): among
// the last 9 columns in odd rows, the first in even ones.
func tailBumps(x *tensor.Tensor) *tensor.Tensor {
	ctx, rows, cols := x.Context(), x.Shape()[0], x.Shape()[1]
	col := ctx.Arange(0, float64(cols), 1, ir.Float32).Reshape(1, cols)
	row := ctx.Arange(0, float64(rows), 1, ir.Float32).Reshape(rows, 1)
	// odd rows: column cols-9 + row%9; even rows: column 0
	odd := row.Sub(row.Div(ctx.Const(2, ir.Float32)).Floor().Mul(ctx.Const(2, ir.Float32)))
	at := odd.Mul(ctx.Const(float64(cols-9), ir.Float32).Add(row.Sub(row.Div(ctx.Const(9, ir.Float32)).Floor().Mul(ctx.Const(9, ir.Float32)))))
	return col.Eq(at).Where(ctx.Const(5, ir.Float32), ctx.Const(0, ir.Float32))
}

// optLines is the "// NAME opts [...]" lines of a DEBUG=3 log.
func optLines(log string) string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if strings.HasPrefix(l, "// ") && strings.Contains(l, " opts [") {
			out = append(out, l)
		}
	}
	return fmt.Sprint(strings.Join(out, "\n"))
}
