package realize

import (
	"math"
	"math/rand/v2"
	"testing"

	"tgc/pkg/backend"
	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// TestHoistedRowKernels: on the CPU, reduces broadcast back over their
// rows join their consumer's kernel, computed once per row (fuse's
// HoistReduces, ir.Program.Hoisted); the results equal the GO device's,
// which schedules them as separate kernels. Shapes are odd so that no
// vector block divides them evenly by accident.
func TestHoistedRowKernels(t *testing.T) {
	cpu, err := Open("CPU", Options{})
	if err != nil {
		t.Skipf("CPU unavailable: %v", err)
	}
	goe, _ := Open("GO", Options{})
	r := rand.New(rand.NewPCG(3, 4))
	x := randomInput(r, 7, 96)
	y := randomInput(r, 3, 5, 64)
	z := randomInput(r, 33, 40)
	g := randomInput(r, 7, 96)
	cases := []struct {
		name    string
		build   func(ctx *tensor.Context) *tensor.Tensor
		kernels int // on the CPU
	}{
		{"softmax", func(ctx *tensor.Context) *tensor.Tensor { return x(ctx).Softmax(-1) }, 1},
		{"softmax 3-D", func(ctx *tensor.Context) *tensor.Tensor { return y(ctx).Softmax(-1) }, 1},
		{"log_softmax", func(ctx *tensor.Context) *tensor.Tensor { return z(ctx).LogSoftmax(-1) }, 1},
		{"layernorm", func(ctx *tensor.Context) *tensor.Tensor { return x(ctx).Layernorm(1e-5, -1) }, 1},
		{"softmax backward", func(ctx *tensor.Context) *tensor.Tensor {
			s := x(ctx).Softmax(-1)
			return s.Mul(g(ctx).Sub(s.Mul(g(ctx)).Sum(true, -1)))
		}, 1},
		{"column softmax (not hoisted)", func(ctx *tensor.Context) *tensor.Tensor { return z(ctx).Softmax(0) }, 3},
	}
	for _, c := range cases {
		var res [2][]float64
		for d, e := range []*Engine{goe, cpu} {
			ctx := tensor.NewContext(e)
			before := e.Stats.Kernels
			if res[d], err = c.build(ctx).Floats(); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if n := e.Stats.Kernels - before; e == cpu && n != c.kernels {
				t.Errorf("%s: %d CPU kernels, want %d", c.name, n, c.kernels)
			}
		}
		for i := range res[0] {
			if a, b := res[0][i], res[1][i]; math.Abs(a-b) > 1e-5+1e-4*math.Abs(a) || math.IsNaN(b) {
				t.Errorf("%s: element %d: GO %v, CPU %v", c.name, i, a, b)
				break
			}
		}
	}
}

// TestRowKernelsPastTheCaches: row kernels over 8 MiB of rows of 1024
// floats, past the host's L2 and a quarter of its L3 (where the CPU's
// plans prefetch the next row, stream the column loop and lag it into the
// next row: ir's rowPassPrefetches and rowLagLoop; a layernorm of that
// size once failed to compile, a panel prefetch naming the columns' loop
// before it), against float64 references row by row.
func TestRowKernelsPastTheCaches(t *testing.T) {
	cpu, err := Open("CPU", Options{})
	if err != nil {
		t.Skipf("CPU unavailable: %v", err)
	}
	const rows, cols = 2048, 1024
	r := rand.New(rand.NewPCG(5, 6))
	v := make([]float64, rows*cols)
	for i := range v {
		v[i] = float64(float32(r.Float64()*8 - 4))
	}
	stats := func(row []float64) (mean, variance, maxv, lse float64) {
		maxv = math.Inf(-1)
		for _, x := range row {
			mean += x
			maxv = math.Max(maxv, x)
		}
		mean /= cols
		var s float64
		for _, x := range row {
			variance += (x - mean) * (x - mean)
			s += math.Exp(x - maxv)
		}
		return mean, variance / cols, maxv, maxv + math.Log(s)
	}
	cases := []struct {
		name  string
		build func(x *tensor.Tensor) *tensor.Tensor
		want  func(x, mean, variance, maxv, lse, ms float64) float64
	}{
		{"layernorm", func(x *tensor.Tensor) *tensor.Tensor { return x.Layernorm(1e-5, -1) },
			func(x, mean, variance, _, _, _ float64) float64 { return (x - mean) / math.Sqrt(variance+1e-5) }},
		{"log_softmax", func(x *tensor.Tensor) *tensor.Tensor { return x.LogSoftmax(-1) },
			func(x, _, _, _, lse, _ float64) float64 { return x - lse }},
		{"softmax", func(x *tensor.Tensor) *tensor.Tensor { return x.Softmax(-1) },
			func(x, _, _, _, lse, _ float64) float64 { return math.Exp(x - lse) }},
		{"rmsnorm", func(x *tensor.Tensor) *tensor.Tensor {
			return x.Mul(x).Mean(true, -1).Add(x.Context().Const(1e-6, ir.Float32)).Rsqrt().Mul(x)
		}, func(x, _, _, _, _, ms float64) float64 { return x / math.Sqrt(ms+1e-6) }},
	}
	for _, c := range cases {
		ctx := tensor.NewContext(cpu)
		x, err := ctx.FromFloats(ir.Float32, []int{rows, cols}, v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.build(x.Realize()).Floats()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		bad := 0
		for i := 0; i < rows && bad < 3; i++ {
			row := v[i*cols : (i+1)*cols]
			mean, variance, maxv, lse := stats(row)
			var ms float64
			for _, x := range row {
				ms += x * x / cols
			}
			for j, x := range row {
				want := c.want(x, mean, variance, maxv, lse, ms)
				if g := got[i*cols+j]; math.Abs(g-want) > 2e-5+2e-5*math.Abs(want) || math.IsNaN(g) {
					t.Errorf("%s: row %d column %d: %v, want %v", c.name, i, j, g, want)
					bad++
					break
				}
			}
		}
	}
}

// TestKeptTailInPlace: a softmax over rows that no vector divides (97,
// 100 and 1001 columns) between two products, written over its input (the
// first product's scratch): the kept loops, the vector one and
// split_tails' scalar tail, each read the input only at the column they
// store (ir's overwrite refusal knows both groups), against float64
// products and softmaxes at both widths.
func TestKeptTailInPlace(t *testing.T) {
	const rows, inner, outs = 7, 16, 3
	for _, width := range []int{8, 16} {
		if width == 16 && !backend.HostHasAVX512() {
			continue
		}
		dev, err := backend.OpenCPUWidth(width)
		if err != nil {
			t.Skipf("CPU unavailable: %v", err)
		}
		e := New(dev, Options{})
		for _, cols := range []int{97, 100, 1001} {
			av, bv, wv := make([]float64, rows*inner), make([]float64, inner*cols), make([]float64, cols*outs)
			for i := range av {
				av[i] = float64(float32(math.Sin(float64(i) * 0.37)))
			}
			for i := range bv {
				bv[i] = float64(float32(math.Cos(float64(i)*1.3) * 0.8))
			}
			for i := range wv {
				wv[i] = float64(float32(math.Sin(float64(i)*2.1+0.5) * 0.6))
			}
			ctx := tensor.NewContext(e)
			a, err := ctx.FromFloats(ir.Float32, []int{rows, inner}, av)
			if err != nil {
				t.Fatal(err)
			}
			b, err := ctx.FromFloats(ir.Float32, []int{inner, cols}, bv)
			if err != nil {
				t.Fatal(err)
			}
			w, err := ctx.FromFloats(ir.Float32, []int{cols, outs}, wv)
			if err != nil {
				t.Fatal(err)
			}
			before := e.Stats.Overwrites
			got, err := a.Realize().Dot(b.Realize()).Contiguous().Softmax(-1).Dot(w.Realize()).Floats()
			if err != nil {
				t.Fatal(err)
			}
			if e.Stats.Overwrites == before {
				t.Errorf("width %d, %d columns: the softmax did not write over its scratch input", width, cols)
			}
			for r := range rows {
				row := make([]float64, cols)
				for c := range row {
					for k := range inner {
						row[c] += av[r*inner+k] * bv[k*cols+c]
					}
				}
				m, sum := math.Inf(-1), 0.0
				for _, x := range row {
					m = max(m, x)
				}
				for _, x := range row {
					sum += math.Exp(x - m)
				}
				for o := range outs {
					want := 0.0
					for c, x := range row {
						want += math.Exp(x-m) / sum * wv[c*outs+o]
					}
					if g := got[r*outs+o]; math.Abs(g-want) > 1e-5*(1+math.Abs(want)) || math.IsNaN(g) {
						t.Fatalf("width %d, %d columns: row %d output %d: %v, want %v", width, cols, r, o, g, want)
					}
				}
			}
		}
	}
}
