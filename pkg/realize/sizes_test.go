package realize

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"tgc/pkg/backend"
	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// TestOpsPastTheCaches: functions of a matrix past every host's L2 and a
// quarter of its L3 (8 MiB: where the CPU's plans prefetch rows and
// panels, stream and lag their stores, tile transposes for the host's
// caches) realized on the CPU and on the GO device, which plans nothing:
// the same results within float32 rounding, at the host's vector width
// and, on an AVX-512 host, at 8 lanes (an AVX2 host's code). A layernorm
// of such a size once failed to compile, a prefetch written before the
// loop of the variable it named; the tests of the plans use small caches
// and small shapes, this one the host's. TGC_SIZES=big runs them over
// 4096x4096, 3000x3000, 8x400000 and 400000x8 too (minutes: the GO
// device's).
func TestOpsPastTheCaches(t *testing.T) {
	cpu, err := Open("CPU", Options{})
	if err != nil {
		t.Skipf("CPU unavailable: %v", err)
	}
	cpus, widths := []*Engine{cpu}, []int{backend.HostVecWidth()}
	if backend.HostVecWidth() == 16 { // and the 8-lane code an AVX2 host runs
		dev, err := backend.OpenCPUWidth(8)
		if err != nil {
			t.Fatal(err)
		}
		cpus, widths = append(cpus, New(dev, Options{})), append(widths, 8)
	}
	goe, err := Open("GO", Options{})
	if err != nil {
		t.Fatal(err)
	}
	shapes := [][2]int{{2048, 1024}}
	if os.Getenv("TGC_SIZES") == "big" {
		shapes = append(shapes, [2]int{4096, 4096}, [2]int{3000, 3000}, [2]int{8, 400000}, [2]int{400000, 8})
	}
	zero, one := 0, 1
	c := func(x *tensor.Tensor, v float64) *tensor.Tensor { return x.Context().Const(v, ir.Float32) }
	ops := []struct {
		name string
		f    func(x *tensor.Tensor) *tensor.Tensor
	}{
		{"sum rows", func(x *tensor.Tensor) *tensor.Tensor { return x.Sum(false, 1) }},
		{"sum columns", func(x *tensor.Tensor) *tensor.Tensor { return x.Sum(false, 0) }},
		{"max columns", func(x *tensor.Tensor) *tensor.Tensor { return x.Max(false, 0) }},
		{"var rows", func(x *tensor.Tensor) *tensor.Tensor { return x.Var(false, 1, 1) }},
		{"std columns", func(x *tensor.Tensor) *tensor.Tensor { return x.Std(false, 1, 0) }},
		{"argmax rows", func(x *tensor.Tensor) *tensor.Tensor { return x.Argmax(&one, false).Cast(ir.Float32) }},
		{"argmax columns", func(x *tensor.Tensor) *tensor.Tensor { return x.Argmax(&zero, false).Cast(ir.Float32) }},
		{"logsumexp rows", func(x *tensor.Tensor) *tensor.Tensor { return x.Logsumexp(false, 1) }},
		{"softmax rows", func(x *tensor.Tensor) *tensor.Tensor { return x.Softmax(-1) }},
		{"softmax columns", func(x *tensor.Tensor) *tensor.Tensor { return x.Softmax(0) }},
		{"log_softmax rows", func(x *tensor.Tensor) *tensor.Tensor { return x.LogSoftmax(-1) }},
		{"layernorm rows", func(x *tensor.Tensor) *tensor.Tensor { return x.Layernorm(1e-5, -1) }},
		{"layernorm columns", func(x *tensor.Tensor) *tensor.Tensor { return x.Layernorm(1e-5, 0) }},
		{"rmsnorm rows", func(x *tensor.Tensor) *tensor.Tensor { return x.Mul(x).Mean(true, -1).Add(c(x, 1e-6)).Rsqrt().Mul(x) }},
		{"centred columns", func(x *tensor.Tensor) *tensor.Tensor { return x.Sub(x.Mean(true, 0)) }},
		{"transposed", func(x *tensor.Tensor) *tensor.Tensor { return x.T().Contiguous() }},
		{"transposed gelu", func(x *tensor.Tensor) *tensor.Tensor { return x.T().Gelu() }},
		{"sigmoid", func(x *tensor.Tensor) *tensor.Tensor { return x.Sigmoid() }},
		{"erf", func(x *tensor.Tensor) *tensor.Tensor { return x.Erf() }},
		{"row bias", func(x *tensor.Tensor) *tensor.Tensor { return x.Add(x.Shrink([][2]int{{0, 1}, {0, x.Shape()[1]}})) }},
		{"column bias", func(x *tensor.Tensor) *tensor.Tensor { return x.Add(x.Shrink([][2]int{{0, x.Shape()[0]}, {0, 1}})) }},
		{"flipped", func(x *tensor.Tensor) *tensor.Tensor { return x.Flip(0, 1).Mul(c(x, 2)) }},
		{"padded", func(x *tensor.Tensor) *tensor.Tensor { return x.Pad([][2]int{{1, 2}, {3, 4}}, 1) }},
		{"times first rows transposed", func(x *tensor.Tensor) *tensor.Tensor {
			return x.Dot(x.Shrink([][2]int{{0, 8}, {0, x.Shape()[1]}}).T())
		}},
		{"first rows transposed times them", func(x *tensor.Tensor) *tensor.Tensor {
			r := x.Shrink([][2]int{{0, 8}, {0, min(x.Shape()[1], 256)}})
			return r.T().Dot(r)
		}},
		{"concatenated", func(x *tensor.Tensor) *tensor.Tensor { return x.Cat(1, x.Mul(c(x, 2))) }},
		{"where", func(x *tensor.Tensor) *tensor.Tensor { return x.Gt(c(x, 0.5)).Where(x, x.Neg()) }},
		{"float16 and back", func(x *tensor.Tensor) *tensor.Tensor { return x.Cast(ir.Float16).Cast(ir.Float32).Mul(c(x, 3)) }},
	}
	r := rand.New(rand.NewPCG(11, 12))
	for _, sh := range shapes {
		v := make([]float64, sh[0]*sh[1])
		for i := range v {
			v[i] = float64(float32(r.Float64()*4 - 2))
		}
		for _, op := range ops {
			name := fmt.Sprintf("%s of %dx%d", op.name, sh[0], sh[1])
			var res [][]float64
			for _, e := range append([]*Engine{goe}, cpus...) {
				ctx := tensor.NewContext(e)
				x, err := ctx.FromFloats(ir.Float32, sh[:], v)
				if err != nil {
					t.Fatal(err)
				}
				r, err := op.f(x.Realize()).Floats()
				if err != nil {
					t.Fatalf("%s on %s: %v", name, e.Dev.Name(), err)
				}
				res = append(res, r)
			}
			// float32 sums in other orders: their error grows with the
			// elements summed (of magnitude up to 2 here)
			tol := 1e-7 * float64(max(sh[0], sh[1]))
			for d, got := range res[1:] {
				for i, a := range res[0] {
					if b := got[i]; math.Abs(a-b) > tol+1e-4*math.Abs(a) || math.IsNaN(b) != math.IsNaN(a) {
						t.Errorf("%s: element %d: GO %v, CPU (%d lanes) %v", name, i, a, widths[d], b)
						break
					}
				}
			}
		}
	}
}
