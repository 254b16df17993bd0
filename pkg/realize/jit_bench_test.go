package realize

import (
	"testing"

	"tgc/pkg/nn"
	"tgc/pkg/tensor"
)

// BenchmarkTrainStep is one training step of a small MLP (784-128-10,
// Adam, batch 64) on the CPU, without and with TinyJit.
func BenchmarkTrainStep(b *testing.B) {
	for _, jit := range []bool{false, true} {
		name := "plain"
		if jit {
			name = "jit"
		}
		b.Run(name, func(b *testing.B) {
			ctx, _, err := NewContext("CPU", Options{})
			if err != nil {
				b.Skip(err)
			}
			ctx.SetTraining(true)
			ctx.ManualSeed(1)
			m := newTinyMLP(ctx, 784, 128, 10)
			opt, err := nn.NewAdam(nn.Parameters(m), 0.001, 0.9, 0.999, 1e-8)
			if err != nil {
				b.Fatal(err)
			}
			step := trainStep(m, opt)
			if jit {
				step = NewJit(ctx, "train_step", step).Call0
			}
			x, y := mkBatch(b, ctx, 0, 64, 784, 10)
			for range 3 { // warm-up: compile, capture
				if _, err := step([]*tensor.Tensor{x, y}); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for range b.N {
				out, err := step([]*tensor.Tensor{x, y})
				if err != nil {
					b.Fatal(err)
				}
				_ = out
			}
		})
	}
}
