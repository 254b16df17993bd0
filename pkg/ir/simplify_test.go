package ir

import "testing"

func TestSimplify(t *testing.T) {
	b := NewBuilder()
	i := b.Var(&Axis{ID: 0, Size: 4})
	j := b.Var(&Axis{ID: 1, Size: 6})
	k := b.Var(&Axis{ID: 2, Size: 1024})
	c := b.Int
	cases := []struct {
		got  *Expr
		want string
	}{
		{b.Add(i, c(0)), "gidx0"},
		{b.Mul(i, c(1)), "gidx0"},
		{b.Mul(i, c(0)), "0"},
		{b.Add(c(2), c(3)), "5"},
		{b.Add(c(2), i), "(gidx0+2)"},
		{b.Add(b.Add(i, c(2)), c(3)), "(gidx0+5)"},
		{b.Div(b.Mul(i, c(4)), c(4)), "gidx0"},
		{b.Mod(b.Mul(i, c(4)), c(4)), "0"},
		{b.Div(i, c(4)), "0"},
		{b.Mod(i, c(4)), "gidx0"},
		{b.Mod(i, c(8)), "gidx0"},
		// reshape (4,6) -> (24) -> (4,6) cancels
		{b.Mod(b.Div(b.Add(b.Mul(i, c(6)), j), c(6)), c(4)), "gidx0"},
		{b.Mod(b.Add(b.Mul(i, c(6)), j), c(6)), "gidx1"},
		{b.Div(b.Add(b.Mul(i, c(8)), j), c(2)), "((gidx0*4)+(gidx1/2))"},
		{b.Div(b.Add(b.Mul(i, c(4)), c(8)), c(8)), "((gidx0/2)+1)"},
		{b.Mod(b.Add(b.Mul(i, c(4)), c(8)), c(8)), "((gidx0%2)*4)"},
		{b.Div(b.Div(k, c(4)), c(8)), "(gidx2/32)"},
		{b.Mod(b.Mod(k, c(64)), c(8)), "(gidx2%8)"},
		{b.Add(b.Mul(b.Div(k, c(32)), c(32)), b.Mod(k, c(32))), "gidx2"},
		{b.Add(b.Mul(b.Div(k, c(32)), c(64)), b.Mul(b.Mod(k, c(32)), c(2))), "(gidx2*2)"},
		{b.Sub(b.Add(i, j), j), "gidx0"},
		{b.Mul(b.Add(i, c(1)), c(3)), "((gidx0*3)+3)"},
		{b.Lt(i, c(4)), "1"},
		{b.Lt(i, c(0)), "0"},
		{b.Lt(b.Add(i, c(-1)), c(0)), "(gidx0<1)"},
		{b.Alu(OpMax, i, c(0)), "gidx0"},
		{b.And(b.Lt(i, c(3)), b.True()), "(gidx0<3)"},
		{b.Where(b.True(), i, j), "gidx0"},
		{b.Mul(b.Const(Float32, 2), b.Const(Float32, 3)), "6"},
		{b.Alu(OpExp2, b.Const(Float32, 3)), "8"},
	}
	for n, tc := range cases {
		if got := tc.got.String(); got != tc.want {
			t.Errorf("case %d: got %s, want %s", n, got, tc.want)
		}
	}
}

func TestBounds(t *testing.T) {
	b := NewBuilder()
	i := b.Var(&Axis{ID: 0, Size: 10})
	for _, tc := range []struct {
		e        *Expr
		min, max int64
	}{
		{i, 0, 9},
		{b.Add(b.Mul(i, b.Int(3)), b.Int(1)), 1, 28},
		{b.Sub(b.Int(0), i), -9, 0},
		{b.Div(i, b.Int(3)), 0, 3},
		{b.Mod(b.Add(i, b.Int(20)), b.Int(7)), 0, 6},
	} {
		if tc.e.Min != tc.min || tc.e.Max != tc.max {
			t.Errorf("%s: bounds [%d, %d], want [%d, %d]", tc.e, tc.e.Min, tc.e.Max, tc.min, tc.max)
		}
	}
}

func TestNegativeZeroIsKept(t *testing.T) {
	b := NewBuilder()
	if b.Const(Float32, 0) == b.Const(Float32, negZero()) {
		t.Fatal("-0.0 and 0.0 interned as one constant")
	}
}

func negZero() float64 { z := 0.0; return -z }

func TestSimplifyComparisons(t *testing.T) {
	b := NewBuilder()
	i := b.Var(&Axis{ID: 0, Size: 13})
	c := b.Int
	for n, tc := range []struct {
		got  *Expr
		want string
	}{
		{b.Lt(b.Sub(c(12), i), c(10)), "(2<gidx0)"},
		{b.Lt(b.Add(i, c(3)), c(10)), "(gidx0<7)"},
		{b.Lt(c(4), b.Add(i, c(2))), "(2<gidx0)"},
		{b.Lt(b.Mul(i, c(4)), c(10)), "(gidx0<3)"},
		{b.Lt(b.Mul(i, c(4)), c(12)), "(gidx0<3)"},
	} {
		if got := tc.got.String(); got != tc.want {
			t.Errorf("case %d: got %s, want %s", n, got, tc.want)
		}
	}
}
