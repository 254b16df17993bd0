package realize

import (
	"testing"

	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// BenchmarkLower schedules and optimizes graphs for a fixed AVX-512 CPU
// target (the Zen 5 guest's caches, so the figure does not move with the
// host), without compiling: what a script pays each time it realizes a
// graph whose structure the schedule cache has not seen (a constant
// that changes from call to call).
func BenchmarkLower(b *testing.B) {
	tgt := ir.Target{Upcast: true, VecWidth: 16, VecRegs: 32, FMAWidth: 16, L1: 48 << 10, L2: 1 << 20, L3: 32 << 20, BufAlign: 64}
	cases := []struct {
		name  string
		build func(ctx *tensor.Context) *tensor.Tensor
	}{
		// a batch-8 conv with a scale fused into it, and its sum
		{"conv_b8", func(ctx *tensor.Context) *tensor.Tensor {
			x, w := seq(ctx, 8, 16, 32, 32), seq(ctx, 32, 16, 3, 3)
			return x.Mul(x.Scalar(1.001, true)).Conv2d(w, nil, tensor.ConvOpts{}).Sum(false)
		}},
		{"matmul_512", func(ctx *tensor.Context) *tensor.Tensor {
			return seq(ctx, 512, 512).Dot(seq(ctx, 512, 512))
		}},
		{"softmax_4096", func(ctx *tensor.Context) *tensor.Tensor {
			return seq(ctx, 4096, 4096).Softmax(-1)
		}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			ctx, _, err := NewContext("GO", Options{})
			if err != nil {
				b.Fatal(err)
			}
			out := c.build(ctx)
			if err := out.Err(); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				if _, _, _, err := (pipeline{target: tgt}).lower([]*tensor.Node{out.Node()}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
