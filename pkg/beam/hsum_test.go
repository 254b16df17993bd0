package beam

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"tgc/pkg/fuse"
	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// TestHorizontalSumsExact runs kernels whose rows end in a horizontal sum
// of vector accumulators (ir.HSum: a matrix-vector product with float32
// and float16 weights, softmax's row sum, a Q4_K row's minimum terms over
// its hoisted sums of x packed into a vector) on the CPU twice: with the plan's
// sums, which the renderer prints as adds of the vectors' even and odd
// lanes, and without them, a scalar add per lane of the kernel's tree. The
// outputs must agree bit for bit (the same additions in the same order),
// at both vector widths; the Q4_K row's to 1e-5 of its largest output
// (its lanes are products, which gcc contracts into FMAs in the scalar
// form). (The GO interpreter is no bitwise reference: gcc
// contracts the loop's multiply-adds into FMAs.)
func TestHorizontalSumsExact(t *testing.T) {
	cpu := cpuDevice(t)
	r := rand.New(rand.NewPCG(3, 4))
	half := func(rows, cols int) *tensor.Tensor {
		v := make([]float64, rows*cols)
		for i := range v {
			v[i] = r.Float64()*2 - 1
		}
		w, err := floats(r, 1).Context().FromFloats(ir.Float16, []int{rows, cols}, v)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	graphs := map[string]struct {
		x      *tensor.Tensor
		opts   fuse.Options
		approx bool // the lanes are products: gcc contracts the scalar form's into FMAs
	}{
		"matvec f32":   {floats(r, 1, 768).Dot(floats(r, 48, 768).T()), fuse.Options{}, false},
		"matvec f16":   {floats(r, 1, 512).Dot(half(40, 512).Cast(ir.Float32).T()), fuse.Options{}, false},
		"softmax rows": {floats(r, 8, 64).Softmax(-1), fuse.Options{HoistReduces: true}, false},
		"matvec Q4_K":  {floats(r, 1, 512).Dot(packedQ4K(t, r, 16, 512).T()), fuse.Options{}, true},
	}
	sums, packed := 0, 0
	for name, g := range graphs {
		s, err := fuse.Create([]*tensor.Node{g.x.Node()}, g.opts)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, it := range s.Items {
			for _, w := range []int{8, 16} {
				target := ir.CPUTarget
				target.VecWidth = w
				k, err := ir.OptimizeFor(it.Kernel, target, nil)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if k.SIMD == nil || len(k.SIMD.HSums) == 0 {
					continue
				}
				sums += len(k.SIMD.HSums)
				for _, h := range k.SIMD.HSums {
					if slices.ContainsFunc(h.Vecs, func(v ir.Lanes) bool { return readsPacked(k.SIMD, v) }) {
						packed++
					}
				}
				checkHSumVerified(t, name, k)
				what := fmt.Sprintf("%s %s (width %d)", name, k.Name, w)
				onCPU, err := newBench(cpu, target, k)
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				scalar := *k.SIMD
				scalar.HSums = nil
				sk := *k
				sk.SIMD = &scalar
				scalarSums, err := newBench(cpu, target, &sk)
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				for i := range onCPU.ref {
					switch {
					case onCPU.ref[i] == nil:
					case g.approx:
						if err := closeFloats(onCPU.ref[i], scalarSums.ref[i], 1e-5); err != nil {
							t.Errorf("%s: output %d against the scalar sums': %v", what, i, err)
						}
					case !bytes.Equal(onCPU.ref[i], scalarSums.ref[i]):
						t.Errorf("%s: output %d differs from the scalar sums' in its bits", what, i)
					}
				}
				onCPU.free()
				scalarSums.free()
			}
		}
	}
	if sums < 8 {
		t.Errorf("only %d horizontal sums planned (want the matvecs' and softmax's, at both widths)", sums)
	}
	if packed < 2 {
		t.Errorf("%d horizontal sums over packed scalars (want the Q4_K row's minimum terms, one per row, at both widths)", packed)
	}
}

// readsPacked says whether the vector t reads a vector packed from
// scalars (a Q4_K row's hoisted sums of x).
func readsPacked(plan *ir.SIMD, t ir.Lanes) bool {
	if plan.Packed(t, map[*ir.Expr][]*ir.Axis{}) {
		return true
	}
	if t.Uniform() || t.L[0].Op == ir.OpLoad || t.L[0].Op == ir.OpReduce {
		return false
	}
	for j := range t.L[0].Src {
		if readsPacked(plan, t.Src(j)) {
			return true
		}
	}
	return false
}

// checkHSumVerified: Verify refuses a plan whose horizontal sum names
// vectors the tree does not add in that order (the first and last vectors
// swapped), or a lane of one vector in place of another's.
func checkHSumVerified(t *testing.T, name string, k *ir.Kernel) {
	t.Helper()
	if err := k.Verify(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	h := k.SIMD.HSums[0]
	bad := [][]ir.Lanes{slices.Clone(h.Vecs), slices.Clone(h.Vecs)}
	if n := len(h.Vecs); n > 1 {
		bad[0][0], bad[0][n-1] = bad[0][n-1], bad[0][0]
	} else {
		bad[0] = bad[0][:0]
	}
	bad[1][0].L[0], bad[1][0].L[1] = bad[1][0].L[1], bad[1][0].L[0]
	for _, vecs := range bad {
		plan := *k.SIMD
		plan.HSums = []ir.HSum{{Root: h.Root, Vecs: vecs}}
		bk := *k
		bk.SIMD = &plan
		if err := bk.Verify(); err == nil {
			t.Errorf("%s: Verify accepts a horizontal sum of %d vectors the tree does not add", name, len(vecs))
		}
	}
}

// closeFloats compares two float32 outputs (bytes) within a relative
// tolerance of the larger magnitude in each.
func closeFloats(a, b []byte, tol float64) error {
	if len(a) != len(b) {
		return fmt.Errorf("%d bytes against %d", len(a), len(b))
	}
	scale := 0.0
	for i := 0; i+4 <= len(a); i += 4 {
		scale = math.Max(scale, math.Abs(float64(math.Float32frombits(binary.LittleEndian.Uint32(a[i:])))))
	}
	for i := 0; i+4 <= len(a); i += 4 {
		x := float64(math.Float32frombits(binary.LittleEndian.Uint32(a[i:])))
		y := float64(math.Float32frombits(binary.LittleEndian.Uint32(b[i:])))
		if math.Abs(x-y) > tol*scale {
			return fmt.Errorf("element %d: %g against %g", i/4, x, y)
		}
	}
	return nil
}
