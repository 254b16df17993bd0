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

// Promote follows tinygrad's lattice.
func TestPromoteLattice(t *testing.T) {
	for _, tc := range []struct{ a, b, want DType }{
		{Bool, Int8, Int8},
		{Int8, Uint8, Int16},
		{Uint8, Int16, Int16},
		{Uint16, Int16, Int32},
		{Uint32, Int32, Int64},
		{Uint32, Uint8, Uint32},
		{Int64, Uint64, Float16},
		{Int64, Int8, Int64},
		{Float16, BFloat16, Float32},
		{BFloat16, Int32, BFloat16},
		{Float16, Float64, Float64},
		{Uint64, Float32, Float32},
		{Bool, Bool, Bool},
	} {
		if got := Promote(tc.a, tc.b); got != tc.want {
			t.Errorf("Promote(%s, %s) = %s, want %s", tc.a, tc.b, got, tc.want)
		}
		if got := Promote(tc.b, tc.a); got != tc.want {
			t.Errorf("Promote(%s, %s) = %s, want %s", tc.b, tc.a, got, tc.want)
		}
	}
}

func TestUnsigned64Rules(t *testing.T) {
	big := int64(-2) // 2^64-2 as a bit pattern
	for _, tc := range []struct {
		op   Op
		a, b int64
		want int64
	}{
		{OpDiv, big, 2, math.MaxInt64},
		{OpMod, big, 3, int64(uint64(big) % 3)},
		{OpMax, big, 5, big},
		{OpDiv, big, -1, 0}, // 2^64-2 / (2^64-1)
	} {
		if got := IntOp(tc.op, Uint64, tc.a, tc.b); got != tc.want {
			t.Errorf("uint64 %s(%d, %d) = %d, want %d", tc.op, tc.a, tc.b, got, tc.want)
		}
	}
	if !CompareInt(OpCmpLt, Uint64, 5, big) || CompareInt(OpCmpLt, Int64, 5, big) {
		t.Error("uint64 compares unsigned, int64 signed")
	}
	b := NewBuilder()
	if c := b.Alu(OpCmpLt, b.ConstInt(Uint64, 5), b.ConstInt(Uint64, big)); c.String() != "1" {
		t.Errorf("folded uint64 5 < 2^64-2 = %s", c)
	}
	if got := CastFloatToInt(Uint64, 1e20); got != -1 {
		t.Errorf("(uint64)1e20 = %d, want the all-ones pattern", got)
	}
	if got := CastFloatToInt(Uint64, 1.8446744073709550e19); uint64(got) != 18446744073709549568 {
		t.Errorf("(uint64)1.844674407370955e19 = %d", uint64(got))
	}
	if got := CastFloatToInt(Int64, -1e30); got != math.MinInt64 {
		t.Errorf("(int64)-1e30 = %d", got)
	}
}

func TestBitsRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		dt   DType
		f    float64
		i    int64
		bits uint64
	}{
		{Float32, 1.5, 0, 0x3fc00000},
		{Float16, -2, 0, 0xc000},
		{BFloat16, 1, 0, 0x3f80},
		{Float64, math.Copysign(0, -1), 0, 0x8000000000000000},
		{Int16, 0, -1, 0xffff},
		{Uint32, 0, 0xdeadbeef, 0xdeadbeef},
		{Int8, 0, -128, 0x80},
	} {
		if got := Bits(tc.dt, tc.f, tc.i); got != tc.bits {
			t.Errorf("Bits(%s, %v, %d) = %#x, want %#x", tc.dt, tc.f, tc.i, got, tc.bits)
		}
		f, i := FromBits(tc.dt, tc.bits)
		if math.Float64bits(f) != math.Float64bits(tc.f) || i != tc.i {
			t.Errorf("FromBits(%s, %#x) = %v, %d", tc.dt, tc.bits, f, i)
		}
	}
	b := NewBuilder()
	if c := b.Bitcast(Float16, b.ConstInt(Uint16, 0x3c00)); c.ConstFloat() != 1 {
		t.Errorf("bitcast of 0x3c00 to float16 = %v, want 1", c.ConstFloat())
	}
}

// Bounds of 64-bit integers never claim a range the arithmetic can leave.
func TestBounds64(t *testing.T) {
	b := NewBuilder()
	x := b.Load(0, Int64, b.Int(0), nil)
	s := b.Add(x, b.ConstInt(Int64, 1))
	if lo, hi := Int64.Range(); s.Min != lo || s.Max != hi || !s.MayWrap() {
		t.Errorf("int64 x+1: bounds [%d, %d], MayWrap %v", s.Min, s.Max, s.MayWrap())
	}
	u := b.Load(1, Uint64, b.Int(0), nil)
	m := b.Alu(OpMax, u, b.ConstInt(Uint64, math.MinInt64))
	if m.Op != OpMax {
		t.Errorf("max(uint64 x, 2^63) simplified to %s", m)
	}
}
