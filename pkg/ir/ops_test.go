package ir

import (
	"math"
	"strings"
	"testing"
)

// TestOpTable checks the op table's rows for what the rest of tgc relies
// on: unique names, ALU ops with an arity, semantics for every operand
// family they accept, a C spelling with the arity's operands, a helper
// called through $F, integer and float64 spellings with the arity's
// operands. (CAST and BITCAST convert between dtypes: the renderers spell
// them.)
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
		if info.Kind != KindALU || op == OpCast || op == OpBitcast {
			continue
		}
		if info.Arity < 1 || info.Arity > 3 {
			t.Errorf("%s: arity %d", op, info.Arity)
		}
		if info.Types == 0 {
			t.Errorf("%s accepts no dtype", op)
		}
		if (info.Cmp != nil) != (info.CmpInt != nil) || (info.Cmp != nil) != (info.Result == BoolResult) {
			t.Errorf("%s: a comparison has Cmp, CmpInt and a bool result", op)
		}
		semantics := info.Cmp != nil || op == OpWhere
		if info.Types&TFloat != 0 && info.Float == nil && !semantics {
			t.Errorf("%s takes floats but has no Float", op)
		}
		if info.Types&(TInt|TBool) != 0 && info.Int == nil && !semantics {
			t.Errorf("%s takes integers but has no Int", op)
		}
		for _, sp := range []string{info.C, info.Ints, info.F64} {
			for i := 0; i < info.Arity && sp != ""; i++ {
				if !strings.Contains(sp, "$"+string(rune('0'+i))) {
					t.Errorf("%s: spelling %q lacks operand $%d", op, sp, i)
				}
			}
		}
		if info.F64 != "" && info.Types&TFloat == 0 || info.Ints != "" && info.Types&TInt == 0 {
			t.Errorf("%s: a spelling for operands it does not take", op)
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
		{OpShl, Int16, 1, 15, math.MinInt16},
		{OpShr, Int16, math.MinInt16, 15, -1},
		{OpShl, Uint16, 1, 16, 0},
		{OpShl, Uint32, math.MaxUint32, 4, math.MaxUint32 - 15},
		{OpShr, Uint32, math.MaxUint32, 31, 1},
		{OpShl, Int64, 1, 63, math.MinInt64},
		{OpShr, Int64, math.MinInt64, 63, -1},
		{OpShr, Int64, -1, 64, -1},
		{OpShr, Uint64, -1, 63, 1}, // 2^64-1 as a bit pattern: logical
		{OpShr, Uint64, -1, 64, 0},
		{OpShl, Uint64, -1, 63, math.MinInt64},
	}
	b := NewBuilder()
	for _, c := range cases {
		if got := IntOp(c.op, c.dt, c.a, c.n); got != c.want {
			t.Errorf("%s %s %d, %d = %d, want %d", c.dt, c.op, c.a, c.n, got, c.want)
		}
		if got, _ := b.Alu(c.op, b.ConstInt(c.dt, c.a), b.ConstInt(c.dt, c.n)).ConstInt(); got != c.want {
			t.Errorf("folded %s %s %d, %d = %d, want %d", c.dt, c.op, c.a, c.n, got, c.want)
		}
	}
}
