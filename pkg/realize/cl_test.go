package realize

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// forEachGPU runs test as a subtest on each GPU device (CL, CUDA) with an
// engine opened with opts, skipping those unavailable (CUDA except on a
// machine with an NVIDIA driver; CL is PoCL in CI).
func forEachGPU(t *testing.T, opts Options, test func(t *testing.T, gpu *Engine)) {
	for _, name := range []string{"CL", "CUDA"} {
		t.Run(name, func(t *testing.T) {
			e, err := Open(name, opts)
			if err != nil {
				t.Skipf("%s unavailable: %v", name, err)
			}
			test(t, e)
		})
	}
}

// compareDevices realizes the graph that build makes on each engine from
// the same input values and compares the results with GO's.
func compareDevices(t *testing.T, name string, engines []*Engine, build func(ctx *tensor.Context) *tensor.Tensor, tol float64) {
	t.Helper()
	var ref []float64
	for i, e := range engines {
		ctx := tensor.NewContext(e)
		got, err := build(ctx).Floats()
		if err != nil {
			t.Fatalf("%s on %s: %v", name, e.Dev.Name(), err)
		}
		if i == 0 {
			ref = got
			continue
		}
		if len(got) != len(ref) {
			t.Fatalf("%s on %s: %d values, GO has %d", name, e.Dev.Name(), len(got), len(ref))
		}
		for j := range ref {
			a, b := ref[j], got[j]
			if math.IsNaN(a) && math.IsNaN(b) || a == b {
				continue
			}
			if tol == 0 || math.Abs(a-b) > tol+tol*math.Abs(a) {
				t.Errorf("%s: element %d: GO %v, %s %v", name, j, a, e.Dev.Name(), b)
				break
			}
		}
	}
}

func floats(dt ir.DType, shape []int, seed uint64, scale float64) func(ctx *tensor.Context) *tensor.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	r := rand.New(rand.NewPCG(seed, 7))
	v := make([]float64, n)
	for i := range v {
		v[i] = (r.Float64()*2 - 1) * scale
		if !dt.IsFloat() {
			v[i] = math.Round(v[i])
		}
	}
	return func(ctx *tensor.Context) *tensor.Tensor {
		x, err := ctx.FromFloats(dt, shape, v)
		if err != nil {
			panic(err)
		}
		return x
	}
}

// TestGPUMatchesGO: random graphs of every primitive give the same values
// on CL (PoCL's CPU device in CI) as on GO.
func TestGPUMatchesGO(t *testing.T) {
	forEachGPU(t, Options{}, testMatchesGO)
}

func testMatchesGO(t *testing.T, gpu *Engine) {
	goe, _ := Open("GO", Options{})
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 25; i++ {
		shape := []int{1 + r.IntN(4), 1 + r.IntN(5), 1 + r.IntN(6)}
		x, y := floats(ir.Float32, shape, uint64(i), 2), floats(ir.Float32, shape, uint64(i)+1000, 2)
		var desc string
		compareDevices(t, fmt.Sprintf("graph %d", i), []*Engine{goe, gpu}, func(ctx *tensor.Context) *tensor.Tensor {
			out, d := randomGraph(rand.New(rand.NewPCG(uint64(i), 99)), x(ctx), y(ctx))
			desc = d
			return out
		}, 1e-4)
		if t.Failed() {
			t.Logf("graph %d: %s", i, desc)
			break
		}
	}
}

// TestGPUOps covers what the random graphs do not: grouped reduces, padded
// grids, more than three axes, float16, ints, bools, and tg_rand, which
// must be bit-identical to GO's.
func TestGPUOps(t *testing.T) {
	forEachGPU(t, Options{}, testOps)
}

func testOps(t *testing.T, gpu *Engine) {
	goe, _ := Open("GO", Options{})
	engines := []*Engine{goe, gpu}
	big := floats(ir.Float32, []int{3, 70000}, 1, 1)
	m := floats(ir.Float32, []int{8, 64, 40}, 2, 1)
	a, b := floats(ir.Float32, []int{33, 70}, 3, 1), floats(ir.Float32, []int{70, 45}, 4, 1)
	h := floats(ir.Float16, []int{5, 300}, 5, 8)
	iv := floats(ir.Int32, []int{17, 19}, 6, 100)
	cases := []struct {
		name  string
		build func(ctx *tensor.Context) *tensor.Tensor
		tol   float64
	}{
		{"group sum", func(ctx *tensor.Context) *tensor.Tensor { return big(ctx).Sum(false, 1) }, 1e-4},
		{"group sum all", func(ctx *tensor.Context) *tensor.Tensor { return big(ctx).Sum(false) }, 1e-4},
		{"group max two axes", func(ctx *tensor.Context) *tensor.Tensor { return m(ctx).Max(false, 1, 2) }, 0},
		{"group mean and max", func(ctx *tensor.Context) *tensor.Tensor {
			x := m(ctx)
			return x.Max(false, 1, 2).Add(x.Sum(false, 1, 2))
		}, 1e-4},
		{"matmul", func(ctx *tensor.Context) *tensor.Tensor { return a(ctx).Dot(b(ctx)).Relu() }, 1e-4},
		{"padded 1031", func(ctx *tensor.Context) *tensor.Tensor {
			return floats(ir.Float32, []int{1031}, 8, 4)(ctx).Abs().Sqrt()
		}, 1e-6},
		{"axes4", func(ctx *tensor.Context) *tensor.Tensor {
			return m(ctx).Reshape(4, 8, 8, 80).Permute(3, 1, 2, 0).Exp2()
		}, 1e-5},
		{"softmax", func(ctx *tensor.Context) *tensor.Tensor { return m(ctx).Softmax(2) }, 1e-5},
		{"half", func(ctx *tensor.Context) *tensor.Tensor { x := h(ctx); return x.Mul(x).Add(x) }, 1e-3},
		{"half sum", func(ctx *tensor.Context) *tensor.Tensor { return h(ctx).Sum(false, 1) }, 1e-2},
		{"int ops", func(ctx *tensor.Context) *tensor.Tensor {
			x := iv(ctx)
			return x.IDiv(ctx.Const(7, ir.Int32)).Add(x.Mod(ctx.Const(5, ir.Int32))).Mul(x.Permute(1, 0).Reshape(17, 19))
		}, 0},
		{"bool", func(ctx *tensor.Context) *tensor.Tensor {
			x := a(ctx)
			return x.Lt(ctx.Const(0, ir.Float32)).Where(x, x.Neg())
		}, 0},
		{"bool store", func(ctx *tensor.Context) *tensor.Tensor {
			return a(ctx).Lt(ctx.Const(0, ir.Float32)).Cast(ir.Int32).Sum(false, 1)
		}, 0},
		{"rand", func(ctx *tensor.Context) *tensor.Tensor { ctx.ManualSeed(42); return ctx.Rand(37, 53) }, 0},
	}
	for _, c := range cases {
		compareDevices(t, c.name, engines, c.build, c.tol)
	}
}

// TestGPUVector: kernels rendered with float4 loads and stores (contiguous,
// aligned accesses) and their scalar fallbacks (gathers, per-lane guards,
// unaligned shifts, sizes not divisible by 4, padded grids) equal GO.
func TestGPUVector(t *testing.T) {
	want := map[string][]string{
		"CL":   {"vload4(0, ", "vstore4(", "float4 val"},
		"CUDA": {"*((const tg_float4*)(", "*((tg_float4*)(", "tg_float4 val"},
	}
	var src strings.Builder
	forEachGPU(t, Options{Debug: 3, Out: &src}, func(t *testing.T, gpu *Engine) {
		src.Reset()
		testVector(t, gpu)
		for _, w := range want[gpu.Dev.Name()] {
			if !strings.Contains(src.String(), w) {
				t.Errorf("no %s kernel used %q", gpu.Dev.Name(), w)
			}
		}
	})
}

func testVector(t *testing.T, gpu *Engine) {
	goe, _ := Open("GO", Options{})
	engines := []*Engine{goe, gpu}
	x := floats(ir.Float32, []int{16, 64}, 11, 2)
	y := floats(ir.Float32, []int{16, 64}, 12, 2)
	tr := floats(ir.Float32, []int{64, 16}, 13, 2)
	row := floats(ir.Float32, []int{1, 4097}, 14, 2)
	h := floats(ir.Float16, []int{6, 40}, 15, 4)
	a, b := floats(ir.Float32, []int{12, 40}, 16, 1), floats(ir.Float32, []int{40, 36}, 17, 1)
	big := floats(ir.Float32, []int{4 * 1031}, 18, 3)
	odd := floats(ir.Float32, []int{7, 9}, 19, 3)
	cases := []struct {
		name  string
		build func(ctx *tensor.Context) *tensor.Tensor
		tol   float64
	}{
		{"add exp2", func(ctx *tensor.Context) *tensor.Tensor { return x(ctx).Add(y(ctx)).Exp2() }, 1e-5},
		{"transposed load (gather)", func(ctx *tensor.Context) *tensor.Tensor { return tr(ctx).Permute(1, 0).Mul(x(ctx)) }, 0},
		{"inner pad (per-lane guards)", func(ctx *tensor.Context) *tensor.Tensor {
			return x(ctx).Pad([][2]int{{0, 0}, {1, 3}}, 0).Add(ctx.Const(1, ir.Float32)).Sqrt()
		}, 1e-6},
		{"outer pad (one guard)", func(ctx *tensor.Context) *tensor.Tensor { return x(ctx).Pad([][2]int{{2, 1}, {0, 0}}, 0).Abs().Sqrt() }, 1e-6},
		{"shifted loads", func(ctx *tensor.Context) *tensor.Tensor {
			r := row(ctx)
			return r.Shrink([][2]int{{0, 1}, {0, 4096}}).Sub(r.Shrink([][2]int{{0, 1}, {1, 4097}}))
		}, 0},
		{"half", func(ctx *tensor.Context) *tensor.Tensor { v := h(ctx); return v.Mul(v).Add(v) }, 1e-3},
		{"matmul lanes", func(ctx *tensor.Context) *tensor.Tensor { return a(ctx).Dot(b(ctx)).Relu() }, 1e-4},
		{"padded grid", func(ctx *tensor.Context) *tensor.Tensor { return big(ctx).Exp2() }, 1e-5},
		{"odd size", func(ctx *tensor.Context) *tensor.Tensor { return odd(ctx).Neg().Exp2() }, 1e-5},
		{"where", func(ctx *tensor.Context) *tensor.Tensor {
			v := x(ctx)
			return v.Lt(ctx.Const(0, ir.Float32)).Where(v.Neg(), v.Sin())
		}, 1e-5},
		{"rand", func(ctx *tensor.Context) *tensor.Tensor {
			ctx.ManualSeed(7)
			return ctx.Rand(8, 64).Mul(ctx.Const(3, ir.Float32))
		}, 0},
	}
	for _, c := range cases {
		compareDevices(t, c.name, engines, c.build, c.tol)
	}
}
