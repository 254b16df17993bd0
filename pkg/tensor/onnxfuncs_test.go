package tensor_test

// The Tensor functions the ONNX importer added (prod, topk, sort, einsum,
// conv_transpose2d, pool windows) against float64 reference code, on the
// interpreter and the CPU.

import (
	"math"
	"math/rand"
	"slices"
	"sort"
	"testing"

	"tgc/pkg/ir"
	"tgc/pkg/realize"
	"tgc/pkg/tensor"
)

func randVals(r *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = float64(float32(r.Float64()*4 - 2))
	}
	return v
}

// index flattens a multi-index in row-major order.
func index(shape []int, idx ...int) int {
	off := 0
	for i, d := range shape {
		off = off*d + idx[i]
	}
	return off
}

func near(got, want []float64, tol float64) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if math.Abs(got[i]-want[i]) > tol*(1+math.Abs(want[i])) {
			return false
		}
	}
	return true
}

func TestONNXFunctionsAgainstReference(t *testing.T) {
	for _, dev := range []string{"GO", "CPU"} {
		c, _, err := realize.NewContext(dev, realize.Options{})
		if err != nil {
			t.Logf("skipping %s: %v", dev, err)
			continue
		}
		r := rand.New(rand.NewSource(1))
		check := func(name string, got *tensor.Tensor, wantShape []int, want []float64) {
			t.Helper()
			if !slices.Equal(got.Shape(), wantShape) {
				t.Errorf("%s %s: shape %v, want %v", dev, name, got.Shape(), wantShape)
				return
			}
			v, err := got.Floats()
			if err != nil {
				t.Errorf("%s %s: %v", dev, name, err)
				return
			}
			if !near(v, want, 1e-4) {
				t.Errorf("%s %s:\n got %v\nwant %v", dev, name, v, want)
			}
		}

		// prod over axis 1 of (3, 5, 2), and of every element of an int tensor
		xv := randVals(r, 30)
		x := buf(t, c, ir.Float32, []int{3, 5, 2}, xv...)
		var want []float64
		for i := range 3 {
			for k := range 2 {
				p := 1.0
				for j := range 5 {
					p *= xv[index([]int{3, 5, 2}, i, j, k)]
				}
				want = append(want, p)
			}
		}
		check("prod", x.Prod(false, 1), []int{3, 2}, want)
		check("prod int", buf(t, c, ir.Int32, []int{7}, 1, 2, -3, 4, 1, 2, 2).Prod(false), []int{}, []float64{-96})
		check("prod empty axis", c.Zeros([]int{2, 0}, ir.Float32).Prod(true, 1), []int{2, 1}, []float64{1, 1})

		// topk and sort along the last axis, ties by index
		sv := []float64{3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8}
		s := buf(t, c, ir.Float32, []int{2, 6}, sv...)
		vals, idx := s.TopK(3, -1, true)
		var wv, wi []float64
		for row := range 2 {
			order := []int{0, 1, 2, 3, 4, 5}
			sort.SliceStable(order, func(a, b int) bool { return sv[row*6+order[a]] > sv[row*6+order[b]] })
			for _, o := range order[:3] {
				wv, wi = append(wv, sv[row*6+o]), append(wi, float64(o))
			}
		}
		check("topk values", vals, []int{2, 3}, wv)
		check("topk indices", idx, []int{2, 3}, wi)
		sorted, order := s.Sort(1, false)
		wv, wi = nil, nil
		for row := range 2 {
			ord := []int{0, 1, 2, 3, 4, 5}
			sort.SliceStable(ord, func(a, b int) bool { return sv[row*6+ord[a]] < sv[row*6+ord[b]] })
			for _, o := range ord {
				wv, wi = append(wv, sv[row*6+o]), append(wi, float64(o))
			}
		}
		check("sort values", sorted, []int{2, 6}, wv)
		check("sort indices", order, []int{2, 6}, wi)

		// einsum: batched matmul, a diagonal, an implicit output, an ellipsis
		av, bv := randVals(r, 2*3*4), randVals(r, 2*4*5)
		a, b := buf(t, c, ir.Float32, []int{2, 3, 4}, av...), buf(t, c, ir.Float32, []int{2, 4, 5}, bv...)
		want = nil
		for n := range 2 {
			for i := range 3 {
				for k := range 5 {
					s := 0.0
					for j := range 4 {
						s += av[index([]int{2, 3, 4}, n, i, j)] * bv[index([]int{2, 4, 5}, n, j, k)]
					}
					want = append(want, s)
				}
			}
		}
		check("einsum bij,bjk->bik", tensor.Einsum("bij,bjk->bik", a, b), []int{2, 3, 5}, want)
		check("einsum ...ij,...jk", tensor.Einsum("...ij,...jk", a, b), []int{2, 3, 5}, want)
		mv := randVals(r, 16)
		m := buf(t, c, ir.Float32, []int{4, 4}, mv...)
		check("einsum ii->i", tensor.Einsum("ii->i", m), []int{4}, []float64{mv[0], mv[5], mv[10], mv[15]})
		check("einsum ii (trace)", tensor.Einsum("ii", m), []int{}, []float64{mv[0] + mv[5] + mv[10] + mv[15]})
		want = nil
		for j := range 4 {
			for i := range 4 {
				want = append(want, mv[i*4+j])
			}
		}
		check("einsum ij->ji", tensor.Einsum("ij->ji", m), []int{4, 4}, want)
		if e := tensor.Einsum("ij,jk->ik", a, b).Err(); e == nil {
			t.Errorf("%s einsum with a rank mismatch: no error", dev)
		}

		// conv_transpose2d: every input element scatters weight·x into the
		// output at stride·i - pad + dilation·k (the definition)
		for _, cs := range []struct{ cin, cout, groups, h, k, stride, pad, dil, outPad int }{
			{2, 3, 1, 4, 3, 2, 1, 1, 1},
			{4, 2, 2, 3, 2, 1, 0, 2, 0},
			{1, 1, 1, 5, 3, 3, 2, 1, 2},
		} {
			xv := randVals(r, cs.cin*cs.h*cs.h)
			wv := randVals(r, cs.cin*(cs.cout/cs.groups)*cs.k*cs.k)
			ho := (cs.h-1)*cs.stride - 2*cs.pad + cs.dil*(cs.k-1) + 1 + cs.outPad
			out := make([]float64, cs.cout*ho*ho)
			cinG, coutG := cs.cin/cs.groups, cs.cout/cs.groups
			for ci := range cs.cin {
				g := ci / cinG
				for co := range coutG {
					for y := range cs.h {
						for xx := range cs.h {
							for ky := range cs.k {
								for kx := range cs.k {
									oy, ox := y*cs.stride-cs.pad+ky*cs.dil, xx*cs.stride-cs.pad+kx*cs.dil
									if oy < 0 || ox < 0 || oy >= ho || ox >= ho {
										continue
									}
									out[index([]int{cs.cout, ho, ho}, g*coutG+co, oy, ox)] +=
										xv[index([]int{cs.cin, cs.h, cs.h}, ci, y, xx)] * wv[index([]int{cs.cin, coutG, cs.k, cs.k}, ci, co, ky, kx)]
								}
							}
						}
					}
				}
			}
			xt := buf(t, c, ir.Float32, []int{1, cs.cin, cs.h, cs.h}, xv...)
			wt := buf(t, c, ir.Float32, []int{cs.cin, coutG, cs.k, cs.k}, wv...)
			y := xt.ConvTranspose2d(wt, nil, tensor.ConvTransposeOpts{Groups: cs.groups, Stride: []int{cs.stride}, Padding: []int{cs.pad}, Dilation: []int{cs.dil}, OutputPadding: []int{cs.outPad}})
			check("conv_transpose2d", y, []int{1, cs.cout, ho, ho}, out)
		}

		// pool windows: (1, 1, 4, 4) 2x2 windows, stride 2, padded by 1 with -1
		pv := ints(16, 1, 0)
		win, k := buf(t, c, ir.Float32, []int{1, 1, 4, 4}, pv...).PoolWindows(tensor.PoolOpts{Kernel: []int{2, 2}, Stride: []int{2, 2}, Padding: []int{1}}, -1)
		if k != 2 {
			t.Errorf("%s pool windows: %d kernel dims", dev, k)
		}
		want = nil
		for oy := range 3 {
			for ox := range 3 {
				for ky := range 2 {
					for kx := range 2 {
						y, x := oy*2-1+ky, ox*2-1+kx
						if y < 0 || x < 0 || y >= 4 || x >= 4 {
							want = append(want, -1)
						} else {
							want = append(want, pv[y*4+x])
						}
					}
				}
			}
		}
		check("pool windows", win, []int{1, 1, 3, 3, 2, 2}, want)
	}
}
