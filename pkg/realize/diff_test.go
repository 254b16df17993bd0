package realize

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// randomGraph builds a random graph of primitives over two 3-D inputs:
// elementwise ops, reduces, and every movement op.
func randomGraph(r *rand.Rand, x, y *tensor.Tensor) (*tensor.Tensor, string) {
	cur, desc := x, "x"
	for step := 0; step < 6; step++ {
		switch r.IntN(11) {
		case 0:
			cur, desc = cur.Add(y), desc+"+y"
		case 1:
			cur, desc = cur.Mul(y.Flip(1)), desc+"*y.flip(1)"
		case 2:
			cur, desc = cur.Maximum(y.Permute(0, 1, 2)), desc+".maximum(y)"
		case 3:
			cur, desc = cur.Sin(), desc+".sin()"
		case 4:
			a := r.IntN(3)
			cur, desc = cur.Sum(true, a).Expand(x.Shape()...).Contiguous(), desc+fmt.Sprintf(".sum(%d,keep).expand", a)
		case 5:
			cur, desc = cur.Max(true, 2).Add(cur), desc+".max(2)+self"
		case 6:
			cur, desc = cur.Reshape(x.Shape()[0]*x.Shape()[1], x.Shape()[2]).Reshape(x.Shape()...), desc+".reshape2d.reshape3d"
		case 7:
			p := [][2]int{{1, 0}, {0, 2}, {1, 1}}
			s := [][2]int{{0, x.Shape()[0]}, {1, x.Shape()[1] + 1}, {1, x.Shape()[2] + 1}}
			cur, desc = cur.Pad(p, 0).Shrink(s), desc+".pad.shrink"
		case 8:
			cur, desc = cur.Lt(y).Where(cur, y.Exp2()), desc+".lt(y).where(self,exp2(y))"
		case 9:
			cur, desc = cur.Permute(0, 2, 1).Permute(0, 2, 1).Neg(), desc+".T.T.neg"
		case 10:
			cur, desc = cur.Cast(ir.Float16).Cast(ir.Float32), desc+".half"
		}
	}
	return cur.Sum(false, 1), desc + ".sum(1)"
}

// TestCPUMatchesGO: random graphs give the same values on CPU and GO.
func TestCPUMatchesGO(t *testing.T) {
	compareRandomGraphs(t, 1, 25, func(r *rand.Rand) []int {
		return []int{1 + r.IntN(4), 1 + r.IntN(5), 1 + r.IntN(6)}
	})
}

// TestCPUMatchesGOOptimized: random graphs big enough for the CPU's
// optimization passes (upcast lanes, grouped reduces) against GO, which
// runs the kernels without them.
func TestCPUMatchesGOOptimized(t *testing.T) {
	compareRandomGraphs(t, 3, 12, func(r *rand.Rand) []int {
		return []int{1 + r.IntN(4), 16 * (1 + r.IntN(2)), 16 * (1 + r.IntN(3))}
	})
}

func compareRandomGraphs(t *testing.T, seed uint64, count int, shapeOf func(*rand.Rand) []int) {
	t.Helper()
	cpu, err := Open("CPU", Options{})
	if err != nil {
		t.Skipf("CPU unavailable: %v", err)
	}
	goe, _ := Open("GO", Options{})
	r := rand.New(rand.NewPCG(seed, 2))
	for i := 0; i < count; i++ {
		shape := shapeOf(r)
		n := shape[0] * shape[1] * shape[2]
		vx, vy := make([]float64, n), make([]float64, n)
		for j := range vx {
			vx[j], vy[j] = r.Float64()*4-2, r.Float64()*4-2
		}
		var res [2][]float64
		var desc string
		for d, e := range []*Engine{goe, cpu} {
			ctx := tensor.NewContext(e)
			// Fresh inputs per device, so each computes from scratch.
			x, _ := ctx.FromFloats(ir.Float32, shape, vx)
			y, _ := ctx.FromFloats(ir.Float32, shape, vy)
			var out *tensor.Tensor
			out, desc = randomGraph(rand.New(rand.NewPCG(uint64(i)+seed*1000, 99)), x, y)
			if res[d], err = out.Floats(); err != nil {
				t.Fatalf("%s: %v", desc, err)
			}
		}
		for j := range res[0] {
			a, b := res[0][j], res[1][j]
			if math.IsNaN(a) && math.IsNaN(b) {
				continue
			}
			if math.Abs(a-b) > 1e-4+1e-4*math.Abs(a) {
				t.Errorf("graph %d %v %s: element %d: GO %v, CPU %v", i, shape, desc, j, a, b)
				break
			}
		}
	}
}
