package ir

import (
	"math/rand"
	"testing"
)

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
		// rows and columns of one image, joined: ((k/20)%20)*20 + k%20 → k%400
		{b.Add(b.Mul(b.Mod(b.Div(k, c(20)), c(20)), c(20)), b.Mod(k, c(20))), "(gidx2%400)"},
		{b.Add(b.Add(b.Mul(b.Div(k, c(400)), c(12800)), b.Mul(b.Mod(b.Div(k, c(20)), c(20)), c(40))), b.Mul(b.Mod(k, c(20)), c(2))),
			"(((gidx2/400)*12800)+((gidx2%400)*2))"},
		// a split reduce's lanes (16 | 400) stay contiguous once joined
		{b.Add(b.Mul(b.Mod(b.Div(b.Add(b.Mul(k, c(16)), i), c(20)), c(20)), c(20)), b.Mod(b.Add(b.Mul(k, c(16)), i), c(20))),
			"(((gidx2%25)*16)+gidx0)"},
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
		{b.Lt(c(-4), b.Mul(i, c(-1))), "(gidx0<4)"}, // a flipped pad's guard
		{b.Lt(c(1), b.Sub(c(5), i)), "(gidx0<4)"},
	} {
		if got := tc.got.String(); got != tc.want {
			t.Errorf("case %d: got %s, want %s", n, got, tc.want)
		}
	}
}

func TestSimplifySmallRemainder(t *testing.T) {
	b := NewBuilder()
	x := b.Var(&Axis{ID: 0, Size: 125})
	y := b.Var(&Axis{ID: 1, Size: 125})
	k := b.Var(&Axis{ID: 2, Size: 126}) // one more than fits under 125
	i := b.Var(&Axis{ID: 3, Size: 6})
	j := b.Var(&Axis{ID: 4, Size: 6})
	c := b.Int
	for n, tc := range []struct {
		got  *Expr
		want string
	}{
		// (x*g + s)/d with g | d and 0 <= s < g: s never carries
		{b.Div(b.Add(b.Mul(x, c(125)), y), c(3125)), "(gidx0/25)"},
		{b.Mod(b.Add(b.Mul(x, c(125)), y), c(3125)), "(((gidx0%25)*125)+gidx1)"},
		{b.Div(b.Add(b.Mul(i, c(6)), j), c(12)), "(gidx3/2)"},
		{b.Div(b.Add(b.Add(b.Mul(i, c(6)), j), c(12)), c(12)), "((gidx3/2)+1)"},
		{b.Mod(b.Add(b.Mul(i, c(6)), j), c(12)), "(((gidx3%2)*6)+gidx4)"},
		// must not simplify: the remainder can reach the factor
		{b.Div(b.Add(b.Mul(x, c(125)), k), c(3125)), "(((gidx0*125)+gidx2)/3125)"},
		{b.Mod(b.Add(b.Mul(x, c(125)), k), c(3125)), "(((gidx0*125)+gidx2)%3125)"},
		{b.Div(b.Add(b.Mul(i, c(6)), b.Add(j, c(1))), c(12)), "((((gidx3*6)+gidx4)+1)/12)"},
		// the factor must divide the divisor
		{b.Div(b.Add(b.Mul(i, c(4)), j), c(6)), "(((gidx3*4)+gidx4)/6)"},
	} {
		if got := tc.got.String(); got != tc.want {
			t.Errorf("case %d: got %s, want %s", n, got, tc.want)
		}
	}
}

func TestSimplifyGivenGuard(t *testing.T) {
	b := NewBuilder()
	i := b.Var(&Axis{ID: 0, Size: 6})
	j := b.Var(&Axis{ID: 1, Size: 24})
	c := b.Int
	p := b.Add(b.Mul(i, c(24)), j) // the repeated-input position of a pool gradient, 0..143
	q := b.Mod(p, c(125))
	idx := func(l *Expr) string { return l.Src[0].String() }
	for n, tc := range []struct {
		got  *Expr
		want string
	}{
		// inside p < 125, p%125 is p
		{b.Load(0, Float32, q, b.Lt(p, c(125))), "((gidx0*24)+gidx1)"},
		// and (p*125 + r)/3125 is p/25 for r < 125
		{b.Load(0, Float32, b.Div(b.Add(b.Mul(q, c(125)), b.Mod(b.Add(b.Mul(j, c(24)), i), c(125))), c(3125)),
			b.And(b.Lt(p, c(125)), b.Lt(b.Add(b.Mul(j, c(24)), i), c(125)))), "(((gidx0*24)+gidx1)/25)"},
		// a guard on (p%25) < 20 narrows p%25 too
		{b.Load(0, Float32, b.Add(b.Mul(b.Mod(b.Mod(p, c(25)), c(20)), c(20)), q),
			b.And(b.Lt(p, c(125)), b.Lt(b.Mod(p, c(25)), c(20)))), "((((((gidx0*24)+gidx1)%25)*20)+(gidx0*24))+gidx1)"},
		// a lower bound from a pad: max(p-3, 0) is p-3 inside 2 < p
		{b.Load(0, Float32, b.Alu(OpMax, b.Add(p, c(-3)), c(0)), b.Lt(c(2), p)), "(((gidx0*24)+gidx1)+-3)"},
		// the guard matches inside a linear form: (p+3)%128 with p < 125
		{b.Load(0, Float32, b.Mod(b.Add(p, c(3)), c(128)), b.Lt(p, c(125))), "(((gidx0*24)+gidx1)+3)"},
		// must not simplify: p may be 125 under the guard, or there is no guard
		{b.Load(0, Float32, q, b.Lt(p, c(126))), "(((gidx0*24)+gidx1)%125)"},
		{b.Load(0, Float32, q, nil), "(((gidx0*24)+gidx1)%125)"},
		{b.Load(0, Float32, q, b.Lt(j, c(20))), "(((gidx0*24)+gidx1)%125)"},
	} {
		if got := idx(tc.got); got != tc.want {
			t.Errorf("case %d: got %s, want %s", n, got, tc.want)
		}
	}
}

// evalInt evaluates an integer or bool expression at the given loop values.
func evalInt(e *Expr, env map[*Axis]int64) int64 {
	switch e.Op {
	case OpConst:
		v, _ := e.ConstInt()
		return v
	case OpVar:
		return env[e.Arg.(*Axis)]
	case OpCast:
		return evalInt(e.Src[0], env)
	case OpNeg:
		return -evalInt(e.Src[0], env)
	case OpWhere:
		if evalInt(e.Src[0], env) != 0 {
			return evalInt(e.Src[1], env)
		}
		return evalInt(e.Src[2], env)
	case OpCmpLt:
		if evalInt(e.Src[0], env) < evalInt(e.Src[1], env) {
			return 1
		}
		return 0
	}
	return IntOp(e.Op, e.DType, evalInt(e.Src[0], env), evalInt(e.Src[1], env))
}

// refExpr is a random index expression kept both as a closure (the plain
// semantics, no simplification) and as the builder's simplified Expr.
type refExpr struct {
	f func(v []int64) int64
	e *Expr
}

func randIndexExpr(r *rand.Rand, b *Builder, vars []*Expr, depth int) refExpr {
	if depth == 0 || r.Intn(4) == 0 {
		if r.Intn(5) == 0 {
			k := int64(r.Intn(7))
			return refExpr{func([]int64) int64 { return k }, b.Int(k)}
		}
		n := r.Intn(len(vars))
		return refExpr{func(v []int64) int64 { return v[n] }, vars[n]}
	}
	x := randIndexExpr(r, b, vars, depth-1)
	k := int64(1 + r.Intn(12))
	switch r.Intn(5) {
	case 0:
		y := randIndexExpr(r, b, vars, depth-1)
		return refExpr{func(v []int64) int64 { return x.f(v) + y.f(v) }, b.Add(x.e, y.e)}
	case 1:
		return refExpr{func(v []int64) int64 { return x.f(v) * k }, b.Mul(x.e, b.Int(k))}
	case 2:
		return refExpr{func(v []int64) int64 { return x.f(v) / k }, b.Div(x.e, b.Int(k))}
	case 3:
		return refExpr{func(v []int64) int64 { return x.f(v) % k }, b.Mod(x.e, b.Int(k))}
	}
	y := randIndexExpr(r, b, vars, depth-1)
	return refExpr{func(v []int64) int64 { return x.f(v)*k + y.f(v) }, b.Add(b.Mul(x.e, b.Int(k)), y.e)}
}

// TestSimplifyRandom checks the simplifier against plain evaluation on
// random index expressions over every value of their (small) variables:
// unguarded, the simplified expression must equal the original everywhere;
// as a guarded load's index, wherever the guard holds.
func TestSimplifyRandom(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	changed := 0
	for n := 0; n < 3000; n++ {
		b := NewBuilder()
		axes := []*Axis{{ID: 0, Size: int64(1 + r.Intn(9))}, {ID: 1, Size: int64(1 + r.Intn(30))}, {ID: 2, Size: int64(1 + r.Intn(5))}}
		vars := []*Expr{b.Var(axes[0]), b.Var(axes[1]), b.Var(axes[2])}
		idx := randIndexExpr(r, b, vars, 4)
		// the guard: one to three bounds on random subexpressions
		type bound struct {
			g     refExpr
			c     int64
			upper bool
		}
		var bs []bound
		var valid *Expr
		for range 1 + r.Intn(3) {
			g := randIndexExpr(r, b, vars, 3)
			if r.Intn(2) == 0 {
				g = idx // bound a part of the index itself
				if len(idx.e.Src) > 0 && r.Intn(2) == 0 {
					g = randIndexExpr(r, b, vars, 2)
				}
			}
			span := g.e.Max - g.e.Min + 1
			if span > 1000 {
				span = 1000
			}
			c := g.e.Min + int64(r.Int63n(span+1))
			upper := r.Intn(3) != 0
			bs = append(bs, bound{g, c, upper})
			if upper {
				valid = b.And(valid, b.Lt(g.e, b.Int(c)))
			} else {
				valid = b.And(valid, b.Lt(b.Int(c), g.e))
			}
		}
		given := idx.e
		if valid != nil && !valid.IsConst() {
			given = b.simplifyGiven(idx.e, valid)
		}
		if given != idx.e {
			changed++
		}
		env := map[*Axis]int64{}
		v := make([]int64, 3)
		for v[0] = 0; v[0] < axes[0].Size; v[0]++ {
			for v[1] = 0; v[1] < axes[1].Size; v[1]++ {
				for v[2] = 0; v[2] < axes[2].Size; v[2]++ {
					for a := range axes {
						env[axes[a]] = v[a]
					}
					want := idx.f(v)
					if got := evalInt(idx.e, env); got != want {
						t.Fatalf("case %d: %s at %v = %d, want %d", n, idx.e, v, got, want)
					}
					if want < idx.e.Min || want > idx.e.Max {
						t.Fatalf("case %d: %s at %v = %d outside its bounds [%d, %d]", n, idx.e, v, want, idx.e.Min, idx.e.Max)
					}
					ok := true
					for _, g := range bs {
						gv := g.g.f(v)
						ok = ok && (g.upper && gv < g.c || !g.upper && g.c < gv)
					}
					if ok {
						if got := evalInt(given, env); got != want {
							t.Fatalf("case %d: %s given %s = %s at %v: %d, want %d", n, idx.e, valid, given, v, got, want)
						}
					}
				}
			}
		}
	}
	if changed < 50 {
		t.Errorf("the guard simplified only %d of 3000 indices: the test exercises too little", changed)
	}
	t.Logf("the guard simplified %d of 3000 indices", changed)
}

// TestWalkPre checks the pre-order walk: a node before its sources, a
// shared node once, and nothing under a node whose enter says no.
func TestWalkPre(t *testing.T) {
	b := NewBuilder()
	i := b.Var(&Axis{ID: 0, Size: 8, Kind: AxisGlobal})
	x := b.Load(0, Float32, i, nil)
	y := b.Load(1, Float32, i, nil)
	shared := b.Mul(x, y)
	root := b.Add(shared, b.Mul(shared, b.Const(Float32, 3)))
	var order []*Expr
	WalkPre([]*Expr{root, shared}, func(e *Expr) bool {
		order = append(order, e)
		return true
	})
	seen := map[*Expr]int{}
	for n, e := range order {
		if _, twice := seen[e]; twice {
			t.Fatalf("%s visited twice", e)
		}
		seen[e] = n
	}
	if seen[root] != 0 || seen[shared] > seen[x] || seen[shared] > seen[y] {
		t.Errorf("not pre-order: %v", order)
	}
	var stopped []*Expr
	WalkPre([]*Expr{root}, func(e *Expr) bool {
		stopped = append(stopped, e)
		return e != shared
	})
	for _, e := range stopped {
		if e == x || e == y || e == i {
			t.Errorf("walked under a node whose enter returned false: %s", e)
		}
	}
	if len(stopped) != 4 { // root, shared, shared*3, 3
		t.Errorf("visited %d nodes, want 4: %v", len(stopped), stopped)
	}
}
