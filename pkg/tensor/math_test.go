package tensor

import (
	"math"
	"slices"
	"strings"
	"testing"

	"tgc/pkg/ir"
)

// ---- a tiny reference evaluator of the tensor graph ----
//
// The functions in this package only build graphs, so their tests evaluate
// the graphs with a direct, obviously-correct interpreter of the primitive
// ops (dense float64 arrays, ir's scalar semantics). It does not depend on
// the scheduler or any backend: it checks the decompositions themselves.

// forEachIndex calls f with every multi-index of shape in row-major order.
func forEachIndex(shape []int, f func(idx []int, flat int)) {
	n := prod(shape)
	idx := make([]int, len(shape))
	for flat := range n {
		f(idx, flat)
		for d := len(shape) - 1; d >= 0; d-- {
			idx[d]++
			if idx[d] < shape[d] {
				break
			}
			idx[d] = 0
		}
	}
}

func flatIndex(shape, idx []int) int {
	f := 0
	for d, s := range shape {
		f = f*s + idx[d]
	}
	return f
}

// evalRand is a deterministic stand-in for the engine's counter-based RNG.
func evalRand(a RandArg, i int) float64 {
	x := a.Seed*0x9E3779B97F4A7C15 + a.Counter*0xBF58476D1CE4E5B9 + uint64(i)*0x94D049BB133111EB
	x ^= x >> 31
	x *= 0xBF58476D1CE4E5B9
	x ^= x >> 29
	return float64(x>>40) / float64(1<<24)
}

func castValue(v float64, from, to ir.DType) float64 {
	switch {
	case to.IsFloat():
		return ir.RoundFloat(to, v)
	case from.IsFloat():
		return float64(ir.CastFloatToInt(to, v))
	default:
		return float64(to.Wrap(int64(v)))
	}
}

func evalGraph(n *Node, memo map[*Node][]float64) []float64 {
	if v, ok := memo[n]; ok {
		return v
	}
	src := make([][]float64, len(n.Src))
	for i, s := range n.Src {
		src[i] = evalGraph(s, memo)
	}
	out := make([]float64, n.Numel())
	switch {
	case n.Op == ir.OpBuffer:
		b := n.Arg.(*Buffer)
		for i := range out {
			out[i] = GetValue(b.Host, b.DType, i)
		}
	case n.Op == ir.OpConst:
		out[0], _ = n.ConstValue()
	case n.Op == ir.OpRand:
		for i := range out {
			out[i] = ir.RoundFloat(ir.Float32, evalRand(n.Arg.(RandArg), i))
		}
	case n.Op == ir.OpContiguous || n.Op == ir.OpReshape:
		copy(out, src[0])
	case n.Op == ir.OpCast:
		for i := range out {
			out[i] = castValue(src[0][i], n.Src[0].DType, n.DType)
		}
	case n.Op == ir.OpWhere:
		for i := range out {
			if src[0][i] != 0 {
				out[i] = src[1][i]
			} else {
				out[i] = src[2][i]
			}
		}
	case n.Op.IsCompare():
		for i := range out {
			if ir.Compare(n.Op, src[0][i], src[1][i]) {
				out[i] = 1
			}
		}
	case n.Op.IsUnary() || n.Op.IsBinary():
		for i := range out {
			a, b := src[0][i], 0.0
			if len(src) > 1 {
				b = src[1][i]
			}
			if n.DType.IsFloat() {
				out[i] = ir.FloatOp(n.Op, n.DType, a, b)
			} else {
				out[i] = float64(ir.IntOp(n.Op, n.DType, int64(a), int64(b)))
			}
		}
	case n.Op.IsReduce():
		in := n.Src[0].Shape
		if n.Op == ir.OpMaxReduce {
			for i := range out {
				out[i] = math.Inf(-1)
			}
		}
		oidx := make([]int, len(in))
		forEachIndex(in, func(idx []int, flat int) {
			copy(oidx, idx)
			for _, a := range n.Arg.([]int) {
				oidx[a] = 0
			}
			o := flatIndex(n.Shape, oidx)
			if n.Op == ir.OpSum {
				out[o] += src[0][flat]
			} else {
				out[o] = math.Max(out[o], src[0][flat])
			}
		})
		for i := range out {
			if n.DType.IsFloat() {
				out[i] = ir.RoundFloat(n.DType, out[i])
			} else {
				out[i] = float64(n.DType.Wrap(int64(out[i])))
			}
		}
	case n.Op.IsMovement():
		in := n.Src[0].Shape
		sidx := make([]int, len(in))
		forEachIndex(n.Shape, func(idx []int, flat int) {
			switch n.Op {
			case ir.OpPermute:
				for i, a := range n.Arg.([]int) {
					sidx[a] = idx[i]
				}
			case ir.OpExpand:
				for d := range in {
					sidx[d] = idx[d]
					if in[d] == 1 {
						sidx[d] = 0
					}
				}
			case ir.OpShrink:
				for d, b := range n.Arg.([][2]int) {
					sidx[d] = idx[d] + b[0]
				}
			case ir.OpFlip:
				copy(sidx, idx)
				for _, a := range n.Arg.([]int) {
					sidx[a] = in[a] - 1 - idx[a]
				}
			case ir.OpPad:
				for d, p := range n.Arg.([][2]int) {
					sidx[d] = idx[d] - p[0]
					if sidx[d] < 0 || sidx[d] >= in[d] {
						return // padding reads 0
					}
				}
			}
			out[flat] = src[0][flatIndex(in, sidx)]
		})
	default:
		panic("evalGraph: unhandled op " + n.Op.String())
	}
	memo[n] = out
	return out
}

// eval evaluates t, failing the test on a graph error.
func eval(tb testing.TB, t *Tensor) []float64 {
	tb.Helper()
	if t.Err() != nil {
		tb.Fatalf("unexpected error: %v", t.Err())
	}
	return evalGraph(t.node, map[*Node][]float64{})
}

// tensorOf makes a buffer tensor of dtype dt.
func tensorOf(tb testing.TB, dt ir.DType, shape []int, vals ...float64) *Tensor {
	tb.Helper()
	t, err := tc.FromFloats(dt, shape, vals)
	if err != nil {
		tb.Fatal(err)
	}
	return t
}

// f32 makes a float32 tensor.
func f32(tb testing.TB, shape []int, vals ...float64) *Tensor {
	tb.Helper()
	return tensorOf(tb, ir.Float32, shape, vals...)
}

// i32 makes an int32 tensor.
func i32(tb testing.TB, shape []int, vals ...float64) *Tensor {
	tb.Helper()
	return tensorOf(tb, ir.Int32, shape, vals...)
}

// seq is 0, 1, ..., n-1 scaled by k and shifted by off.
func seq(n int, k, off float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = float64(i)*k + off
	}
	return v
}

// closeTo compares with a float32-sized tolerance; NaNs must match.
func closeTo(got, want []float64, tol float64) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		g, w := got[i], want[i]
		switch {
		case math.IsNaN(w):
			if !math.IsNaN(g) {
				return false
			}
		case math.IsInf(w, 0):
			if g != w {
				return false
			}
		case math.Abs(g-w) > tol*(1+math.Abs(w)):
			return false
		}
	}
	return true
}

// checkVals evaluates t and compares shape, dtype and values.
func checkVals(tb testing.TB, name string, t *Tensor, dt ir.DType, shape []int, want []float64, tol float64) {
	tb.Helper()
	if t.Err() != nil {
		tb.Errorf("%s: unexpected error: %v", name, t.Err())
		return
	}
	if !slices.Equal(t.Shape(), shape) && !(len(shape) == 0 && t.Ndim() == 0) {
		tb.Errorf("%s: shape %s, want %s", name, FormatShape(t.Shape()), FormatShape(shape))
		return
	}
	if t.DType() != dt {
		tb.Errorf("%s: dtype %s, want %s", name, t.DType(), dt)
	}
	if want == nil {
		return
	}
	if got := eval(tb, t); !closeTo(got, want, tol) {
		tb.Errorf("%s: got %v\nwant %v", name, got, want)
	}
}

// checkErr expects t to carry an error containing every fragment.
func checkErr(tb testing.TB, name string, t *Tensor, frags ...string) {
	tb.Helper()
	if t.Err() == nil {
		tb.Errorf("%s: expected an error, got shape %s", name, FormatShape(t.Shape()))
		return
	}
	for _, f := range frags {
		if !strings.Contains(t.Err().Error(), f) {
			tb.Errorf("%s: error %q does not contain %q", name, t.Err(), f)
		}
	}
}

// mapf applies f to every value.
func mapf(v []float64, f func(float64) float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = f(x)
	}
	return out
}

// ---- math.go ----

func TestUnaryMath(t *testing.T) {
	xs := []float64{-3, -2.5, -1.5, -0.5, 0, 0.3, 0.5, 1.5, 2.5, 3}
	x := f32(t, []int{2, 5}, xs...)
	sigmoid := func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }
	softplus := func(v float64) float64 { return math.Log1p(math.Exp(v)) }
	roundEven := func(v float64) float64 { return math.RoundToEven(v) }
	cases := []struct {
		name string
		got  *Tensor
		f    func(float64) float64
	}{
		{"exp", x.Exp(), math.Exp},
		{"cos", x.Cos(), math.Cos},
		{"tan", x.Tan(), math.Tan},
		{"sigmoid", x.Sigmoid(), sigmoid},
		{"tanh", x.Tanh(), math.Tanh},
		{"relu", x.Relu(), func(v float64) float64 { return math.Max(v, 0) }},
		{"leaky_relu", x.LeakyRelu(0.01), func(v float64) float64 { return map[bool]float64{true: 0.01 * v, false: v}[v < 0] }},
		{"relu6", x.Mul(x.fscalar(3)).Relu6(), func(v float64) float64 { return math.Min(math.Max(3*v, 0), 6) }},
		{"gelu", x.Gelu(), func(v float64) float64 {
			return 0.5 * v * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(v+0.044715*v*v*v)))
		}},
		{"quick_gelu", x.QuickGelu(), func(v float64) float64 { return v * sigmoid(1.702*v) }},
		{"silu", x.Silu(), func(v float64) float64 { return v * sigmoid(v) }},
		{"elu", x.Elu(1), func(v float64) float64 { return map[bool]float64{true: math.Exp(v) - 1, false: v}[v < 0] }},
		{"celu", x.Celu(2), func(v float64) float64 { return math.Max(v, 0) + math.Min(2*(math.Exp(v/2)-1), 0) }},
		{"selu", x.Selu(), func(v float64) float64 {
			return 1.0507 * map[bool]float64{true: 1.67326 * (math.Exp(v) - 1), false: v}[v < 0]
		}},
		{"softplus", x.Softplus(1), softplus},
		{"softplus_beta", x.Softplus(2), func(v float64) float64 { return softplus(2*v) / 2 }},
		{"mish", x.Mish(), func(v float64) float64 { return v * math.Tanh(softplus(v)) }},
		{"logsigmoid", x.Logsigmoid(), func(v float64) float64 { return -softplus(-v) }},
		{"softsign", x.Softsign(), func(v float64) float64 { return v / (1 + math.Abs(v)) }},
		{"hardswish", x.Hardswish(), func(v float64) float64 { return v * math.Min(math.Max(v+3, 0), 6) / 6 }},
		{"hardsigmoid", x.Hardsigmoid(1.0/6, 0.5), func(v float64) float64 { return math.Min(math.Max(v/6+0.5, 0), 1) }},
		{"hardtanh", x.Hardtanh(-1, 1), func(v float64) float64 { return math.Min(math.Max(v, -1), 1) }},
		{"sinh", x.Sinh(), math.Sinh},
		{"cosh", x.Cosh(), math.Cosh},
		{"asinh", x.Asinh(), math.Asinh},
		{"erf", x.Erf(), math.Erf},
		{"atan", x.Atan(), math.Atan},
		{"square", x.Square(), func(v float64) float64 { return v * v }},
		{"abs", x.Abs(), math.Abs},
		{"sign", x.Sign(), func(v float64) float64 {
			if v == 0 {
				return 0
			}
			return math.Copysign(1, v)
		}},
		{"floor", x.Floor(), math.Floor},
		{"ceil", x.Ceil(), math.Ceil},
		{"round", x.Round(), roundEven},
		{"clip", x.Clip(-1, 2), func(v float64) float64 { return math.Min(math.Max(v, -1), 2) }},
		{"clip_min_only", x.Clip(0, math.NaN()), func(v float64) float64 { return math.Max(v, 0) }},
	}
	for _, c := range cases {
		checkVals(t, c.name, c.got, ir.Float32, []int{2, 5}, mapf(xs, c.f), 2e-5)
	}
	// erf, asin use polynomial approximations (tinygrad's), good to ~1e-6
	pos := f32(t, []int{5}, -0.9, -0.3, 0, 0.4, 0.8)
	checkVals(t, "asin", pos.Asin(), ir.Float32, []int{5}, mapf([]float64{-0.9, -0.3, 0, 0.4, 0.8}, math.Asin), 1e-5)
	checkVals(t, "acos", pos.Acos(), ir.Float32, []int{5}, mapf([]float64{-0.9, -0.3, 0, 0.4, 0.8}, math.Acos), 1e-5)
	checkVals(t, "atanh", pos.Atanh(), ir.Float32, []int{5}, mapf([]float64{-0.9, -0.3, 0, 0.4, 0.8}, math.Atanh), 1e-5)
	big := f32(t, []int{4}, 1, 2, 4, 8)
	checkVals(t, "log", big.Log(), ir.Float32, []int{4}, mapf([]float64{1, 2, 4, 8}, math.Log), 1e-6)
	checkVals(t, "log10", big.Log10(), ir.Float32, []int{4}, mapf([]float64{1, 2, 4, 8}, math.Log10), 1e-6)
	checkVals(t, "rsqrt", big.Rsqrt(), ir.Float32, []int{4}, mapf([]float64{1, 2, 4, 8}, func(v float64) float64 { return 1 / math.Sqrt(v) }), 1e-6)
	checkVals(t, "acosh", big.Acosh(), ir.Float32, []int{4}, mapf([]float64{1, 2, 4, 8}, math.Acosh), 1e-5)
	// softplus stays finite for large inputs (logaddexp form)
	checkVals(t, "softplus_large", f32(t, []int{2}, 100, -100).Softplus(1), ir.Float32, []int{2}, []float64{100, 0}, 1e-6)
}

func TestUnaryDTypes(t *testing.T) {
	xi := i32(t, []int{4}, -2, -1, 0, 3)
	xh := tensorOf(t, ir.Float16, []int{4}, -2, -1, 0, 3)
	cases := []struct {
		name string
		got  *Tensor
		dt   ir.DType
		want []float64
	}{
		{"exp int", xi.Exp(), ir.Float32, mapf([]float64{-2, -1, 0, 3}, math.Exp)},
		{"log2 int", i32(t, []int{2}, 1, 8).Log2(), ir.Float32, []float64{0, 3}},
		{"sigmoid int", xi.Sigmoid(), ir.Float32, nil},
		{"relu int", xi.Relu(), ir.Int32, []float64{0, 0, 0, 3}},
		{"abs int", xi.Abs(), ir.Int32, []float64{2, 1, 0, 3}},
		{"sign int", xi.Sign(), ir.Int32, []float64{-1, -1, 0, 1}},
		{"square int", xi.Square(), ir.Int32, []float64{4, 1, 0, 9}},
		{"floor int", xi.Floor(), ir.Int32, []float64{-2, -1, 0, 3}},
		{"clip int", xi.Clip(-1, 1), ir.Int32, []float64{-1, -1, 0, 1}},
		{"clip int float bound", xi.Clip(-0.5, 1), ir.Float32, []float64{-0.5, -0.5, 0, 1}},
		{"leaky int", xi.LeakyRelu(0.5), ir.Float32, []float64{-1, -0.5, 0, 3}},
		{"exp half", xh.Exp(), ir.Float16, nil},
		{"cos half", xh.Cos(), ir.Float16, nil},
		{"gelu half", xh.Gelu(), ir.Float16, nil},
		{"isnan", f32(t, []int{3}, math.NaN(), 1, math.Inf(1)).Isnan(), ir.Bool, []float64{1, 0, 0}},
		{"isinf", f32(t, []int{3}, math.NaN(), 1, math.Inf(-1)).Isinf(), ir.Bool, []float64{0, 0, 1}},
		{"isfinite", f32(t, []int{3}, math.NaN(), 1, math.Inf(-1)).Isfinite(), ir.Bool, []float64{0, 1, 0}},
	}
	for _, c := range cases {
		if c.got.Err() != nil {
			t.Errorf("%s: %v", c.name, c.got.Err())
			continue
		}
		checkVals(t, c.name, c.got, c.dt, c.got.Shape(), c.want, 1e-6)
	}
}

func TestDivMod(t *testing.T) {
	a := i32(t, []int{6}, -7, 7, -7, 7, 0, 5)
	b := i32(t, []int{6}, 3, 3, -3, -3, 2, 5)
	checkVals(t, "floordiv int", a.FloorDiv(b), ir.Int32, []int{6}, []float64{-3, 2, 2, -3, 0, 1}, 0)
	checkVals(t, "mod int", a.Mod(b), ir.Int32, []int{6}, []float64{2, 1, -1, -2, 0, 0}, 0)
	checkVals(t, "fmod int", a.Fmod(b), ir.Int32, []int{6}, []float64{-1, 1, -1, 1, 0, 0}, 0)
	af := f32(t, []int{4}, -7.5, 7.5, -7.5, 7.5)
	bf := f32(t, []int{4}, 2, 2, -2, -2)
	checkVals(t, "floordiv float", af.FloorDiv(bf), ir.Float32, []int{4}, []float64{-4, 3, 3, -4}, 0)
	checkVals(t, "mod float", af.Mod(bf), ir.Float32, []int{4}, []float64{0.5, 1.5, -1.5, -0.5}, 1e-6)
	checkVals(t, "fmod float", af.Fmod(bf), ir.Float32, []int{4}, []float64{-1.5, 1.5, -1.5, 1.5}, 1e-6)
	// broadcasting with a scalar, and a bool operand computing as int32
	checkVals(t, "mod scalar", a.Mod(a.iscalar(4)), ir.Int32, []int{6}, []float64{1, 3, 1, 3, 0, 1}, 0)
	checkVals(t, "floordiv bool", tensorOf(t, ir.Bool, []int{2}, 1, 0).FloorDiv(tc.Const(1, ir.Bool)), ir.Int32, []int{2}, []float64{1, 0}, 0)
	checkErr(t, "mod shapes", a.Mod(i32(t, []int{4}, 1, 2, 3, 4)), "mod:", "(6,)", "(4,)")
	checkErr(t, "floordiv shapes", a.FloorDiv(i32(t, []int{4}, 1, 2, 3, 4)), "floordiv:", "(6,) and (4,)")
}

func TestPow(t *testing.T) {
	x := f32(t, []int{5}, -2, -0.5, 0, 1.5, 3)
	pw := func(e float64) []float64 {
		return mapf([]float64{-2, -0.5, 0, 1.5, 3}, func(v float64) float64 { return math.Pow(v, e) })
	}
	for _, e := range []float64{0, 1, 2, 3, 5, -1, -2, 0.5, 2.5, 1.3} {
		checkVals(t, "pow const", x.Pow(x.fscalar(e)), ir.Float32, []int{5}, pw(e), 1e-5)
	}
	// tensor exponent: negative base with integer / non-integer exponent, 0**0
	base := f32(t, []int{6}, -2, -2, -2, 0, 0, 4)
	exp := f32(t, []int{6}, 3, 2, 0.5, 0, 2, -0.5)
	checkVals(t, "pow tensor", base.Pow(exp), ir.Float32, []int{6}, []float64{-8, 4, math.NaN(), 1, 0, 0.5}, 1e-5)
	// ints: exact for integer powers, pow(int, float) rounds back to int
	xi := i32(t, []int{4}, -3, 0, 2, 5)
	checkVals(t, "pow int const", xi.Pow(xi.iscalar(3)), ir.Int32, []int{4}, []float64{-27, 0, 8, 125}, 0)
	checkVals(t, "pow int float", xi.Pow(xi.fscalar(2)), ir.Int32, []int{4}, []float64{9, 0, 4, 25}, 0)
	checkVals(t, "pow int tensor", xi.Pow(i32(t, []int{4}, 3, 2, 10, 2)), ir.Int32, []int{4}, []float64{-27, 0, 1024, 25}, 0)
	checkVals(t, "pow int sqrt", i32(t, []int{2}, 4, 9).Pow(tc.Const(0.5, ir.Float32)), ir.Int32, []int{2}, []float64{2, 3}, 0)
	// broadcasting: a constant exponent of a larger shape
	checkVals(t, "pow broadcast", x.Pow(tc.Full([]int{2, 5}, 2, ir.Float32)), ir.Float32, []int{2, 5}, append(pw(2), pw(2)...), 1e-6)
	checkErr(t, "pow int negative", xi.Pow(xi.iscalar(-1)), "pow:", "negative integer power", "float")
	checkErr(t, "pow shapes", x.Pow(f32(t, []int{2}, 1, 2)), "pow:", "(5,) and (2,)")
}

func TestClampLerpLogaddexp(t *testing.T) {
	x := f32(t, []int{4}, -2, 0, 1, 5)
	checkVals(t, "clamp tensor", x.Clamp(f32(t, []int{4}, 0, 0, 2, 2), nil), ir.Float32, []int{4}, []float64{0, 0, 2, 5}, 0)
	checkErr(t, "clamp none", x.Clamp(nil, nil), "clip:", "at least one")
	checkErr(t, "clamp shape", x.Clamp(f32(t, []int{3}, 0, 0, 0), nil), "clip:", "(4,) and (3,)")
	checkVals(t, "lerp", x.Lerp(f32(t, []int{4}, 2, 2, 2, 2), x.fscalar(0.5)), ir.Float32, []int{4}, []float64{0, 1, 1.5, 3.5}, 1e-6)
	checkVals(t, "logaddexp", x.Logaddexp(x.fscalar(0)), ir.Float32, []int{4},
		mapf([]float64{-2, 0, 1, 5}, func(v float64) float64 { return math.Log(math.Exp(v) + 1) }), 1e-6)
	checkErr(t, "lerp shapes", x.Lerp(f32(t, []int{3}, 1, 2, 3), x.fscalar(0.5)), "lerp:", "(4,)", "(3,)")
}

func TestStickyErrors(t *testing.T) {
	bad := f32(t, []int{2, 3}, seq(6, 1, 0)...).Reshape(4)
	if bad.Err() == nil {
		t.Fatal("expected a reshape error")
	}
	ok := f32(t, []int{4}, 1, 2, 3, 4)
	axis := 0
	for name, got := range map[string]*Tensor{
		"exp": bad.Exp(), "pow": ok.Pow(bad), "mod": bad.Mod(ok), "mean": bad.Mean(false),
		"cat": ok.Cat(0, bad), "dot": ok.Dot(bad), "index": bad.Index([]IndexItem{IntIndex(0)}),
		"argmax": bad.Argmax(&axis, false), "softmax": bad.Softmax(-1), "cumsum": bad.Cumsum(0),
		"conv": bad.Conv2d(ok, nil, ConvOpts{}), "clamp": ok.Clamp(bad, nil), "gather": ok.Gather(0, bad),
	} {
		if got.Err() != bad.Err() {
			t.Errorf("%s: error %v, want the original reshape error", name, got.Err())
		}
	}
	if !strings.HasPrefix(bad.Err().Error(), "reshape: cannot reshape (2, 3)") {
		t.Errorf("reshape error %q", bad.Err())
	}
}

// tc is the context of this package's tests: they build graphs and
// evaluate them with evalGraph, never with an engine.
var tc = NewContext(nil)
