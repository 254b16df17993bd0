package ir

import (
	"math"
	"strings"
	"testing"
)

// The scalar rules of docs/language.md ("Dtype rules") as the GO device and
// constant folding apply them.
func TestIntOpRules(t *testing.T) {
	for _, tc := range []struct {
		op   Op
		dt   DType
		a, b int64
		want int64
	}{
		{OpDiv, Int32, 7, 0, 0},
		{OpMod, Int32, -7, 0, 0},
		{OpDiv, Uint8, 255, 0, 0},
		{OpDiv, Int32, math.MinInt32, -1, math.MinInt32},
		{OpMod, Int32, math.MinInt32, -1, 0},
		{OpDiv, Int8, -128, -1, -128},
		{OpDiv, Int32, -7, 2, -3}, // truncates
		{OpMod, Int32, -7, 2, -1}, // sign of the dividend
		{OpMul, Uint8, 250, 2, 244},
		{OpAdd, Int8, 100, 100, -56},
		{OpNeg, Uint8, 1, 0, 255},
		{OpMul, Int32, 65536, 65536, 0},
	} {
		if got := IntOp(tc.op, tc.dt, tc.a, tc.b); got != tc.want {
			t.Errorf("%s %s(%d, %d) = %d, want %d", tc.dt, tc.op, tc.a, tc.b, got, tc.want)
		}
	}
}

func TestCastFloatToInt(t *testing.T) {
	for _, tc := range []struct {
		dt   DType
		v    float64
		want int64
	}{
		{Int32, math.NaN(), 0},
		{Int32, 3e9, math.MaxInt32},
		{Int32, -3e9, math.MinInt32},
		{Int32, math.Inf(1), math.MaxInt32},
		{Int32, math.Inf(-1), math.MinInt32},
		{Int32, -2.9, -2},
		{Int32, 2147483647.5, math.MaxInt32},
		{Uint8, 300.5, 255},
		{Uint8, -1.5, 0},
		{Uint8, -0.5, 0},
		{Int8, 127.9, 127},
		{Int8, -128.9, -128},
		{Int8, 1000, 127},
		{Bool, math.NaN(), 1},
		{Bool, -0.0, 0},
	} {
		if got := CastFloatToInt(tc.dt, tc.v); got != tc.want {
			t.Errorf("(%s)%v = %d, want %d", tc.dt, tc.v, got, tc.want)
		}
	}
}

func TestRoundFloat16(t *testing.T) {
	// 22.83... rounds to 22.828125 in float16; float32 keeps more.
	if got := RoundFloat(Float16, -3.697265625*-6.17578125); got != 22.828125 {
		t.Errorf("float16 rounding of 22.833... = %v, want 22.828125", got)
	}
	b := NewBuilder()
	if c := b.Const(Float16, 0.1); c.ConstFloat() != 0.0999755859375 {
		t.Errorf("float16 constant 0.1 = %v, want 0.0999755859375", c.ConstFloat())
	}
}

// Division by a constant 0 or -1 folds to the rule's value (a C compiler
// would trap on the first and may on the second).
func TestSimplifyDivisionByZeroAndMinusOne(t *testing.T) {
	b := NewBuilder()
	x := b.Load(0, Int32, b.Var(&Axis{ID: 0, Size: 4}), nil)
	for _, tc := range []struct {
		got  *Expr
		want string
	}{
		{b.Div(x, b.Const(Int32, 0)), "0"},
		{b.Mod(x, b.Const(Int32, 0)), "0"},
		{b.Mod(x, b.Const(Int32, -1)), "0"},
		{b.Div(x, b.Const(Int32, -1)), "(buf0[gidx0]*-1)"},
		{b.Div(b.Const(Int32, math.MinInt32), b.Const(Int32, -1)), "-2147483648"},
	} {
		if got := tc.got.String(); got != tc.want {
			t.Errorf("got %s, want %s", got, tc.want)
		}
	}
}

func TestMayWrap(t *testing.T) {
	b := NewBuilder()
	i := b.Var(&Axis{ID: 0, Size: 100})
	u := b.Load(0, Uint8, i, nil)
	s := b.Load(1, Int8, i, nil)
	small := b.Cast(Int32, i) // [0, 99]
	w := b.Load(2, Int32, i, nil)
	for _, tc := range []struct {
		e    *Expr
		want bool
	}{
		{b.Mul(u, b.Const(Uint8, 2)), true},
		{b.Add(b.Alu(OpMax, u, b.Const(Uint8, 0)), b.Const(Uint8, 0)), false},
		{b.Alu(OpNeg, u), true},
		{b.Alu(OpNeg, s), true}, // -(-128)
		{b.Add(small, b.Const(Int32, 1000)), false},
		{b.Mul(small, small), false},
		{b.Add(w, b.Const(Int32, 1)), true},
		{b.Div(w, b.Alu(OpMax, w, b.Const(Int32, -5))), true}, // MIN / -1
		{b.Div(w, b.Alu(OpMax, w, b.Const(Int32, 1))), false},
		{b.Add(i, b.Int(5)), false}, // index arithmetic never wraps
	} {
		if got := tc.e.MayWrap(); got != tc.want {
			t.Errorf("%s: MayWrap %v, want %v", tc.e, got, tc.want)
		}
	}
}

// kernelOf makes a one-store kernel over global axes of the given sizes
// that stores buf1 read at the linear index.
func kernelOf(sizes ...int64) *Kernel {
	b := NewBuilder()
	k := &Kernel{Name: "k", B: b}
	idx := b.Int(0)
	n := int64(1)
	for i, s := range sizes {
		a := &Axis{ID: i, Size: s, Kind: AxisGlobal}
		k.Global = append(k.Global, a)
		n *= s
	}
	stride := int64(1)
	for i := len(sizes) - 1; i >= 0; i-- {
		idx = b.Add(idx, b.Mul(b.Var(k.Global[i]), b.Int(stride)))
		stride *= sizes[i]
	}
	k.Bufs = []BufParam{{DType: Uint8, Size: n, Output: true}, {DType: Uint8, Size: n}}
	k.Stores = []*Expr{b.Store(0, idx, b.Load(1, Uint8, idx, nil))}
	return k
}

func TestWideIndex(t *testing.T) {
	for _, tc := range []struct {
		sizes []int64
		wide  bool
	}{
		{[]int64{1024, 1024}, false},
		{[]int64{32768, 65536}, false}, // 2^31 elements: the largest index is 2^31-1
		{[]int64{32769, 65536}, true},
		{[]int64{65536, 65536}, true},
		{[]int64{1 << 33}, true},
	} {
		k := kernelOf(tc.sizes...)
		if err := k.Verify(); err != nil {
			t.Fatal(err)
		}
		if got := k.WideIndex(); got != tc.wide {
			t.Errorf("%v: WideIndex %v, want %v", tc.sizes, got, tc.wide)
		}
	}
}

// A kernel whose index arithmetic can exceed int64 is refused before it
// runs.
func TestVerifyRefusesIndexOverflow(t *testing.T) {
	k := kernelOf(1<<40, 1<<30)
	err := k.Verify()
	if err == nil || !strings.Contains(err.Error(), "overflow int64") {
		t.Fatalf("Verify = %v, want an index overflow error", err)
	}
}

// The digits of an index seen through a cast to int32 are joined in the
// index type (argmax over 2^31-2^16 elements failed with "MOD mixes int64
// and int32").
func TestJoinModsThroughCast(t *testing.T) {
	b := NewBuilder()
	r := b.Var(&Axis{ID: 0, Size: 2097088, Kind: AxisReduce})
	c := b.Int
	hi := b.Cast(Int32, b.Mod(b.Div(r, c(64)), c(2)))
	lo := b.Cast(Int32, b.Mod(r, c(64)))
	e := b.Add(b.Mul(hi, b.Const(Int32, -1024)), b.Mul(lo, b.Const(Int32, -16)))
	var bad string
	Walk([]*Expr{e}, func(x *Expr) {
		if x.Op.IsBinary() && !x.Op.IsCompare() && x.Src[0].DType != x.Src[1].DType {
			bad = x.String()
		}
	})
	if bad != "" {
		t.Fatalf("%s mixes dtypes in %s", bad, e)
	}
	if !strings.Contains(e.String(), "%128") {
		t.Errorf("digits not joined: %s", e)
	}
}

func TestBoundsOfDivModAnySign(t *testing.T) {
	b := NewBuilder()
	i := b.Var(&Axis{ID: 0, Size: 10})
	m := b.Sub(i, b.Int(1)) // [-1, 8]
	for _, tc := range []struct {
		e        *Expr
		min, max int64
	}{
		{b.Div(m, b.Int(2)), 0, 4}, // -1/2 truncates to 0
		{b.Div(b.Sub(i, b.Int(5)), b.Int(2)), -2, 2},
		{b.Div(i, b.Int(-3)), -3, 0},
		{b.Mod(b.Sub(i, b.Int(5)), b.Int(3)), -2, 2},
	} {
		if tc.e.Min != tc.min || tc.e.Max != tc.max {
			t.Errorf("%s: bounds [%d, %d], want [%d, %d]", tc.e, tc.e.Min, tc.e.Max, tc.min, tc.max)
		}
	}
}

func TestVerifyRefusesBoolArithmetic(t *testing.T) {
	b := NewBuilder()
	i := b.Var(&Axis{ID: 0, Size: 4, Kind: AxisGlobal})
	x := b.Load(1, Bool, i, nil)
	k := &Kernel{Name: "k", B: b, Global: []*Axis{i.Arg.(*Axis)},
		Bufs:   []BufParam{{DType: Bool, Size: 4, Output: true}, {DType: Bool, Size: 4}},
		Stores: []*Expr{b.Store(0, i, b.raw(OpAdd, Bool, nil, x, x))}}
	if err := k.Verify(); err == nil || !strings.Contains(err.Error(), "ADD on bool") {
		t.Fatalf("Verify = %v, want ADD on bool refused", err)
	}
}
