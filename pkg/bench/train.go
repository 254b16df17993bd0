package bench

import (
	"fmt"
	"time"

	"tgc/pkg/autograd"
	"tgc/pkg/ir"
	"tgc/pkg/nn"
	"tgc/pkg/realize"
	"tgc/pkg/tensor"
)

// Training steps are timed whole (wall clock: graph building, autograd,
// scheduling from cache, every kernel, the optimizer), since that is what
// a user waits for. The data is random: the step costs the same.

// mnistCNN is tinygrad's beautiful_mnist model (models/beautiful_mnist.tg).
type mnistCNN struct {
	C1, C2, C3, C4 *nn.Conv2d
	B1, B2         *nn.BatchNorm
	L              *nn.Linear
}

func newMnistCNN(ctx *tensor.Context) (*mnistCNN, error) {
	m := &mnistCNN{B1: nn.NewBatchNorm(ctx, 32), B2: nn.NewBatchNorm(ctx, 64), L: nn.NewLinear(ctx, 576, 10, true)}
	var err error
	for _, c := range []struct {
		dst        **nn.Conv2d
		in, out, k int
	}{{&m.C1, 1, 32, 5}, {&m.C2, 32, 32, 5}, {&m.C3, 32, 64, 3}, {&m.C4, 64, 64, 3}} {
		if *c.dst, err = nn.NewConv2d(ctx, c.in, c.out, []int{c.k, c.k}, tensor.ConvOpts{}, true); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *mnistCNN) forward(x *tensor.Tensor) *tensor.Tensor {
	pool := tensor.PoolOpts{Kernel: []int{2, 2}}
	x = m.C2.Forward(m.C1.Forward(x).Relu()).Relu()
	x = m.B1.Forward(x).MaxPool2d(pool)
	x = m.C4.Forward(m.C3.Forward(x).Relu()).Relu()
	x = m.B2.Forward(x).MaxPool2d(pool)
	return m.L.Forward(x.Flatten(1, -1))
}

// trainStep builds a model and returns one Adam step on a random batch
// (the context is training from now on). The batch is of dtype in: uint8
// pixels for the cnn, as tgc train (tinygrad's mnist()) feeds it, whose
// first convolution then reads bytes.
func trainStep(ctx *tensor.Context, batch int, shape []int, in ir.DType, forward func(*tensor.Tensor) *tensor.Tensor, params []*tensor.Tensor) (func() error, error) {
	opt, err := nn.NewAdam(params, 1e-3, 0.9, 0.999, 1e-8)
	if err != nil {
		return nil, err
	}
	x := ctx.Rand(append([]int{batch}, shape...)...)
	if in == ir.Uint8 {
		x = x.Mul(ctx.Const(255, ir.Float32)).Cast(ir.Uint8)
	}
	x = x.Realize()
	y := ctx.Randint(0, 10, batch).Realize()
	ctx.SetTraining(true)
	return func() error {
		loss := forward(x).SparseCategoricalCrossentropy(y, -1, 0, "mean")
		if err := loss.Err(); err != nil {
			return err
		}
		opt.ZeroGrad()
		if err := autograd.Backward(loss); err != nil {
			return err
		}
		return opt.Step(loss)
	}, nil
}

// StepWorkloads are the training-step benchmarks (FLOPs are approximate:
// forward + backward ≈ 3 × forward).
func StepWorkloads() []Workload {
	return []Workload{
		{Name: "mnist_cnn_step", FLOPs: 3 * 512 * 2 * (24*24*32*25 + 20*20*32*32*25 + 8*8*64*32*9 + 6*6*64*64*9 + 576*10),
			Setup: func(ctx *tensor.Context) (func() error, error) {
				m, err := newMnistCNN(ctx)
				if err != nil {
					return nil, err
				}
				return trainStep(ctx, 512, []int{1, 28, 28}, ir.Uint8, m.forward, nn.Parameters(m))
			}},
		{Name: "mnist_mlp_step", FLOPs: 3 * 64 * 2 * (784*128 + 128*10),
			Setup: func(ctx *tensor.Context) (func() error, error) {
				l1, l2 := nn.NewLinear(ctx, 784, 128, true), nn.NewLinear(ctx, 128, 10, true)
				fwd := func(x *tensor.Tensor) *tensor.Tensor { return l2.Forward(l1.Forward(x).LeakyRelu(0.01)) }
				return trainStep(ctx, 64, []int{784}, ir.Float32, fwd, append(nn.Parameters(l1), nn.Parameters(l2)...))
			}},
	}
}

// RunStep times a training-step workload on the engine's device: one
// warm-up step (compiles), then iters steps; the median wall time is
// reported. before, if not nil, runs untimed before each timed step
// (`tgc bench --ort` runs onnxruntime there, so both see the same load).
func RunStep(e *realize.Engine, w Workload, iters int, before func() error) (Result, error) {
	device := e.Dev.Name()
	step, err := w.Setup(tensor.NewContext(e))
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", w.Name, err)
	}
	if err := step(); err != nil {
		return Result{}, fmt.Errorf("%s: %w", w.Name, err)
	}
	var times []time.Duration
	var runs []float64
	var cpu time.Duration
	for i := 0; i < max(iters, 1); i++ {
		if before != nil {
			if err := before(); err != nil {
				return Result{}, err
			}
		}
		c0, start := cpuTime(), time.Now()
		if err := step(); err != nil {
			return Result{}, fmt.Errorf("%s: %w", w.Name, err)
		}
		d := time.Since(start)
		cpu += cpuTime() - c0
		times, runs = append(times, d), append(runs, d.Seconds())
	}
	r := summarize(w, device, times, 0)
	r.CPUSeconds = perCore(cpu, len(times))
	r.Runs = runs
	return r, nil
}
