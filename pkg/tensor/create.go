package tensor

import (
	"math"
	"math/bits"

	"tgc/pkg/ir"
)

// Creation functions. Constants are broadcast views of one scalar; index
// ranges come from scans (idxRange); random tensors transform Rand. None of
// them touches memory until realized.

// Zeros is a tensor of shape filled with 0.
func (c *Context) Zeros(shape []int, dt ir.DType) *Tensor { return c.Full(shape, 0, dt) }

// Ones is a tensor of shape filled with 1.
func (c *Context) Ones(shape []int, dt ir.DType) *Tensor { return c.Full(shape, 1, dt) }

// Empty is a tensor of its own memory (zero-filled when realized): unlike
// Zeros, two calls are two nodes, so two realized empties are two buffers
// (a model's KV caches, written in place one by one).
func (c *Context) Empty(shape []int, dt ir.DType) *Tensor {
	z := c.Zeros(shape, dt)
	if z.err != nil {
		return z
	}
	return FromNode(c.newNode(ir.OpContiguous, dt, z.node.Shape, leafArg(NewID()), z.node))
}

// FullLike is a tensor of t's shape and dtype filled with v.
func (t *Tensor) FullLike(v float64) *Tensor {
	if t.err != nil {
		return t
	}
	return t.node.ctx.Full(t.node.Shape, v, t.DType())
}

// ZerosLike is FullLike(0).
func (t *Tensor) ZerosLike() *Tensor { return t.FullLike(0) }

// OnesLike is FullLike(1).
func (t *Tensor) OnesLike() *Tensor { return t.FullLike(1) }

// idxRange is 0, 1, ..., n-1 as int32, built without a reduce so that it
// fuses into whatever consumes it (arange, argmax, one-hot, eye, tril):
// over a (2, 2, ..., 2) grid of 2^k >= n cells, binary digit j is the pad
// [0, 2^(k-1-j)] of a constant laid along axis j; the digits are added,
// flattened and cut to n. (tinygrad sums a window of ones, a reduce that
// its symbolic rewriter folds away; here it would be a kernel of its own.)
func (c *Context) idxRange(n int) *Tensor { return c.idxRangeOf(n, ir.Int32) }

// idxRangeOf is idxRange in an integer dtype dt (int64 past 2^31).
func (c *Context) idxRangeOf(n int, dt ir.DType) *Tensor {
	if n <= 0 {
		return c.Full([]int{0}, 0, dt)
	}
	k := bits.Len(uint(n - 1))
	if k == 0 {
		return c.Full([]int{1}, 0, dt)
	}
	var acc *Tensor
	for j := range k {
		shape := ones(k)
		shape[j] = 2
		digit := c.ConstInt(int64(1)<<(k-1-j), dt).Reshape(1).padZero([][2]int{{1, 0}}).Reshape(shape...)
		if acc == nil {
			acc = digit
		} else {
			acc = acc.Add(digit)
		}
	}
	return acc.Reshape(1 << k).Shrink([][2]int{{0, n}})
}

// Arange is start, start+step, ... up to (excluding) stop, of length
// ceil((stop-start)/step) (empty when that is not positive, as numpy does).
// The frontend picks dt: int32 when all arguments are ints, else float32.
// Values are start + i*step over idxRange, computed in dt (float16 in
// float32).
func (c *Context) Arange(start, stop, step float64, dt ir.DType) *Tensor {
	if step == 0 {
		return errorf("arange", "step must not be zero")
	}
	for _, v := range []float64{start, stop, step} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return errorf("arange", "arguments must be finite, got start=%g, stop=%g, step=%g", start, stop, step)
		}
	}
	n := math.Ceil((stop - start) / step)
	if n <= 0 {
		return c.Full([]int{0}, 0, dt)
	}
	if n > math.MaxInt32 {
		return errorf("arange", "[%g, %g) with step %g has %g elements, more than 2^31", start, stop, step, n)
	}
	if !dt.IsFloat() {
		lo, hi := dt.ValueRange()
		if start < lo || stop-step > hi || start > hi || stop-step < lo {
			return errorf("arange", "[%g, %g) is not representable in dtype %s", start, stop, dt)
		}
	}
	cdt := dt
	if dt == ir.Float16 || dt == ir.Bool {
		cdt = ir.Float32
		if dt == ir.Bool {
			cdt = ir.Int32
		}
	}
	idx := c.idxRange(int(n)).Cast(cdt)
	return idx.Mul(c.Const(step, cdt)).Add(c.Const(start, cdt)).Cast(dt)
}

// Linspace is steps evenly spaced values from start to stop inclusive.
func (c *Context) Linspace(start, stop float64, steps int, dt ir.DType) *Tensor {
	if steps < 0 {
		return errorf("linspace", "number of steps must be non-negative, got %d", steps)
	}
	if steps == 1 {
		return c.Full([]int{1}, start, dt)
	}
	idx := c.idxRange(steps).Cast(ir.Float32)
	d := (stop - start) / float64(max(steps-1, 1))
	return idx.Mul(c.Const(d, ir.Float32)).Add(c.Const(start, ir.Float32)).Cast(dt)
}

// Eye is the n x m identity matrix (tinygrad's m defaults to n).
func (c *Context) Eye(n, m int, dt ir.DType) *Tensor {
	if n < 0 || m < 0 {
		return errorf("eye", "cannot make a %d x %d identity matrix", n, m)
	}
	return c.idxRange(n).Reshape(n, 1).Eq(c.idxRange(m).Reshape(1, m)).Cast(dt)
}

// Uniform is uniform in [low, high), float32.
func (c *Context) Uniform(low, high float64, shape ...int) *Tensor {
	r := c.Rand(shape...)
	return r.Mul(r.fscalar(high - low)).Add(r.fscalar(low))
}

// Randn is standard normal, float32, by the Box-Muller transform of two
// uniform tensors drawn as one Rand(2, shape...):
// cos(2*pi*u0) * sqrt(-2*log(1-u1)).
func (c *Context) Randn(shape ...int) *Tensor {
	if e := checkShape("randn", shape); e != nil {
		return e
	}
	src := c.Rand(append([]int{2}, shape...)...)
	u0, u1 := src.selectAt(0, 0), src.selectAt(0, 1)
	cos := u0.Mul(u0.fscalar(2 * math.Pi)).Cos()
	l := u1.fscalar(1).Sub(u1).Log()
	return cos.Mul(l.Mul(l.fscalar(-2)).Sqrt())
}

// Normal is mean + std*randn.
func (c *Context) Normal(mean, std float64, shape ...int) *Tensor {
	r := c.Randn(shape...)
	return r.Mul(r.fscalar(std)).Add(r.fscalar(mean))
}

// Randint is uniform over the integers [low, high), int32:
// floor(rand*(high-low)) + low, exact for negative low too.
func (c *Context) Randint(low, high int, shape ...int) *Tensor {
	if high <= low {
		return errorf("randint", "low (%d) must be less than high (%d)", low, high)
	}
	r := c.Rand(shape...)
	off := r.Mul(r.fscalar(float64(high - low))).Cast(ir.Int32) // non-negative: cast is floor
	return off.Add(c.Const(float64(low), ir.Int32))
}

// ScaledUniform is uniform in [-1, 1) times prod(shape)^-0.5.
func (c *Context) ScaledUniform(shape ...int) *Tensor {
	u := c.Uniform(-1, 1, shape...)
	return u.Mul(u.fscalar(math.Pow(float64(prod(shape)), -0.5)))
}

// fanIn is prod(shape[1:]), the inputs feeding one output of a layer.
func fanIn(op string, shape []int) (int, *Tensor) {
	if len(shape) == 0 {
		return 0, errorf(op, "needs a shape with at least one dimension")
	}
	return prod(shape[1:]), nil
}

// KaimingUniform is uniform in [-bound, bound) with
// bound = sqrt(3)*sqrt(2/(1+a^2))/sqrt(prod(shape[1:])). tinygrad's
// Tensor.kaiming_uniform defaults to a = 0.01; its nn.Linear passes sqrt(5).
func (c *Context) KaimingUniform(a float64, shape ...int) *Tensor {
	fi, e := fanIn("kaiming_uniform", shape)
	if e != nil {
		return e
	}
	bound := math.Sqrt(3) * math.Sqrt(2/(1+a*a)) / math.Sqrt(float64(fi))
	return c.Uniform(-bound, bound, shape...)
}

// KaimingNormal is normal with std sqrt(2/(1+a^2))/sqrt(prod(shape[1:])).
func (c *Context) KaimingNormal(a float64, shape ...int) *Tensor {
	fi, e := fanIn("kaiming_normal", shape)
	if e != nil {
		return e
	}
	return c.Normal(0, math.Sqrt(2/(1+a*a))/math.Sqrt(float64(fi)), shape...)
}

// GlorotUniform is uniform in [-1, 1) times
// sqrt(6/(shape[0]+prod(shape[1:]))).
func (c *Context) GlorotUniform(shape ...int) *Tensor {
	fi, e := fanIn("glorot_uniform", shape)
	if e != nil {
		return e
	}
	u := c.Uniform(-1, 1, shape...)
	return u.Mul(u.fscalar(math.Sqrt(6 / float64(shape[0]+fi))))
}

// RandLike is Rand of t's shape (float32).
func (t *Tensor) RandLike() *Tensor {
	if t.err != nil {
		return t
	}
	return t.node.ctx.Rand(t.node.Shape...)
}

// RandnLike is Randn of t's shape (float32).
func (t *Tensor) RandnLike() *Tensor {
	if t.err != nil {
		return t
	}
	return t.node.ctx.Randn(t.node.Shape...)
}

// Dropout zeroes each element with probability p and scales the rest by
// 1/(1-p). The caller decides whether it is training (tinygrad returns t
// unchanged outside training).
func (t *Tensor) Dropout(p float64) *Tensor {
	if t.err != nil {
		return t
	}
	if p < 0 || p > 1 {
		return errorf("dropout", "probability must be in [0, 1], got %g", p)
	}
	if p == 0 {
		return t
	}
	keep := t.node.ctx.Rand(t.node.Shape...).Ge(t.Const(p, ir.Float32))
	r := keep.Where(t, t.iscalar(0))
	return r.Div(r.fscalar(1 - p))
}
