package ir

import (
	"strings"
	"testing"
)

// TestOpTable checks the op table's rows for what the rest of tgc relies
// on: unique names, ALU ops with an arity, semantics for every operand
// family they accept, a C spelling with the arity's operands, a helper
// called through $F.
func TestOpTable(t *testing.T) {
	names := map[string]Op{}
	for _, op := range Ops() {
		info := op.Info()
		if info.Name == "" {
			t.Errorf("op %d has no name", op)
		}
		if prev, dup := names[info.Name]; dup {
			t.Errorf("%s and op %d share the name", prev, op)
		}
		names[info.Name] = op
		if info.Kind != KindALU || op == OpCast {
			continue
		}
		if info.Arity < 1 || info.Arity > 3 {
			t.Errorf("%s: arity %d", op, info.Arity)
		}
		if info.Types == 0 {
			t.Errorf("%s accepts no dtype", op)
		}
		semantics := info.Cmp != nil || op == OpWhere
		if info.Types&TFloat != 0 && info.Float == nil && !semantics {
			t.Errorf("%s takes floats but has no Float", op)
		}
		if info.Types&(TInt|TBool) != 0 && info.Int == nil && !semantics {
			t.Errorf("%s takes integers but has no Int", op)
		}
		for i := 0; i < info.Arity; i++ {
			if !strings.Contains(info.C, "$"+string(rune('0'+i))) {
				t.Errorf("%s: C spelling %q lacks operand $%d", op, info.C, i)
			}
		}
		if (info.Helper != "") != strings.Contains(info.C, "$F") {
			t.Errorf("%s: a helper must be called through $F and $F needs a helper", op)
		}
	}
}

// TestShifts pins the shift semantics (the GO interpreter and constant
// folding): in the dtype's width, logical for unsigned and arithmetic for
// signed dtypes, and a count of the width or more, or negative, gives 0
// (SHL, unsigned SHR) or the sign fill (signed SHR), as numpy and Go do.
func TestShifts(t *testing.T) {
	cases := []struct {
		op         Op
		dt         DType
		a, n, want int64
	}{
		{OpShl, Int32, 1, 31, -1 << 31},
		{OpShl, Int32, 3, 30, -1 << 30},
		{OpShl, Int32, 1, 32, 0},
		{OpShl, Int32, 1, -1, 0},
		{OpShl, Int8, 1, 7, -128},
		{OpShl, Int8, -1, 8, 0},
		{OpShl, Uint8, 255, 1, 254},
		{OpShl, Uint8, 1, 200, 0},
		{OpShr, Int32, -8, 1, -4},
		{OpShr, Int32, -1, 31, -1},
		{OpShr, Int32, -5, 32, -1},
		{OpShr, Int32, 5, 40, 0},
		{OpShr, Int32, -5, -3, -1},
		{OpShr, Int8, -128, 7, -1},
		{OpShr, Int8, 127, 8, 0},
		{OpShr, Uint8, 255, 7, 1},
		{OpShr, Uint8, 128, 8, 0},
	}
	b := NewBuilder()
	for _, c := range cases {
		if got := IntOp(c.op, c.dt, c.a, c.n); got != c.want {
			t.Errorf("%s %s %d, %d = %d, want %d", c.dt, c.op, c.a, c.n, got, c.want)
		}
		if got, _ := b.Alu(c.op, b.Const(c.dt, float64(c.a)), b.Const(c.dt, float64(c.n))).ConstInt(); got != c.want {
			t.Errorf("folded %s %s %d, %d = %d, want %d", c.dt, c.op, c.a, c.n, got, c.want)
		}
	}
}
