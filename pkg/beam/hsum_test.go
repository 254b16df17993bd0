package beam

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"tgc/pkg/fuse"
	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// TestHorizontalSumsExact runs kernels whose rows end in a horizontal sum
// of vector accumulators (ir.HSum: a matrix-vector product with float32
// and float16 weights, softmax's row sum) on the CPU twice: with the plan's
// sums, which the renderer prints as adds of the vectors' even and odd
// lanes, and without them, a scalar add per lane of the kernel's tree. The
// outputs must agree bit for bit (the same additions in the same order),
// at both vector widths. (The GO interpreter is no bitwise reference: gcc
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
		x    *tensor.Tensor
		opts fuse.Options
	}{
		"matvec f32":   {floats(r, 1, 768).Dot(floats(r, 48, 768).T()), fuse.Options{}},
		"matvec f16":   {floats(r, 1, 512).Dot(half(40, 512).Cast(ir.Float32).T()), fuse.Options{}},
		"softmax rows": {floats(r, 8, 64).Softmax(-1), fuse.Options{HoistReduces: true}},
	}
	sums := 0
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
					if onCPU.ref[i] != nil && !bytes.Equal(onCPU.ref[i], scalarSums.ref[i]) {
						t.Errorf("%s: output %d differs from the scalar sums' in its bits", what, i)
					}
				}
				onCPU.free()
				scalarSums.free()
			}
		}
	}
	if sums < 6 {
		t.Errorf("only %d horizontal sums planned (want the matvecs' and softmax's, at both widths)", sums)
	}
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
