package realize

import (
	"math"
	"math/rand/v2"
	"testing"

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
