package tensorlib

import (
	"fmt"

	"go.starlark.net/starlark"

	"tgc/pkg/ir"
	"tgc/pkg/script/pyrt"
	"tgc/pkg/tensor"
)

// The Tensor methods: tinygrad's names and keyword arguments, each bound to
// the pkg/tensor function that implements it. Arguments are unpacked with
// starlark.UnpackArgs, so wrong types and unknown keywords give messages
// like "sum: for parameter axis: got string, want int, tuple of ints or
// None".

// methodFunc implements one method; t is the receiver.
type methodFunc func(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error)

// callMethod is the builtin behind every bound method.
func callMethod(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (v starlark.Value, err error) {
	self := b.Receiver().(*Tensor)
	c := &pyrt.Call{Thread: th, Name: b.Name(), Args: args, Kwargs: kwargs, Self: self}
	defer pyrt.Recover(c, &err)
	return methods[b.Name()](c, self.t)
}

// methods are the Tensor methods: this file's, the neural-network ones
// (nnops.go) and autograd's (autograd.go).
var methods = union(coreMethods, nnMethods, autogradMethods, extraMethods)

// coreMethods are the elementwise, reduction, movement, creation and value
// methods.
var coreMethods = map[string]methodFunc{
	// ---- elementwise: arithmetic ----
	"add":         binaryMethod((*tensor.Tensor).Add),
	"sub":         binaryMethod((*tensor.Tensor).Sub),
	"mul":         binaryMethod((*tensor.Tensor).Mul),
	"div":         divMethod,
	"idiv":        binaryMethod((*tensor.Tensor).IDiv),
	"mod":         binaryMethod((*tensor.Tensor).Mod),
	"fmod":        binaryMethod((*tensor.Tensor).Fmod),
	"pow":         binaryMethod((*tensor.Tensor).Pow),
	"maximum":     binaryMethod((*tensor.Tensor).Maximum),
	"minimum":     binaryMethod((*tensor.Tensor).Minimum),
	"logaddexp":   binaryMethod((*tensor.Tensor).Logaddexp),
	"bitwise_and": binaryMethod((*tensor.Tensor).And),
	"bitwise_or":  binaryMethod((*tensor.Tensor).Or),
	"bitwise_xor": binaryMethod((*tensor.Tensor).Xor),
	"lshift":      shiftMethod(true),
	"rshift":      shiftMethod(false),
	"logical_and": binaryMethod(logicalAnd),
	"logical_or":  binaryMethod(logicalOr),
	"lt":          binaryMethod((*tensor.Tensor).Lt),
	"le":          binaryMethod((*tensor.Tensor).Le),
	"gt":          binaryMethod((*tensor.Tensor).Gt),
	"ge":          binaryMethod((*tensor.Tensor).Ge),
	"eq":          binaryMethod((*tensor.Tensor).Eq),
	"ne":          binaryMethod((*tensor.Tensor).Ne),
	"where":       whereMethod,
	"lerp":        lerpMethod,
	"clip":        clipMethod,
	"clamp":       clipMethod,

	// ---- elementwise: unary ----
	"neg":         unaryMethod((*tensor.Tensor).Neg),
	"logical_not": unaryMethod((*tensor.Tensor).LogicalNot),
	"bitwise_not": unaryMethod(bitwiseNot),
	"abs":         unaryMethod((*tensor.Tensor).Abs),
	"sign":        unaryMethod((*tensor.Tensor).Sign),
	"square":      unaryMethod((*tensor.Tensor).Square),
	"reciprocal":  unaryMethod((*tensor.Tensor).Reciprocal),
	"sqrt":        unaryMethod((*tensor.Tensor).Sqrt),
	"rsqrt":       unaryMethod((*tensor.Tensor).Rsqrt),
	"exp":         unaryMethod((*tensor.Tensor).Exp),
	"exp2":        unaryMethod((*tensor.Tensor).Exp2),
	"log":         unaryMethod((*tensor.Tensor).Log),
	"log2":        unaryMethod((*tensor.Tensor).Log2),
	"log10":       unaryMethod((*tensor.Tensor).Log10),
	"sin":         unaryMethod((*tensor.Tensor).Sin),
	"cos":         unaryMethod((*tensor.Tensor).Cos),
	"tan":         unaryMethod((*tensor.Tensor).Tan),
	"asin":        unaryMethod((*tensor.Tensor).Asin),
	"acos":        unaryMethod((*tensor.Tensor).Acos),
	"atan":        unaryMethod((*tensor.Tensor).Atan),
	"sinh":        unaryMethod((*tensor.Tensor).Sinh),
	"cosh":        unaryMethod((*tensor.Tensor).Cosh),
	"tanh":        unaryMethod((*tensor.Tensor).Tanh),
	"asinh":       unaryMethod((*tensor.Tensor).Asinh),
	"acosh":       unaryMethod((*tensor.Tensor).Acosh),
	"atanh":       unaryMethod((*tensor.Tensor).Atanh),
	"erf":         unaryMethod((*tensor.Tensor).Erf),
	"floor":       unaryMethod((*tensor.Tensor).Floor),
	"ceil":        unaryMethod((*tensor.Tensor).Ceil),
	"round":       unaryMethod((*tensor.Tensor).Round),
	"trunc":       unaryMethod((*tensor.Tensor).Trunc),
	"isnan":       unaryMethod((*tensor.Tensor).Isnan),
	"isinf":       unaryMethod((*tensor.Tensor).Isinf),
	"isfinite":    unaryMethod((*tensor.Tensor).Isfinite),

	// ---- activations ----
	"relu":        unaryMethod((*tensor.Tensor).Relu),
	"relu6":       unaryMethod((*tensor.Tensor).Relu6),
	"sigmoid":     unaryMethod((*tensor.Tensor).Sigmoid),
	"logsigmoid":  unaryMethod((*tensor.Tensor).Logsigmoid),
	"gelu":        unaryMethod((*tensor.Tensor).Gelu),
	"quick_gelu":  unaryMethod((*tensor.Tensor).QuickGelu),
	"silu":        unaryMethod((*tensor.Tensor).Silu),
	"swish":       unaryMethod((*tensor.Tensor).Swish),
	"selu":        unaryMethod((*tensor.Tensor).Selu),
	"mish":        unaryMethod((*tensor.Tensor).Mish),
	"softsign":    unaryMethod((*tensor.Tensor).Softsign),
	"hardswish":   unaryMethod((*tensor.Tensor).Hardswish),
	"leaky_relu":  floatMethod((*tensor.Tensor).LeakyRelu, "neg_slope", 0.01),
	"elu":         floatMethod((*tensor.Tensor).Elu, "alpha", 1),
	"celu":        floatMethod((*tensor.Tensor).Celu, "alpha", 1),
	"softplus":    floatMethod((*tensor.Tensor).Softplus, "beta", 1),
	"hardsigmoid": hardsigmoidMethod,
	"hardtanh":    hardtanhMethod,

	// ---- dtype ----
	"cast":     castMethod,
	"bitcast":  bitcastMethod,
	"float":    castTo(ir.Float32),
	"half":     castTo(ir.Float16),
	"bfloat16": castTo(ir.BFloat16),
	"double":   castTo(ir.Float64),
	"int":      castTo(ir.Int32),
	"long":     castTo(ir.Int64),
	"short":    castTo(ir.Int16),
	"bool":     castTo(ir.Bool),

	// ---- reductions ----
	"sum":         reduceMethod((*tensor.Tensor).Sum),
	"max":         reduceMethod((*tensor.Tensor).Max),
	"min":         reduceMethod((*tensor.Tensor).Min),
	"mean":        reduceMethod((*tensor.Tensor).Mean),
	"any":         reduceMethod((*tensor.Tensor).Any),
	"all":         reduceMethod((*tensor.Tensor).All),
	"logsumexp":   reduceMethod((*tensor.Tensor).Logsumexp),
	"var":         varMethod((*tensor.Tensor).Var),
	"std":         varMethod((*tensor.Tensor).Std),
	"argmax":      argMethod((*tensor.Tensor).Argmax),
	"argmin":      argMethod((*tensor.Tensor).Argmin),
	"softmax":     axisMethod((*tensor.Tensor).Softmax, -1),
	"log_softmax": axisMethod((*tensor.Tensor).LogSoftmax, -1),
	"cumsum":      axisMethod((*tensor.Tensor).Cumsum, 0),
	"cummax":      axisMethod((*tensor.Tensor).Cummax, 0),

	// ---- movement ----
	"reshape":           reshapeMethod,
	"view":              reshapeMethod,
	"permute":           intsMethod("order", (*tensor.Tensor).Permute),
	"expand":            dimsMethod(expandDims),
	"repeat":            intsMethod("repeats", (*tensor.Tensor).Repeat),
	"flip":              intsMethod("axis", (*tensor.Tensor).Flip),
	"transpose":         transposeMethod,
	"flatten":           flattenMethod,
	"unflatten":         unflattenMethod,
	"squeeze":           squeezeMethod,
	"unsqueeze":         unsqueezeMethod,
	"pad":               padMethod,
	"shrink":            shrinkMethod,
	"cat":               catMethod,
	"stack":             stackMethod,
	"split":             splitMethod,
	"chunk":             chunkMethod,
	"repeat_interleave": repeatInterleaveMethod,
	"contiguous":        unaryMethod((*tensor.Tensor).Contiguous),
	"gather":            gatherMethod,

	// ---- creation from a tensor ----
	"zeros_like": likeMethod(0),
	"ones_like":  likeMethod(1),
	"full_like":  fullLikeMethod,
	"rand_like":  unaryMethod((*tensor.Tensor).RandLike),
	"randn_like": unaryMethod((*tensor.Tensor).RandnLike),
	"dropout":    dropoutMethod,

	// ---- values ----
	"realize":      realizeMethod,
	"numpy":        numpyMethod,
	"sequential":   sequentialMethod,
	"to":           toMethod,
	"to_":          toMethod,
	"item":         item,
	"tolist":       tolist,
	"numel":        intProp(func(t *tensor.Tensor) int { return t.Numel() }),
	"element_size": intProp(func(t *tensor.Tensor) int { return t.DType().Size() }),
	"nbytes":       intProp(func(t *tensor.Tensor) int { return t.Numel() * t.DType().Size() }),
	"size":         sizeMethod,
	"dim":          intProp(func(t *tensor.Tensor) int { return t.Ndim() }),
}

// union merges method tables; a name defined twice is a bug.
func union(tables ...map[string]methodFunc) map[string]methodFunc {
	out := map[string]methodFunc{}
	for _, t := range tables {
		for name, m := range t {
			if _, dup := out[name]; dup {
				panic("tensorlib: method " + name + " is defined twice")
			}
			out[name] = m
		}
	}
	return out
}

// ---- method makers ----

// unaryMethod binds f(t) with no arguments.
func unaryMethod(f func(*tensor.Tensor) *tensor.Tensor) methodFunc {
	return func(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
		if err := c.NoArgs(); err != nil {
			return nil, err
		}
		return Wrap(f(t))
	}
}

// binaryMethod binds f(t, x) for x a tensor or number, with tinygrad's
// reverse=False keyword.
func binaryMethod(f func(a, b *tensor.Tensor) *tensor.Tensor) methodFunc {
	return func(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
		var x starlark.Value
		reverse := false
		if err := c.Unpack("x", &x, "reverse?", &reverse); err != nil {
			return nil, err
		}
		o, err := tensorOrScalar(c, t, x, "x")
		if err != nil {
			return nil, err
		}
		if reverse {
			return Wrap(f(o, t))
		}
		return Wrap(f(t, o))
	}
}

// floatMethod binds f(t, p) with one float keyword parameter.
func floatMethod(f func(*tensor.Tensor, float64) *tensor.Tensor, param string, def float64) methodFunc {
	return func(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
		p := FloatArg(def)
		if err := c.Unpack(param+"?", &p); err != nil {
			return nil, err
		}
		return Wrap(f(t, float64(p)))
	}
}

// reduceMethod binds f(t, keepdim, axes...) as (axis=None, keepdim=False).
func reduceMethod(f func(*tensor.Tensor, bool, ...int) *tensor.Tensor) methodFunc {
	return func(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
		var axis axisArg
		keepdim := false
		if err := c.Unpack("axis?", &axis, "keepdim?", &keepdim); err != nil {
			return nil, err
		}
		return Wrap(f(t, keepdim, axis.axes...))
	}
}

// varMethod binds var/std as (axis=None, keepdim=False, correction=1).
func varMethod(f func(*tensor.Tensor, bool, int, ...int) *tensor.Tensor) methodFunc {
	return func(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
		var axis axisArg
		keepdim := false
		correction := IntArg(1)
		if err := c.Unpack("axis?", &axis, "keepdim?", &keepdim, "correction?", &correction); err != nil {
			return nil, err
		}
		return Wrap(f(t, keepdim, int(correction), axis.axes...))
	}
}

// argMethod binds argmax/argmin as (axis=None, keepdim=False).
func argMethod(f func(*tensor.Tensor, *int, bool) *tensor.Tensor) methodFunc {
	return func(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
		var axis starlark.Value = starlark.None
		keepdim := false
		if err := c.Unpack("axis?", &axis, "keepdim?", &keepdim); err != nil {
			return nil, err
		}
		var ax *int
		if axis != starlark.None {
			n, err := ToInt(axis)
			if err != nil {
				return nil, fmt.Errorf("%s: for parameter axis: %v", c.Name, err)
			}
			ax = &n
		}
		return Wrap(f(t, ax, keepdim))
	}
}

// axisMethod binds f(t, axis) with one int axis parameter.
func axisMethod(f func(*tensor.Tensor, int) *tensor.Tensor, def int) methodFunc {
	return func(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
		axis := IntArg(def)
		if err := c.Unpack("axis?", &axis); err != nil {
			return nil, err
		}
		return Wrap(f(t, int(axis)))
	}
}

// intsMethod binds f(t, ints...) with tinygrad's "x, *args" convention:
// t.permute(1, 0) or t.permute((1, 0)).
func intsMethod(param string, f func(*tensor.Tensor, ...int) *tensor.Tensor) methodFunc {
	return func(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
		if len(c.Kwargs) > 0 {
			if len(c.Args) > 0 || len(c.Kwargs) > 1 || string(c.Kwargs[0][0].(starlark.String)) != param {
				return nil, fmt.Errorf("%s: takes %s as positional ints or one tuple", c.Name, param)
			}
			c.Args = starlark.Tuple{c.Kwargs[0][1]}
		}
		ints, err := varInts(c.Name, c.Args)
		if err != nil {
			return nil, err
		}
		return Wrap(f(t, ints...))
	}
}

// dimsMethod is a method taking a shape whose entries may be bound
// Variables (symbolic dimensions, from x.shape), positional or one tuple.
func dimsMethod(f func(*tensor.Tensor, []tensor.SInt) *tensor.Tensor) methodFunc {
	return func(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
		if len(c.Kwargs) > 0 {
			if len(c.Args) > 0 || len(c.Kwargs) > 1 || string(c.Kwargs[0][0].(starlark.String)) != "shape" {
				return nil, fmt.Errorf("%s: takes shape as positional ints or one tuple", c.Name)
			}
			c.Args = starlark.Tuple{c.Kwargs[0][1]}
		}
		args := []starlark.Value(c.Args)
		if len(args) == 1 && IsSeq(args[0]) {
			args = SeqElems(args[0])
		}
		dims := make([]tensor.SInt, len(args))
		for i, a := range args {
			s, err := sintOf(a)
			if err != nil {
				return nil, fmt.Errorf("%s: argument %d: %v", c.Name, i+1, err)
			}
			dims[i] = s
		}
		return Wrap(f(t, dims))
	}
}

// expandDims is expand with entries that may be symbolic (-1 keeps a
// dimension; new leading dimensions are allowed).
func expandDims(t *tensor.Tensor, dims []tensor.SInt) *tensor.Tensor {
	if n := len(dims) - t.Ndim(); n > 0 {
		ones := make([]int, n)
		for i := range ones {
			ones[i] = 1
		}
		t = t.Reshape(append(ones, t.Shape()...)...)
	}
	src := t.Dims()
	if len(dims) != len(src) {
		return tensor.Errorf("expand", "cannot expand %s to %s", tensor.FormatDims(src), tensor.FormatDims(dims))
	}
	out := make([]tensor.SInt, len(dims))
	for i, d := range dims {
		if !d.IsSym() && d.C == -1 {
			out[i] = src[i]
		} else {
			out[i] = d
		}
	}
	return t.ExpandDims(out)
}

func castTo(dt ir.DType) methodFunc {
	return unaryMethod(func(t *tensor.Tensor) *tensor.Tensor { return t.Cast(dt) })
}

func intProp(f func(*tensor.Tensor) int) methodFunc {
	return func(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
		if err := c.NoArgs(); err != nil {
			return nil, err
		}
		return starlark.MakeInt(f(t)), nil
	}
}

// ---- individual methods ----

func logicalAnd(a, b *tensor.Tensor) *tensor.Tensor { return a.Cast(ir.Bool).And(b.Cast(ir.Bool)) }
func logicalOr(a, b *tensor.Tensor) *tensor.Tensor  { return a.Cast(ir.Bool).Or(b.Cast(ir.Bool)) }

// bitwiseNot is ~t: logical not for bool, xor with all ones for ints.
func bitwiseNot(t *tensor.Tensor) *tensor.Tensor {
	switch {
	case t.DType() == ir.Bool:
		return t.LogicalNot()
	case t.DType().IsFloat():
		return tensor.Errorf("bitwise_not", "needs a bool or integer tensor, got %s", t.DType())
	}
	return t.Xor(t.Const(-1, t.DType()))
}

// shift is t << n or t >> n (the SHL and SHR primitives), n a tensor or
// a Python int. A negative Python int is refused, as Python does; counts
// of the width or more give 0 (or -1 for >> of a negative value).
func shift(t *tensor.Tensor, n starlark.Value, left bool) (*tensor.Tensor, error) {
	name := "rshift"
	if left {
		name = "lshift"
	}
	var count *tensor.Tensor
	switch v := n.(type) {
	case *Tensor:
		count = v.t
	case starlark.Int:
		if v.Sign() < 0 {
			return nil, fmt.Errorf("%s: negative shift count %s", name, n)
		}
		dt := t.DType()
		if dt == ir.Bool {
			dt = ir.Int32
		}
		k, ok := v.Int64()
		if !ok || k > int64(dt.Bits()) {
			k = int64(dt.Bits()) // beyond the width: all the same
		}
		count = t.ConstInt(k, dt)
	default:
		return nil, fmt.Errorf("%s: the shift count must be an int or an integer tensor, got %s", name, n.Type())
	}
	if left {
		return t.Shl(count), nil
	}
	return t.Shr(count), nil
}

// shiftMethod is lshift(x) or rshift(x).
func shiftMethod(left bool) methodFunc {
	return func(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
		var x starlark.Value
		if err := c.Unpack("x", &x); err != nil {
			return nil, err
		}
		r, err := shift(t, x, left)
		if err != nil {
			return nil, err
		}
		return Wrap(r)
	}
}

// divMethod is div(x, reverse=False, rounding_mode=None).
func divMethod(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
	var x starlark.Value
	reverse := false
	var mode starlark.Value = starlark.None
	if err := c.Unpack("x", &x, "reverse?", &reverse, "rounding_mode?", &mode); err != nil {
		return nil, err
	}
	o, err := tensorOrScalar(c, t, x, "x")
	if err != nil {
		return nil, err
	}
	a, b := t, o
	if reverse {
		a, b = o, t
	}
	switch mode {
	case starlark.None:
		return Wrap(a.Div(b))
	case starlark.String("trunc"):
		return Wrap(a.IDiv(b))
	case starlark.String("floor"):
		return Wrap(a.FloorDiv(b))
	}
	return nil, fmt.Errorf("div: rounding_mode must be None, \"trunc\" or \"floor\", got %s", mode)
}

// whereMethod is cond.where(x, y); x and y may be numbers.
func whereMethod(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
	var x, y starlark.Value
	if err := c.Unpack("x", &x, "y", &y); err != nil {
		return nil, err
	}
	xt, yt, err := pairOperands(c, x, y)
	if err != nil {
		return nil, err
	}
	return Wrap(t.Where(xt, yt))
}

// pairOperands converts two operands where either may be a number: a
// number takes the other side's dtype rules, two numbers get Python's
// default dtypes.
func pairOperands(c *pyrt.Call, x, y starlark.Value) (*tensor.Tensor, *tensor.Tensor, error) {
	xv, xok := x.(*Tensor)
	yv, yok := y.(*Tensor)
	switch {
	case xok && yok:
		return xv.t, yv.t, nil
	case xok:
		yt, err := tensorOrScalar(c, xv.t, y, "y")
		return xv.t, yt, err
	case yok:
		xt, err := tensorOrScalar(c, yv.t, x, "x")
		return xt, yv.t, err
	}
	xt, err := pyConst(Context(c), x)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: for parameter x: %v", c.Name, err)
	}
	yt, err := pyConst(Context(c), y)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: for parameter y: %v", c.Name, err)
	}
	return xt, yt, nil
}

func lerpMethod(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
	var end, weight starlark.Value
	if err := c.Unpack("end", &end, "weight", &weight); err != nil {
		return nil, err
	}
	e, err := tensorOrScalar(c, t, end, "end")
	if err != nil {
		return nil, err
	}
	w, err := tensorOrScalar(c, t, weight, "weight")
	if err != nil {
		return nil, err
	}
	return Wrap(t.Lerp(e, w))
}

// clipMethod is clip(min_=None, max_=None); bounds may be tensors.
func clipMethod(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
	var lo, hi starlark.Value = starlark.None, starlark.None
	if err := c.Unpack("min_?", &lo, "max_?", &hi); err != nil {
		return nil, err
	}
	bound := func(v starlark.Value, what string) (*tensor.Tensor, error) {
		if v == starlark.None {
			return nil, nil
		}
		return tensorOrScalar(c, t, v, what)
	}
	l, err := bound(lo, "min_")
	if err != nil {
		return nil, err
	}
	h, err := bound(hi, "max_")
	if err != nil {
		return nil, err
	}
	return Wrap(t.Clamp(l, h))
}

func hardsigmoidMethod(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
	alpha, beta := FloatArg(1.0/6), FloatArg(0.5)
	if err := c.Unpack("alpha?", &alpha, "beta?", &beta); err != nil {
		return nil, err
	}
	return Wrap(t.Hardsigmoid(float64(alpha), float64(beta)))
}

func hardtanhMethod(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
	lo, hi := FloatArg(-1), FloatArg(1)
	if err := c.Unpack("min_val?", &lo, "max_val?", &hi); err != nil {
		return nil, err
	}
	return Wrap(t.Hardtanh(float64(lo), float64(hi)))
}

func castMethod(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
	var dt DTypeArg
	if err := c.Unpack("dtype", &dt); err != nil {
		return nil, err
	}
	if !dt.set {
		return nil, fmt.Errorf("cast: dtype must not be None")
	}
	return Wrap(t.Cast(dt.dt))
}

// bitcastMethod is bitcast(dtype): the same bits read as a dtype of the
// same size.
func bitcastMethod(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
	var dt DTypeArg
	if err := c.Unpack("dtype", &dt); err != nil {
		return nil, err
	}
	if !dt.set {
		return nil, fmt.Errorf("bitcast: dtype must not be None")
	}
	return Wrap(t.Bitcast(dt.dt))
}

// reshapeMethod is reshape(shape, *args); None keeps that dimension.
func reshapeMethod(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
	if len(c.Kwargs) > 0 {
		return nil, fmt.Errorf("%s: takes the shape as positional ints or one tuple", c.Name)
	}
	args := c.Args
	if len(args) == 1 && IsSeq(args[0]) {
		args = starlark.Tuple(nil)
		iter := c.Args[0].(starlark.Iterable).Iterate()
		var x starlark.Value
		for iter.Next(&x) {
			args = append(args, x)
		}
		iter.Done()
	}
	old := t.Shape()
	shape := make([]int, len(args))
	for i, a := range args {
		if a == starlark.None {
			if i >= len(old) {
				return nil, fmt.Errorf("%s: None at position %d, but the tensor has %d dimensions", c.Name, i, len(old))
			}
			shape[i] = old[i]
			continue
		}
		if v, ok := a.(Var); ok { // a symbolic dimension lands where its size fits
			shape[i] = v.s.Max()
			continue
		}
		n, err := ToInt(a)
		if err != nil {
			return nil, fmt.Errorf("%s: shape entry %d: %v", c.Name, i, err)
		}
		shape[i] = n
	}
	return Wrap(t.Reshape(shape...))
}

func transposeMethod(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
	d0, d1 := IntArg(1), IntArg(0)
	if err := c.Unpack("dim0?", &d0, "dim1?", &d1); err != nil {
		return nil, err
	}
	return Wrap(t.Transpose(int(d0), int(d1)))
}

func flattenMethod(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
	start, end := IntArg(0), IntArg(-1)
	if err := c.Unpack("start_dim?", &start, "end_dim?", &end); err != nil {
		return nil, err
	}
	return Wrap(t.Flatten(int(start), int(end)))
}

func unflattenMethod(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
	var dim IntArg
	var sizes starlark.Value
	if err := c.Unpack("dim", &dim, "sizes", &sizes); err != nil {
		return nil, err
	}
	s, err := intList(sizes)
	if err != nil {
		return nil, fmt.Errorf("%s: for parameter sizes: %v", c.Name, err)
	}
	return Wrap(t.Unflatten(int(dim), s...))
}

func squeezeMethod(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
	var dim starlark.Value = starlark.None
	if err := c.Unpack("dim?", &dim); err != nil {
		return nil, err
	}
	if dim == starlark.None {
		return Wrap(t.Squeeze(nil))
	}
	d, err := ToInt(dim)
	if err != nil {
		return nil, fmt.Errorf("%s: for parameter dim: %v", c.Name, err)
	}
	return Wrap(t.Squeeze(&d))
}

func unsqueezeMethod(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
	var dim IntArg
	if err := c.Unpack("dim", &dim); err != nil {
		return nil, err
	}
	return Wrap(t.Unsqueeze(int(dim)))
}

// padMethod is pad(padding, mode="constant", value=0.0). padding is either
// one (before, after) pair or None per dimension, or a flat tuple of ints
// in torch's order (last dimension first: left, right, top, bottom, ...).
func padMethod(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
	var padding starlark.Value
	mode := "constant"
	value := FloatArg(0)
	if err := c.Unpack("padding", &padding, "mode?", &mode, "value?", &value); err != nil {
		return nil, err
	}
	if mode != "constant" {
		return nil, fmt.Errorf("pad: mode %q is not supported (only \"constant\")", mode)
	}
	if !IsSeq(padding) {
		return nil, fmt.Errorf("pad: for parameter padding: got %s, want tuple", padding.Type())
	}
	elems := SeqElems(padding)
	nd := t.Ndim()
	pads := make([][2]int, nd)
	flat, err := intList(padding)
	if err == nil && len(elems) > 0 {
		if len(flat)%2 != 0 || len(flat) > 2*nd {
			return nil, fmt.Errorf("pad: a flat padding needs an even number of ints, at most %d for %d dimensions, got %d", 2*nd, nd, len(flat))
		}
		for i := 0; i < len(flat)/2; i++ {
			pads[nd-1-i] = [2]int{flat[2*i], flat[2*i+1]}
		}
		return Wrap(t.Pad(pads, float64(value)))
	}
	if len(elems) != nd {
		return nil, fmt.Errorf("pad: padding has %d entries for a tensor with %d dimensions", len(elems), nd)
	}
	for i, e := range elems {
		if e == starlark.None {
			continue
		}
		p, err := intList(e)
		if err != nil || len(p) != 2 {
			return nil, fmt.Errorf("pad: padding entry %d must be a (before, after) pair or None, got %s", i, e)
		}
		pads[i] = [2]int{p[0], p[1]}
	}
	return Wrap(t.Pad(pads, float64(value)))
}

func SeqElems(v starlark.Value) []starlark.Value {
	var out []starlark.Value
	iter := v.(starlark.Iterable).Iterate()
	defer iter.Done()
	var x starlark.Value
	for iter.Next(&x) {
		out = append(out, x)
	}
	return out
}

// shrinkMethod is shrink(arg): one (begin, end) pair or None per dimension.
func shrinkMethod(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
	var arg starlark.Value
	if err := c.Unpack("arg", &arg); err != nil {
		return nil, err
	}
	if !IsSeq(arg) {
		return nil, fmt.Errorf("shrink: for parameter arg: got %s, want tuple", arg.Type())
	}
	elems := SeqElems(arg)
	dims := t.Dims()
	if len(elems) != len(dims) {
		return nil, fmt.Errorf("shrink: %d entries for a tensor with %d dimensions", len(elems), len(dims))
	}
	bounds := make([][2]tensor.SInt, len(dims))
	for i, e := range elems {
		if e == starlark.None {
			bounds[i] = [2]tensor.SInt{tensor.Int(0), dims[i]}
			continue
		}
		var pair []starlark.Value
		if IsSeq(e) {
			pair = SeqElems(e)
		}
		if len(pair) != 2 {
			return nil, fmt.Errorf("shrink: entry %d must be a (begin, end) pair or None, got %s", i, e)
		}
		for j, b := range pair {
			s, err := sintOf(b)
			if err != nil {
				return nil, fmt.Errorf("shrink: entry %d: %v", i, err)
			}
			bounds[i][j] = s
		}
	}
	return Wrap(t.ShrinkDims(bounds))
}

// tensorList reads *args that must all be tensors.
func TensorList(c *pyrt.Call, args starlark.Tuple) ([]*tensor.Tensor, error) {
	out := make([]*tensor.Tensor, len(args))
	for i, a := range args {
		v, ok := a.(*Tensor)
		if !ok {
			return nil, fmt.Errorf("%s: argument %d is %s, want Tensor", c.Name, i+1, a.Type())
		}
		out[i] = v.t
	}
	return out, nil
}

// dimKwarg reads the only keyword, dim=.
func dimKwarg(c *pyrt.Call, def int) (int, error) {
	dim := def
	for _, kv := range c.Kwargs {
		if kv[0] != starlark.String("dim") {
			return 0, fmt.Errorf("%s: unexpected keyword argument %s", c.Name, kv[0])
		}
		n, err := ToInt(kv[1])
		if err != nil {
			return 0, fmt.Errorf("%s: for parameter dim: %v", c.Name, err)
		}
		dim = n
	}
	return dim, nil
}

// catMethod is t.cat(*others, dim=0).
func catMethod(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
	dim, err := dimKwarg(c, 0)
	if err != nil {
		return nil, err
	}
	others, err := TensorList(c, c.Args)
	if err != nil {
		return nil, err
	}
	return Wrap(t.Cat(dim, others...))
}

// stackMethod is t.stack(*others, dim=0).
func stackMethod(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
	dim, err := dimKwarg(c, 0)
	if err != nil {
		return nil, err
	}
	others, err := TensorList(c, c.Args)
	if err != nil {
		return nil, err
	}
	return Wrap(tensor.Stack(dim, append([]*tensor.Tensor{t}, others...)...))
}

// tensorTuple converts pieces to a tuple, raising the first error.
func tensorTuple(ts []*tensor.Tensor) (starlark.Value, error) {
	out := make(starlark.Tuple, len(ts))
	for i, t := range ts {
		v, err := Wrap(t)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// splitMethod is split(sizes, dim=0): an int size or a list of sizes.
func splitMethod(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
	var sizes starlark.Value
	dim := IntArg(0)
	if err := c.Unpack("sizes", &sizes, "dim?", &dim); err != nil {
		return nil, err
	}
	if IsSeq(sizes) {
		s, err := intList(sizes)
		if err != nil {
			return nil, fmt.Errorf("split: for parameter sizes: %v", err)
		}
		return tensorTuple(t.SplitSizes(s, int(dim)))
	}
	n, err := ToInt(sizes)
	if err != nil {
		return nil, fmt.Errorf("split: for parameter sizes: %v", err)
	}
	return tensorTuple(t.Split(n, int(dim)))
}

func chunkMethod(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
	var n IntArg
	dim := IntArg(0)
	if err := c.Unpack("chunks", &n, "dim?", &dim); err != nil {
		return nil, err
	}
	return tensorTuple(t.Chunk(int(n), int(dim)))
}

func repeatInterleaveMethod(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
	var n IntArg
	var dim starlark.Value = starlark.None
	if err := c.Unpack("repeats", &n, "dim?", &dim); err != nil {
		return nil, err
	}
	if dim == starlark.None {
		return Wrap(t.RepeatInterleave(int(n), nil))
	}
	d, err := ToInt(dim)
	if err != nil {
		return nil, fmt.Errorf("%s: for parameter dim: %v", c.Name, err)
	}
	return Wrap(t.RepeatInterleave(int(n), &d))
}

func likeMethod(v float64) methodFunc {
	return func(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
		var dt DTypeArg
		if err := c.Unpack("dtype?", &dt); err != nil {
			return nil, err
		}
		if !dt.set {
			dt.dt = t.DType()
		}
		return Wrap(t.Context().Full(t.Shape(), v, dt.dt))
	}
}

func fullLikeMethod(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
	var fill starlark.Value
	var dt DTypeArg
	if err := c.Unpack("fill_value", &fill, "dtype?", &dt); err != nil {
		return nil, err
	}
	v, err := ToFloat(fill)
	if err != nil {
		return nil, fmt.Errorf("full_like: for parameter fill_value: %v", err)
	}
	if !dt.set {
		dt.dt = t.DType()
	}
	return Wrap(t.Context().Full(t.Shape(), v, dt.dt))
}

// dropoutMethod is dropout(p=0.5): identity unless Tensor.training.
func dropoutMethod(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
	p := FloatArg(0.5)
	if err := c.Unpack("p?", &p); err != nil {
		return nil, err
	}
	if !t.Context().Training() {
		return c.Self, nil
	}
	return Wrap(t.Dropout(float64(p)))
}

// realizeMethod is realize(*others): it computes the tensor and others in one schedule; an
// optimizer step among others (tinygrad's loss.realize(*opt.schedule_step()))
// runs with them.
func realizeMethod(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
	if len(c.Kwargs) > 0 {
		return nil, fmt.Errorf("realize: unexpected keyword argument %s", c.Kwargs[0][0])
	}
	if t.Context().Engine() == nil {
		return nil, fmt.Errorf("realize: no device: the tensor cannot be computed (no engine is installed)")
	}
	all := []*tensor.Tensor{t}
	var steps []StepRealizer
	for i, a := range c.Args {
		switch a := a.(type) {
		case *Tensor:
			all = append(all, a.t)
		case StepRealizer:
			steps = append(steps, a)
		default:
			return nil, fmt.Errorf("realize: argument %d is %s, want Tensor", i+1, a.Type())
		}
	}
	if len(steps) > 1 {
		return nil, fmt.Errorf("realize: %d optimizer steps; one at a time", len(steps))
	}
	if len(steps) == 1 {
		if Tracing(t.Context()) {
			WarnTraceRead(c)
		}
		return c.Self, steps[0].StepWith(all)
	}
	if err := tensor.RealizeAll(all...); err != nil {
		return nil, err
	}
	return c.Self, nil
}

// StepRealizer is an optimizer step waiting to run (opt.schedule_step()):
// realize runs it, computing extra in the step's schedule.
type StepRealizer interface {
	starlark.Value
	StepWith(extra []*tensor.Tensor) error
}

// sequentialMethod is sequential(layers): each callable applied in turn.
func sequentialMethod(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
	var layers starlark.Value
	if err := c.Unpack("ll", &layers); err != nil {
		return nil, err
	}
	if !IsSeq(layers) {
		return nil, fmt.Errorf("sequential: want a list of callables, got %s", layers.Type())
	}
	var x starlark.Value = c.Self
	for i, f := range SeqElems(layers) {
		if _, ok := f.(starlark.Callable); !ok {
			return nil, fmt.Errorf("sequential: layer %d is a %s, not callable", i, f.Type())
		}
		var err error
		if x, err = starlark.Call(c.Thread, f, starlark.Tuple{x}, nil); err != nil {
			return nil, err
		}
	}
	return x, nil
}

// toMethod is to(device): the tensor itself (a script runs on one device).
func toMethod(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
	var device starlark.Value
	if err := c.Unpack("device", &device); err != nil {
		return nil, err
	}
	if err := checkDevice(c, device); err != nil {
		return nil, err
	}
	return c.Self, nil
}

// sizeMethod is size(dim=None): the shape, or one dimension.
func sizeMethod(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
	var dim starlark.Value = starlark.None
	if err := c.Unpack("dim?", &dim); err != nil {
		return nil, err
	}
	if dim == starlark.None {
		return shapeTuple(t.Shape()), nil
	}
	d, err := ToInt(dim)
	if err != nil {
		return nil, fmt.Errorf("size: for parameter dim: %v", err)
	}
	shape := t.Shape()
	if d < -len(shape) || d >= len(shape) {
		return nil, fmt.Errorf("size: dim %d is out of range for a tensor with %d dimensions", d, len(shape))
	}
	if d < 0 {
		d += len(shape)
	}
	return starlark.MakeInt(shape[d]), nil
}

func gatherMethod(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
	var dim IntArg
	var index TensorArg
	if err := c.Unpack("dim", &dim, "index", &index); err != nil {
		return nil, err
	}
	if index.t == nil {
		return nil, fmt.Errorf("gather: for parameter index: got None, want Tensor")
	}
	return Wrap(t.Gather(int(dim), index.t))
}
