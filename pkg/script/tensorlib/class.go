package tensorlib

import (
	"fmt"
	"slices"
	"sort"

	"go.starlark.net/starlark"

	"tgc/pkg/ir"
	"tgc/pkg/script/pyrt"
	"tgc/pkg/tensor"
)

// tensorClass is the predeclared name Tensor: callable as a constructor,
// with the static creation methods as attributes (Tensor.rand, ...), the
// training flag, and every instance method usable unbound
// (Tensor.cat(x, y) is x.cat(y), as in Python).
type tensorClass struct{ ctx *tensor.Context }

// NewClass is the predeclared name Tensor of a run whose tensors live in
// ctx (Tensor.training is ctx's training flag).
func NewClass(ctx *tensor.Context) starlark.Value { return &tensorClass{ctx: ctx} }

var (
	_ starlark.Callable    = (*tensorClass)(nil)
	_ starlark.HasAttrs    = (*tensorClass)(nil)
	_ starlark.HasSetField = (*tensorClass)(nil)
)

func (*tensorClass) String() string        { return "<class Tensor>" }
func (*tensorClass) Type() string          { return "type" }
func (*tensorClass) Freeze()               {}
func (*tensorClass) Truth() starlark.Bool  { return starlark.True }
func (*tensorClass) Hash() (uint32, error) { return 0x7e4502, nil }
func (*tensorClass) Name() string          { return "Tensor" }

// CallInternal is Tensor(data, dtype=None): data is a number, a nested
// list or tuple of numbers, or a Tensor (cast to dtype if given).
func (tc *tensorClass) CallInternal(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (v starlark.Value, err error) {
	c := &pyrt.Call{Thread: th, Name: "Tensor", Args: args, Kwargs: kwargs}
	defer pyrt.Recover(c, &err)
	var data starlark.Value
	var dt DTypeArg
	var device, requiresGrad starlark.Value
	if err := c.Unpack("data", &data, "dtype?", &dt, "device?", &device, "requires_grad?", &requiresGrad); err != nil {
		return nil, err
	}
	if err := checkDevice(c, device); err != nil {
		return nil, err
	}
	var t *tensor.Tensor
	if x, ok := data.(*Tensor); ok {
		t = x.t
		if dt.set {
			t = t.Cast(dt.dt)
		}
	} else {
		if t, err = fromPython(c, data, dt); err != nil {
			return nil, err
		}
	}
	r, err := Wrap(t)
	if err != nil {
		return nil, err
	}
	if b, ok := requiresGrad.(starlark.Bool); ok {
		t.SetRequiresGrad(bool(b))
	}
	return r, nil
}

// IsInstance is isinstance(v, Tensor).
func (tc *tensorClass) IsInstance(v starlark.Value) bool {
	_, ok := v.(*Tensor)
	return ok
}

func (tc *tensorClass) Attr(name string) (starlark.Value, error) {
	if name == "training" {
		return starlark.Bool(tc.ctx.Training()), nil
	}
	if f, ok := statics[name]; ok {
		return pyrt.Builtin(name, f), nil
	}
	if _, ok := methods[name]; ok {
		return pyrt.Builtin(name, unboundMethod(name)), nil
	}
	return nil, fmt.Errorf("%s", unknownAttr(name, tc.AttrNames()))
}

func (tc *tensorClass) AttrNames() []string { return slices.Clone(classAttrNames) }

// classAttrNames are Tensor's class members, sorted.
var classAttrNames = func() []string {
	names := []string{"training"}
	for n := range statics {
		names = append(names, n)
	}
	for n := range methods {
		if _, ok := statics[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}()

// SetField allows Tensor.training = True (the flag dropout reads).
func (tc *tensorClass) SetField(name string, v starlark.Value) error {
	if name != "training" {
		return fmt.Errorf("cannot assign Tensor.%s: only Tensor.training can be set", name)
	}
	b, ok := v.(starlark.Bool)
	if !ok {
		return fmt.Errorf("Tensor.training must be a bool, got %s", v.Type())
	}
	tc.ctx.SetTraining(bool(b))
	return nil
}

// unboundMethod calls an instance method with the first argument as self.
func unboundMethod(name string) pyrt.Func {
	return func(c *pyrt.Call) (starlark.Value, error) {
		if len(c.Args) == 0 {
			return nil, fmt.Errorf("Tensor.%s: missing the tensor argument (self)", name)
		}
		self, ok := c.Args[0].(*Tensor)
		if !ok {
			return nil, fmt.Errorf("Tensor.%s: the first argument must be a Tensor, got %s", name, c.Args[0].Type())
		}
		c.Args, c.Self = c.Args[1:], self
		return methods[name](c, self.t)
	}
}

// statics are the class-level functions: Tensor.rand(2, 3), ...
var statics = map[string]pyrt.Func{
	"rand":            randLike(func(ctx *tensor.Context, shape []int) *tensor.Tensor { return ctx.Rand(shape...) }),
	"randn":           randLike(func(ctx *tensor.Context, shape []int) *tensor.Tensor { return ctx.Randn(shape...) }),
	"uniform":         uniformFn,
	"normal":          normalFn,
	"randint":         randintFn,
	"scaled_uniform":  randLike(func(ctx *tensor.Context, shape []int) *tensor.Tensor { return ctx.ScaledUniform(shape...) }),
	"glorot_uniform":  randLike(func(ctx *tensor.Context, shape []int) *tensor.Tensor { return ctx.GlorotUniform(shape...) }),
	"kaiming_uniform": kaimingFn((*tensor.Context).KaimingUniform),
	"kaiming_normal":  kaimingFn((*tensor.Context).KaimingNormal),
	"zeros":           fillFn(0),
	"ones":            fillFn(1),
	"empty":           emptyFn,
	"full":            fullFn,
	"arange":          arangeFn,
	"linspace":        linspaceFn,
	"eye":             eyeFn,
	"stack":           stackFn,
	"einsum":          einsumFn,
	"manual_seed":     manualSeedFn,
	"train":           trainFn,
	"test":            testFn,
}

// shapeAndDType reads tinygrad's (*shape, dtype=...) plus extra keywords.
func shapeAndDType(c *pyrt.Call, def ir.DType, extra ...any) ([]int, ir.DType, error) {
	var dt DTypeArg
	var device starlark.Value
	pairs := append([]any{"dtype?", &dt, "device?", &device}, extra...)
	if err := starlark.UnpackArgs(c.Name, nil, c.Kwargs, pairs...); err != nil {
		return nil, 0, err
	}
	if err := checkDevice(c, device); err != nil {
		return nil, 0, err
	}
	shape, err := varInts(c.Name, c.Args)
	if err != nil {
		return nil, 0, err
	}
	if !dt.set {
		dt.dt = def
	}
	return shape, dt.dt, nil
}

// randLike binds a float32 random constructor; dtype= casts the result.
func randLike(f func(ctx *tensor.Context, shape []int) *tensor.Tensor) pyrt.Func {
	return func(c *pyrt.Call) (starlark.Value, error) {
		var requiresGrad optBool
		shape, dt, err := shapeAndDType(c, ir.Float32, "requires_grad?", &requiresGrad)
		if err != nil {
			return nil, err
		}
		t := f(Context(c), shape).Cast(dt)
		requiresGrad.apply(t)
		return Wrap(t)
	}
}

func uniformFn(c *pyrt.Call) (starlark.Value, error) {
	low, high := FloatArg(-1), FloatArg(1)
	var requiresGrad optBool
	shape, dt, err := shapeAndDType(c, ir.Float32, "low?", &low, "high?", &high, "requires_grad?", &requiresGrad)
	if err != nil {
		return nil, err
	}
	t := Context(c).Uniform(float64(low), float64(high), shape...).Cast(dt)
	requiresGrad.apply(t)
	return Wrap(t)
}

func normalFn(c *pyrt.Call) (starlark.Value, error) {
	mean, std := FloatArg(0), FloatArg(1)
	var requiresGrad optBool
	shape, dt, err := shapeAndDType(c, ir.Float32, "mean?", &mean, "std?", &std, "requires_grad?", &requiresGrad)
	if err != nil {
		return nil, err
	}
	t := Context(c).Normal(float64(mean), float64(std), shape...).Cast(dt)
	requiresGrad.apply(t)
	return Wrap(t)
}

// randintFn is Tensor.randint(*shape, low=0, high=10, dtype=int32).
func randintFn(c *pyrt.Call) (starlark.Value, error) {
	low, high := IntArg(0), IntArg(10)
	shape, dt, err := shapeAndDType(c, ir.Int32, "low?", &low, "high?", &high)
	if err != nil {
		return nil, err
	}
	if high <= low {
		return nil, fmt.Errorf("randint: high (%d) must be greater than low (%d)", high, low)
	}
	return Wrap(Context(c).Randint(int(low), int(high), shape...).Cast(dt))
}

func kaimingFn(f func(ctx *tensor.Context, a float64, shape ...int) *tensor.Tensor) pyrt.Func {
	return func(c *pyrt.Call) (starlark.Value, error) {
		a := FloatArg(0.01)
		var requiresGrad optBool
		shape, dt, err := shapeAndDType(c, ir.Float32, "a?", &a, "requires_grad?", &requiresGrad)
		if err != nil {
			return nil, err
		}
		t := f(Context(c), float64(a), shape...).Cast(dt)
		requiresGrad.apply(t)
		return Wrap(t)
	}
}

func fillFn(v float64) pyrt.Func {
	return func(c *pyrt.Call) (starlark.Value, error) {
		var requiresGrad optBool
		shape, dt, err := shapeAndDType(c, ir.Float32, "requires_grad?", &requiresGrad)
		if err != nil {
			return nil, err
		}
		t := Context(c).Full(shape, v, dt)
		requiresGrad.apply(t)
		return Wrap(t)
	}
}

// emptyFn is Tensor.empty(*shape, dtype=None): memory of its own (zeros).
func emptyFn(c *pyrt.Call) (starlark.Value, error) {
	shape, dt, err := shapeAndDType(c, ir.Float32)
	if err != nil {
		return nil, err
	}
	return Wrap(Context(c).Empty(shape, dt))
}

// fullFn is Tensor.full(shape, fill_value, dtype=None); the dtype follows
// the Python type of fill_value.
func fullFn(c *pyrt.Call) (starlark.Value, error) {
	var shapeV, fill starlark.Value
	var dt DTypeArg
	var device starlark.Value
	if err := c.Unpack("shape", &shapeV, "fill_value", &fill, "dtype?", &dt, "device?", &device); err != nil {
		return nil, err
	}
	if err := checkDevice(c, device); err != nil {
		return nil, err
	}
	shape, err := varInts(c.Name, starlark.Tuple{shapeV})
	if err != nil {
		return nil, err
	}
	v, err := ToFloat(fill)
	if err != nil {
		return nil, fmt.Errorf("full: for parameter fill_value: %v", err)
	}
	if !dt.set {
		dt.dt = pyDType(fill)
	}
	ctx := Context(c)
	if n, ok := fill.(starlark.Int); ok && !dt.dt.IsFloat() && dt.dt != ir.Bool { // exactly, past 2^53 too
		if i, ok := n.Int64(); ok {
			return Wrap(ctx.FullInt(shape, i, dt.dt))
		}
		if u, ok := n.Uint64(); ok && dt.dt == ir.Uint64 {
			return Wrap(tensor.FullOf(shape, ctx.ConstInt(int64(u), ir.Uint64)))
		}
	}
	return Wrap(ctx.Full(shape, v, dt.dt))
}

// pyDType is the default dtype of a Python number.
func pyDType(v starlark.Value) ir.DType {
	switch v.(type) {
	case starlark.Bool:
		return ir.Bool
	case starlark.Int:
		return ir.Int32
	}
	return ir.Float32
}

// arangeFn is Tensor.arange(start, stop=None, step=1, dtype=None): int32
// when every argument is an int, else float32.
func arangeFn(c *pyrt.Call) (starlark.Value, error) {
	var start, stop, step starlark.Value = nil, starlark.None, starlark.MakeInt(1)
	var dt DTypeArg
	var device starlark.Value
	if err := c.Unpack("start", &start, "stop?", &stop, "step?", &step, "dtype?", &dt, "device?", &device); err != nil {
		return nil, err
	}
	if err := checkDevice(c, device); err != nil {
		return nil, err
	}
	if stop == starlark.None {
		start, stop = starlark.MakeInt(0), start
	}
	vals := make([]float64, 3)
	allInt := true
	for i, v := range []starlark.Value{start, stop, step} {
		f, err := ToFloat(v)
		if err != nil {
			return nil, fmt.Errorf("arange: %v", err)
		}
		vals[i] = f
		if _, ok := v.(starlark.Float); ok {
			allInt = false
		}
	}
	if !dt.set {
		dt.dt = ir.Float32
		if allInt {
			dt.dt = ir.Int32
		}
	}
	return Wrap(Context(c).Arange(vals[0], vals[1], vals[2], dt.dt))
}

func linspaceFn(c *pyrt.Call) (starlark.Value, error) {
	var start, stop FloatArg
	var steps IntArg
	var dt DTypeArg
	var device starlark.Value
	if err := c.Unpack("start", &start, "stop", &stop, "steps", &steps, "dtype?", &dt, "device?", &device); err != nil {
		return nil, err
	}
	if err := checkDevice(c, device); err != nil {
		return nil, err
	}
	if !dt.set {
		dt.dt = ir.Float32
	}
	return Wrap(Context(c).Linspace(float64(start), float64(stop), int(steps), dt.dt))
}

// eyeFn is Tensor.eye(n, m=None, dtype=float32).
func eyeFn(c *pyrt.Call) (starlark.Value, error) {
	var n IntArg
	var m starlark.Value = starlark.None
	var dt DTypeArg
	var device starlark.Value
	if err := c.Unpack("n", &n, "m?", &m, "dtype?", &dt, "device?", &device); err != nil {
		return nil, err
	}
	if err := checkDevice(c, device); err != nil {
		return nil, err
	}
	cols := int(n)
	if m != starlark.None {
		v, err := ToInt(m)
		if err != nil {
			return nil, fmt.Errorf("eye: for parameter m: %v", err)
		}
		cols = v
	}
	if !dt.set {
		dt.dt = ir.Float32
	}
	return Wrap(Context(c).Eye(int(n), cols, dt.dt))
}

// stackFn is Tensor.stack(*tensors, dim=0); a single list argument works
// too (torch's spelling).
func stackFn(c *pyrt.Call) (starlark.Value, error) {
	dim, err := dimKwarg(c, 0)
	if err != nil {
		return nil, err
	}
	args := c.Args
	if len(args) == 1 && IsSeq(args[0]) {
		args = SeqElems(args[0])
	}
	if len(args) == 0 {
		return nil, fmt.Errorf("stack: needs at least one tensor")
	}
	ts, err := TensorList(c, args)
	if err != nil {
		return nil, err
	}
	return Wrap(tensor.Stack(dim, ts...))
}

// manualSeedFn is Tensor.manual_seed(seed=0).
func manualSeedFn(c *pyrt.Call) (starlark.Value, error) {
	var seed starlark.Int = starlark.MakeInt(0)
	if err := c.Unpack("seed?", &seed); err != nil {
		return nil, err
	}
	s, ok := seed.Uint64()
	if !ok {
		i, ok := seed.Int64()
		if !ok {
			return nil, fmt.Errorf("manual_seed: seed %s out of range", seed)
		}
		s = uint64(i)
	}
	Context(c).ManualSeed(s)
	return starlark.None, nil
}

// optBool is an optional bool keyword (requires_grad=): unset leaves the
// tensor's requires_grad unset, as tinygrad's None does.
type optBool struct{ set, v bool }

func (o *optBool) Unpack(v starlark.Value) error {
	switch b := v.(type) {
	case starlark.NoneType:
		return nil
	case starlark.Bool:
		o.set, o.v = true, bool(b)
		return nil
	}
	return fmt.Errorf("got %s, want bool or None", v.Type())
}

func (o optBool) apply(t *tensor.Tensor) {
	if o.set {
		t.SetRequiresGrad(o.v)
	}
}
