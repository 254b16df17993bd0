// Package nn is tinygrad's nn for tgc: layers (Go structs holding their
// tensors, with tinygrad's initialization), losses, optimizers and state
// dicts. There is no Module class: parameters are found by walking struct
// fields, slices and maps (Parameters, StateDict), as tinygrad walks
// attributes. Constructors take the tensor.Context the layer's tensors live
// in; layers read its training flag (dropout, batch statistics).
package nn

import (
	"fmt"
	"math"

	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// filled is a tensor of shape filled with v that owns its memory (a host
// buffer, not a broadcast constant), so that two layers' parameters are
// never the same node.
func filled(ctx *tensor.Context, v float64, dt ir.DType, shape ...int) *tensor.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	vals := make([]float64, n)
	for i := range vals {
		vals[i] = v
	}
	t, err := ctx.FromFloats(dt, shape, vals)
	if err != nil {
		return tensor.Errorf("nn", "%v", err)
	}
	return t
}

// param marks t as a parameter (requires grad).
func param(t *tensor.Tensor) *tensor.Tensor { return t.SetRequiresGrad(true) }

// Linear is y = x·Wᵀ + b. Weight (out, in) and bias (out) are uniform in
// ±1/sqrt(in) (tinygrad's init; the same as kaiming_uniform(a=sqrt(5))).
type Linear struct {
	Weight *tensor.Tensor
	Bias   *tensor.Tensor // nil without bias
}

// NewLinear makes a Linear layer.
func NewLinear(ctx *tensor.Context, in, out int, bias bool) *Linear {
	bound := 1 / math.Sqrt(float64(in))
	l := &Linear{Weight: param(ctx.Uniform(-bound, bound, out, in))}
	if bias {
		l.Bias = param(ctx.Uniform(-bound, bound, out))
	}
	return l
}

// Forward applies the layer.
func (l *Linear) Forward(x *tensor.Tensor) *tensor.Tensor {
	return x.Linear(l.Weight.T(), l.Bias)
}

// Conv2d is a 2-D convolution; weight (out, in/groups, kh, kw) and bias
// (out) are uniform in ±1/sqrt(in*kh*kw), as in tinygrad.
type Conv2d struct {
	Weight *tensor.Tensor
	Bias   *tensor.Tensor // nil without bias
	Opts   tensor.ConvOpts
}

// NewConv2d makes a Conv2d layer. kernel is (k) or (kh, kw).
func NewConv2d(ctx *tensor.Context, in, out int, kernel []int, opts tensor.ConvOpts, bias bool) (*Conv2d, error) {
	if len(kernel) == 1 {
		kernel = []int{kernel[0], kernel[0]}
	}
	if len(kernel) != 2 || kernel[0] <= 0 || kernel[1] <= 0 {
		return nil, fmt.Errorf("Conv2d: kernel_size must be one or two positive ints, got %v", kernel)
	}
	groups := max(opts.Groups, 1)
	if in <= 0 || out <= 0 || in%groups != 0 || out%groups != 0 {
		return nil, fmt.Errorf("Conv2d: in_channels %d and out_channels %d must be positive multiples of groups %d", in, out, groups)
	}
	scale := 1 / math.Sqrt(float64(in*kernel[0]*kernel[1]))
	c := &Conv2d{Weight: param(ctx.Uniform(-scale, scale, out, in/groups, kernel[0], kernel[1])), Opts: opts}
	if bias {
		c.Bias = param(ctx.Uniform(-scale, scale, out))
	}
	return c, nil
}

// Forward applies the convolution.
func (c *Conv2d) Forward(x *tensor.Tensor) *tensor.Tensor {
	return x.Conv2d(c.Weight, c.Bias, c.Opts)
}

// BatchNorm normalizes over every axis but 1 (the channels). While the
// context is training it uses the batch statistics and updates the running
// ones (running = (1-momentum)*running + momentum*batch, the variance
// unbiased); otherwise it uses the running statistics.
type BatchNorm struct {
	Weight, Bias              *tensor.Tensor // nil when not affine
	RunningMean, RunningVar   *tensor.Tensor // nil without running stats
	NumBatchesTracked         *tensor.Tensor
	Eps, Momentum             float64
	TrackRunningStats, Affine bool
}

// NewBatchNorm makes a BatchNorm over sz channels with tinygrad's defaults
// (eps 1e-5, momentum 0.1, affine, tracking running statistics).
func NewBatchNorm(ctx *tensor.Context, sz int) *BatchNorm {
	return NewBatchNormWith(ctx, sz, 1e-5, 0.1, true, true)
}

// NewBatchNormWith makes a BatchNorm with explicit options.
func NewBatchNormWith(ctx *tensor.Context, sz int, eps, momentum float64, affine, trackRunningStats bool) *BatchNorm {
	b := &BatchNorm{Eps: eps, Momentum: momentum, Affine: affine, TrackRunningStats: trackRunningStats}
	if affine {
		b.Weight, b.Bias = param(filled(ctx, 1, ir.Float32, sz)), param(filled(ctx, 0, ir.Float32, sz))
	}
	if trackRunningStats {
		b.RunningMean = filled(ctx, 0, ir.Float32, sz).SetRequiresGrad(false)
		b.RunningVar = filled(ctx, 1, ir.Float32, sz).SetRequiresGrad(false)
	}
	b.NumBatchesTracked = filled(ctx, 0, ir.Int32, 1).SetRequiresGrad(false)
	return b
}

// Forward normalizes x (N, C, ...).
func (b *BatchNorm) Forward(x *tensor.Tensor) *tensor.Tensor {
	if x.Err() != nil {
		return x
	}
	if x.Ndim() < 2 {
		return tensor.Errorf("BatchNorm", "input %s needs a channel dimension (N, C, ...)", tensor.FormatShape(x.Shape()))
	}
	training := x.Context().Training()
	if b.TrackRunningStats && !training {
		return x.Batchnorm(b.Weight, b.Bias, b.RunningMean, b.RunningVar.Add(x.Const(b.Eps, ir.Float32)).Rsqrt())
	}
	var axes []int
	for i := range x.Ndim() {
		if i != 1 {
			axes = append(axes, i)
		}
	}
	mean := x.Mean(false, axes...)
	shape := make([]int, x.Ndim())
	for i := range shape {
		shape[i] = 1
	}
	shape[1] = -1
	// tinygrad detaches the mean here; its gradient contribution through
	// the variance is exactly zero, so this graph is the same function.
	y := x.Sub(mean.Reshape(shape...))
	variance := y.Mul(y).Mean(false, axes...)
	if b.TrackRunningStats && training {
		m := b.Momentum
		n := float64(x.Numel())
		unbias := n / (n - float64(x.Shape()[1]))
		b.RunningMean.Assign(b.RunningMean.Mul(x.Const(1-m, ir.Float32)).Add(mean.Detach().Mul(x.Const(m, ir.Float32))))
		b.RunningVar.Assign(b.RunningVar.Mul(x.Const(1-m, ir.Float32)).Add(variance.Detach().Mul(x.Const(m*unbias, ir.Float32))))
		b.NumBatchesTracked.Assign(b.NumBatchesTracked.Add(x.Const(1, ir.Int32)))
	}
	return x.Batchnorm(b.Weight, b.Bias, mean, variance.Add(x.Const(b.Eps, ir.Float32)).Rsqrt())
}

// LayerNorm normalizes over the last len(shape) axes, then scales and
// shifts elementwise (weight ones, bias zeros).
type LayerNorm struct {
	Weight, Bias *tensor.Tensor // nil without elementwise affine
	Shape        []int
	Eps          float64
}

// NewLayerNorm makes a LayerNorm over the trailing shape (eps 1e-5).
func NewLayerNorm(ctx *tensor.Context, shape []int, eps float64, affine bool) *LayerNorm {
	l := &LayerNorm{Shape: append([]int{}, shape...), Eps: eps}
	if affine {
		l.Weight, l.Bias = param(filled(ctx, 1, ir.Float32, shape...)), param(filled(ctx, 0, ir.Float32, shape...))
	}
	return l
}

// Forward applies the layer.
func (l *LayerNorm) Forward(x *tensor.Tensor) *tensor.Tensor {
	if x.Err() != nil {
		return x
	}
	s := x.Shape()
	k := len(l.Shape)
	if len(s) < k || fmt.Sprint(s[len(s)-k:]) != fmt.Sprint(l.Shape) {
		return tensor.Errorf("LayerNorm", "input %s does not end with the normalized shape %s", tensor.FormatShape(s), tensor.FormatShape(l.Shape))
	}
	axes := make([]int, k)
	for i := range axes {
		axes[i] = -1 - i
	}
	y := x.Layernorm(l.Eps, axes...)
	if l.Weight == nil {
		return y
	}
	return y.Mul(l.Weight).Add(l.Bias)
}

// RMSNorm is x * rsqrt(mean(x², -1) + eps) * weight, computed in float32.
type RMSNorm struct {
	Weight *tensor.Tensor // nil without elementwise affine
	Eps    float64
}

// NewRMSNorm makes an RMSNorm over the last dimension of size dim (tinygrad's eps is 1e-6).
func NewRMSNorm(ctx *tensor.Context, dim int, eps float64, affine bool) *RMSNorm {
	r := &RMSNorm{Eps: eps}
	if affine {
		r.Weight = param(filled(ctx, 1, ir.Float32, dim))
	}
	return r
}

// Forward applies the layer.
func (r *RMSNorm) Forward(x *tensor.Tensor) *tensor.Tensor {
	if x.Err() != nil {
		return x
	}
	f := x.Cast(ir.Float32)
	y := f.Mul(f.Mul(f).Mean(true, -1).Add(x.Const(r.Eps, ir.Float32)).Rsqrt()).Cast(x.DType())
	if r.Weight == nil {
		return y
	}
	return y.Mul(r.Weight)
}

// Embedding maps integer indices to rows of Weight (vocab, embed), glorot
// uniform initialized. The lookup is a one-hot compare and a sum, so it
// fuses and is differentiable.
type Embedding struct {
	Weight      *tensor.Tensor
	Vocab, Size int
}

// NewEmbedding makes an Embedding.
func NewEmbedding(ctx *tensor.Context, vocab, size int) *Embedding {
	return &Embedding{Weight: param(ctx.GlorotUniform(vocab, size)), Vocab: vocab, Size: size}
}

// Forward looks up idx (any shape of ints) and returns idx.shape + (size,).
func (e *Embedding) Forward(idx *tensor.Tensor) *tensor.Tensor {
	if idx.Err() != nil {
		return idx
	}
	if !idx.DType().IsInt() {
		return tensor.Errorf("Embedding", "indices must be integers, got %s", idx.DType())
	}
	shape := append(idx.Shape(), 1, 1)
	ar := idx.Context().Arange(0, float64(e.Vocab), 1, idx.DType()).Reshape(e.Vocab, 1)
	hit := idx.Reshape(shape...).Eq(ar)
	return hit.Where(e.Weight, idx.Const(0, e.Weight.DType())).Sum(false, -2)
}

// Dropout is x.Dropout(p) while x's context is training, else x.
func Dropout(x *tensor.Tensor, p float64) *tensor.Tensor {
	if x.Err() != nil || !x.Context().Training() {
		return x
	}
	return x.Dropout(p)
}

// MSE is the mean squared error (reduction "mean", "sum" or "none").
func MSE(pred, target *tensor.Tensor, reduction string) *tensor.Tensor {
	d := pred.Sub(target)
	sq := d.Mul(d)
	switch reduction {
	case "mean":
		return sq.Mean(false)
	case "sum":
		return sq.Sum(false)
	case "none":
		return sq
	}
	return tensor.Errorf("mse", "reduction must be \"none\", \"mean\" or \"sum\", got %q", reduction)
}
