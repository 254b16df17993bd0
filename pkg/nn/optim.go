package nn

import (
	"errors"
	"fmt"

	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// Optimizer updates parameters from their gradients (tinygrad's semantics).
type Optimizer interface {
	// ZeroGrad drops the parameters' gradients.
	ZeroGrad()
	// Step updates every parameter, and realizes the parameters, the
	// optimizer state, the buffers (tensors given without requires_grad,
	// such as BatchNorm running statistics) and extra in one schedule.
	Step(extra ...*tensor.Tensor) error
	// Params are the tensors the optimizer updates.
	Params() []*tensor.Tensor
	// LR is the learning rate, a realized scalar tensor: assign it a new
	// value to change the rate without recompiling the step.
	LR() *tensor.Tensor
}

// Parameters, optimizer state and buffers are updated with Tensor.Assign,
// which writes in place: each keeps its memory across steps (TinyJit
// replays rely on it), and a step's schedule reads every old value before
// writing the new ones.

// base holds what every optimizer shares.
type base struct {
	ctx             *tensor.Context // the parameters'
	params, buffers []*tensor.Tensor
	lr              *tensor.Tensor
	update          func(grads []*tensor.Tensor) []*tensor.Tensor // assigns; returns state to realize
}

func newBase(params []*tensor.Tensor, lr float64) (*base, error) {
	b := &base{}
	seen := map[*tensor.Tensor]bool{}
	for i, p := range params {
		if p == nil {
			return nil, fmt.Errorf("optimizer: parameter %d is nil", i)
		}
		if err := p.Err(); err != nil {
			return nil, fmt.Errorf("optimizer: parameter %d: %w", i, err)
		}
		if b.ctx == nil {
			b.ctx = p.Context()
		} else if p.Context() != b.ctx {
			return nil, fmt.Errorf("optimizer: parameter %d belongs to another context (run) than parameter 0", i)
		}
		if seen[p] {
			continue
		}
		seen[p] = true
		if p.RequiresGrad {
			p.SetRequiresGrad(true) // registers tensors whose field was set directly
			b.params = append(b.params, p)
		} else {
			b.buffers = append(b.buffers, p)
		}
	}
	if len(b.params) == 0 {
		return nil, errors.New("optimizer: no parameter requires grad")
	}
	b.lr = b.scalar(lr)
	// Compute lazily initialized parameters now, so that every step runs
	// the same schedule (the first one included) from buffers.
	all := append(append([]*tensor.Tensor{}, b.params...), b.buffers...)
	if err := tensor.RealizeAll(all...); err != nil {
		return nil, fmt.Errorf("optimizer: computing the parameters: %w", err)
	}
	detachAll(all)
	return b, nil
}

// detachAll rebinds realized tensors to plain buffer nodes, cutting them
// off the graphs that computed them (so old steps can be collected).
func detachAll(ts []*tensor.Tensor) {
	for _, t := range ts {
		if t.Node().Op != ir.OpBuffer && t.Node().Realized() != nil {
			t.Rebind()
		}
	}
}

// scalar is a realized float32 scalar (a buffer, so its value is data,
// not part of the compiled kernels).
func (b *base) scalar(v float64) *tensor.Tensor {
	t, err := b.ctx.FromFloats(ir.Float32, nil, []float64{v})
	if err != nil {
		return tensor.Errorf("optimizer", "%v", err)
	}
	return t
}

func (b *base) Params() []*tensor.Tensor { return b.params }
func (b *base) LR() *tensor.Tensor       { return b.lr }

func (b *base) ZeroGrad() {
	for _, p := range b.params {
		p.Grad = nil
	}
}

func (b *base) Step(extra ...*tensor.Tensor) error {
	if !b.ctx.Training() {
		return errors.New("step: Tensor.training is False; set it to True for training (batch statistics and dropout depend on it)")
	}
	grads := make([]*tensor.Tensor, len(b.params))
	for i, p := range b.params {
		if p.Grad == nil {
			return fmt.Errorf("step: parameter %d (%s %s) has no gradient: call backward() on the loss first", i, p.DType(), tensor.FormatShape(p.Shape()))
		}
		if err := p.Grad.Err(); err != nil {
			return fmt.Errorf("step: gradient of parameter %d: %w", i, err)
		}
		grads[i] = p.Grad
	}
	state := b.update(grads)
	state = append(state, b.lr) // realized with the step when it was assigned a lazy value
	// The step writes the parameters in place: the losses backward was
	// called on are computed with it, before the write, so that reading
	// them after the step gives the loss of the old parameters.
	extra = append(extra, b.ctx.TakeBackwardLosses()...)
	all := append(append(append(append([]*tensor.Tensor{}, b.params...), b.buffers...), state...), extra...)
	for _, t := range all {
		if err := t.Err(); err != nil {
			return fmt.Errorf("step: %w", err)
		}
	}
	if err := tensor.RealizeAll(all...); err != nil {
		return fmt.Errorf("step: %w", err)
	}
	// Cut the realized values off the graphs that computed them, so the
	// next step starts from buffers and old steps can be collected.
	detachAll(append(append(append([]*tensor.Tensor{}, b.params...), b.buffers...), state...))
	return nil
}

// zerosLike is a float32 buffer of zeros shaped like t (optimizer state).
func zerosLike(t *tensor.Tensor) *tensor.Tensor {
	return filled(t.Context(), 0, ir.Float32, t.Shape()...)
}

func (b *base) c32(v float64) *tensor.Tensor { return b.ctx.Const(v, ir.Float32) }

// SGD is stochastic gradient descent with momentum, Nesterov momentum and
// weight decay (PyTorch's formulation, tinygrad's SGD):
//
//	g = grad + wd*p;  b = momentum*b + g;  g = nesterov ? g + momentum*b : b;  p -= lr*g
type SGD struct {
	*base
	Momentum, WeightDecay float64
	Nesterov              bool
	B                     []*tensor.Tensor // momentum buffers (nil without momentum)
}

// NewSGD makes an SGD optimizer.
func NewSGD(params []*tensor.Tensor, lr, momentum, weightDecay float64, nesterov bool) (*SGD, error) {
	b, err := newBase(params, lr)
	if err != nil {
		return nil, err
	}
	o := &SGD{base: b, Momentum: momentum, WeightDecay: weightDecay, Nesterov: nesterov}
	if momentum != 0 {
		for _, p := range b.params {
			o.B = append(o.B, zerosLike(p))
		}
	}
	b.update = o.update
	return o, nil
}

func (o *SGD) update(grads []*tensor.Tensor) []*tensor.Tensor {
	for i, p := range o.params {
		g := grads[i].Cast(ir.Float32)
		pf := p.Cast(ir.Float32)
		if o.WeightDecay != 0 {
			g = g.Add(pf.Mul(o.c32(o.WeightDecay)))
		}
		if o.Momentum != 0 {
			o.B[i].Assign(o.B[i].Mul(o.c32(o.Momentum)).Add(g))
			if o.Nesterov {
				g = g.Add(o.B[i].Mul(o.c32(o.Momentum)))
			} else {
				g = o.B[i]
			}
		}
		p.Assign(pf.Sub(g.Mul(o.lr)).Cast(p.DType()))
	}
	return o.B
}

// Adam is Adam, or AdamW with a weight decay (decoupled: lr*wd*p is
// subtracted along with the Adam update), with bias correction:
//
//	m = b1*m + (1-b1)*g;  v = b2*v + (1-b2)*g²;  b1ᵗ *= b1;  b2ᵗ *= b2
//	p -= lr * (m/(1-b1ᵗ) / (sqrt(v/(1-b2ᵗ)) + eps) + wd*p)
type Adam struct {
	*base
	B1, B2, Eps, WeightDecay float64
	M, V                     []*tensor.Tensor
	B1t, B2t                 *tensor.Tensor // b1^t and b2^t, realized scalars
}

// NewAdam makes Adam (tinygrad's defaults: lr 0.001, b1 0.9, b2 0.999, eps 1e-8).
func NewAdam(params []*tensor.Tensor, lr, b1, b2, eps float64) (*Adam, error) {
	return NewAdamW(params, lr, b1, b2, eps, 0)
}

// NewAdamW makes AdamW (tinygrad's default weight decay is 0.01).
func NewAdamW(params []*tensor.Tensor, lr, b1, b2, eps, weightDecay float64) (*Adam, error) {
	b, err := newBase(params, lr)
	if err != nil {
		return nil, err
	}
	o := &Adam{base: b, B1: b1, B2: b2, Eps: eps, WeightDecay: weightDecay, B1t: b.scalar(1), B2t: b.scalar(1)}
	for _, p := range b.params {
		o.M = append(o.M, zerosLike(p))
		o.V = append(o.V, zerosLike(p))
	}
	b.update = o.update
	return o, nil
}

func (o *Adam) update(grads []*tensor.Tensor) []*tensor.Tensor {
	o.B1t.Assign(o.B1t.Mul(o.c32(o.B1)))
	o.B2t.Assign(o.B2t.Mul(o.c32(o.B2)))
	one := o.c32(1)
	c1 := one.Sub(o.B1t)
	c2 := one.Sub(o.B2t)
	for i, p := range o.params {
		g := grads[i].Cast(ir.Float32)
		pf := p.Cast(ir.Float32)
		o.M[i].Assign(o.M[i].Mul(o.c32(o.B1)).Add(g.Mul(o.c32(1 - o.B1))))
		o.V[i].Assign(o.V[i].Mul(o.c32(o.B2)).Add(g.Mul(g).Mul(o.c32(1 - o.B2))))
		up := o.M[i].Div(c1).Div(o.V[i].Div(c2).Sqrt().Add(o.c32(o.Eps)))
		if o.WeightDecay != 0 {
			up = up.Add(pf.Mul(o.c32(o.WeightDecay)))
		}
		p.Assign(pf.Sub(up.Mul(o.lr)).Cast(p.DType()))
	}
	state := []*tensor.Tensor{o.B1t, o.B2t}
	state = append(state, o.M...)
	return append(state, o.V...)
}
