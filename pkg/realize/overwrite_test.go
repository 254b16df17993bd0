package realize

import (
	"math"
	"slices"
	"testing"

	"tgc/pkg/backend"
	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// TestOverwriteInputs: a kernel writes its output over an input that dies
// with it exactly where every element is read before its store: g = f(s)
// with s = a@b, both a schedule's scratch (then g@w). The results match a
// float64 computation, so an overwrite where one is not safe (a flip, a
// transpose, a running sum, a row read again after a kept loop stored it)
// shows as wrong numbers. The softmax's peak is one scratch buffer of the
// two.
func TestOverwriteInputs(t *testing.T) {
	const rows, inner, cols, outs = 24, 16, 24, 3 // square: a transpose is a candidate
	av, bv, wv := make([]float64, rows*inner), make([]float64, inner*cols), make([]float64, cols*outs)
	for i := range av {
		av[i] = float64(float32(math.Sin(float64(i)*0.7) * 0.9))
	}
	for i := range bv {
		bv[i] = float64(float32(math.Cos(float64(i)*1.3) * 0.8))
	}
	for i := range wv {
		wv[i] = float64(float32(math.Sin(float64(i)*2.1+0.5) * 0.6))
	}
	s := make([][]float64, rows)
	for r := range s {
		s[r] = make([]float64, cols)
		for c := range s[r] {
			for k := range inner {
				s[r][c] += av[r*inner+k] * bv[k*cols+c]
			}
		}
	}
	each := func(f func(r, c int) float64) [][]float64 {
		out := make([][]float64, rows)
		for r := range out {
			out[r] = make([]float64, cols)
			for c := range out[r] {
				out[r][c] = f(r, c)
			}
		}
		return out
	}
	softmax := func(r, c int) float64 {
		m, sum := math.Inf(-1), 0.0
		for _, v := range s[r] {
			m = max(m, v)
		}
		for _, v := range s[r] {
			sum += math.Exp(v - m)
		}
		return math.Exp(s[r][c]-m) / sum
	}
	mean := func(r int) float64 {
		sum := 0.0
		for _, v := range s[r] {
			sum += v
		}
		return sum / cols
	}
	cases := []struct {
		name   string
		f      func(ctx *tensor.Context, s *tensor.Tensor) *tensor.Tensor
		want   [][]float64
		cpu, g bool // overwrites on the CPU, on GO
	}{
		{"softmax", func(_ *tensor.Context, s *tensor.Tensor) *tensor.Tensor { return s.Softmax(-1) }, each(softmax), true, true},
		{"scale", func(ctx *tensor.Context, s *tensor.Tensor) *tensor.Tensor {
			return s.Mul(ctx.Full([]int{rows, cols}, 2, ir.Float32)).Exp()
		}, each(func(r, c int) float64 { return math.Exp(2 * s[r][c]) }), true, true},
		{"centred rows", func(_ *tensor.Context, s *tensor.Tensor) *tensor.Tensor { return s.Sub(s.Mean(true, 1)) },
			each(func(r, c int) float64 { return s[r][c] - mean(r) }), true, true},
		{"flip", func(_ *tensor.Context, s *tensor.Tensor) *tensor.Tensor { return s.Add(s.Flip(1)).Contiguous() },
			each(func(r, c int) float64 { return s[r][c] + s[r][cols-1-c] }), false, false},
		{"transpose", func(_ *tensor.Context, s *tensor.Tensor) *tensor.Tensor { return s.T().Contiguous() },
			each(func(r, c int) float64 { return s[c][r] }), false, false},
		{"running sum", func(_ *tensor.Context, s *tensor.Tensor) *tensor.Tensor { return s.Cumsum(1) },
			each(func(r, c int) float64 {
				sum := 0.0
				for k := 0; k <= c; k++ {
					sum += s[r][k]
				}
				return sum
			}), false, false},
		// the CPU's row kernel takes the maximum of all of s once a launch
		// piece, while another thread may be storing its rows: s must stay
		{"minus the max", func(_ *tensor.Context, s *tensor.Tensor) *tensor.Tensor { return s.Sub(s.Max(true, 0, 1)).Exp() },
			each(func(r, c int) float64 {
				m := math.Inf(-1)
				for _, row := range s {
					m = max(m, slices.Max(row))
				}
				return math.Exp(s[r][c] - m)
			}), false, true},
		// the row kernel's maximum reads another row than it stores
		{"minus the mirrored row's max", func(_ *tensor.Context, s *tensor.Tensor) *tensor.Tensor {
			return s.Sub(s.Flip(0).Max(true, 1)).Exp()
		}, each(func(r, c int) float64 { return math.Exp(s[r][c] - slices.Max(s[rows-1-r])) }), false, true},
		{"minus the column's max", func(_ *tensor.Context, s *tensor.Tensor) *tensor.Tensor { return s.Sub(s.Max(true, 0)).Exp() },
			each(func(r, c int) float64 {
				m := math.Inf(-1)
				for _, row := range s {
					m = max(m, row[c])
				}
				return math.Exp(s[r][c] - m)
			}), true, true},
		{"softmax of row pairs", func(_ *tensor.Context, s *tensor.Tensor) *tensor.Tensor {
			return s.Reshape(rows/2, 2*cols).Softmax(-1).Reshape(rows, cols)
		}, each(func(r, c int) float64 {
			pair := append(slices.Clone(s[r&^1]), s[r|1]...)
			m, sum := slices.Max(pair), 0.0
			for _, v := range pair {
				sum += math.Exp(v - m)
			}
			return math.Exp(s[r][c]-m) / sum
		}), true, true},
		// no keep plan here (its store reads s besides the kept value):
		// the row kernel reads s at each column before storing there
		{"softmax plus its input", func(_ *tensor.Context, s *tensor.Tensor) *tensor.Tensor { return s.Softmax(-1).Add(s) },
			each(func(r, c int) float64 { return softmax(r, c) + s[r][c] }), true, true},
		// the CPU's row kernel keeps the exps in the output row while it
		// sums them; the row's plain sum is another reduce of s, which
		// need not run before that loop: s must stay
		{"softmax times the row's sum", func(_ *tensor.Context, s *tensor.Tensor) *tensor.Tensor {
			return s.Softmax(-1).Mul(s.Sum(true, 1))
		}, each(func(r, c int) float64 { return softmax(r, c) * mean(r) * cols }), false, true},
	}
	for _, dev := range []string{"GO", "CPU"} {
		ctx, e, err := NewContext(dev, Options{})
		if err != nil {
			t.Logf("skipping %s: %v", dev, err)
			continue
		}
		for _, tc := range cases {
			leaf := func(shape []int, v []float64) *tensor.Tensor {
				x, err := ctx.FromFloats(ir.Float32, shape, v)
				if err != nil {
					t.Fatal(err)
				}
				return x.Realize()
			}
			a, b, w := leaf([]int{rows, inner}, av), leaf([]int{inner, cols}, bv), leaf([]int{cols, outs}, wv)
			mem, counts := e.Dev.(backend.MemoryCounter)
			var live int64
			if counts {
				live = mem.Memory().Live
				mem.ResetPeak()
			}
			before := e.Stats.Overwrites
			got, err := tc.f(ctx, a.Dot(b).Contiguous()).Dot(w).Floats()
			if err != nil {
				t.Fatalf("%s %s: %v", dev, tc.name, err)
			}
			worst := 0.0
			for r := range rows {
				for o := range outs {
					want := 0.0
					for c := range cols {
						want += tc.want[r][c] * wv[c*outs+o]
					}
					worst = max(worst, math.Abs(got[r*outs+o]-want)/(1+math.Abs(want)))
				}
			}
			if worst > 1e-5 {
				t.Errorf("%s %s: off by %.3g from the float64 result", dev, tc.name, worst)
			}
			want := tc.g
			if dev == "CPU" {
				want = tc.cpu
			}
			if n := e.Stats.Overwrites - before; (n > 0) != want {
				t.Errorf("%s %s: %d kernels wrote over their input, want overwrites: %v", dev, tc.name, n, want)
			}
			if counts && dev == "CPU" && tc.name == "softmax" {
				// s and the probabilities were 2 buffers at once (beside
				// the inputs, uploaded now, and the result)
				one, rest := int64(rows*cols*4), int64((rows*inner+inner*cols+cols*outs+rows*outs)*4)
				if peak := mem.Memory().Peak - live; peak > one+rest {
					t.Errorf("%s softmax: %d bytes live at the peak, want one buffer of %d and %d of inputs and result", dev, peak, one, rest)
				}
			}
		}
	}
}
