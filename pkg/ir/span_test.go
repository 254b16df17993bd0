package ir

import (
	"slices"
	"testing"
)

// TestStoreSpans: the elements a kernel's stores write, as an affine
// function of its vars: a KV cache's row at vars[0] (768 a row, written
// two at a time), a store at constant places (no vars), a buffer stored
// at vars[0]·vars[1] (not affine: no span) beside one that is, and an
// index g + g·vars[0], whose width depends on the var (none).
func TestStoreSpans(t *testing.T) {
	b := NewBuilder()
	g := &Axis{ID: 0, Size: 384, Kind: AxisGlobal}
	p0 := b.ParamIn(ParamArg{Index: 0, Min: 0, Max: 1023})
	p1 := b.ParamIn(ParamArg{Index: 1, Min: 0, Max: 1023})
	x := b.Load(2, Float32, b.Var(g), nil)
	row := b.Add(b.Mul(p0, b.Int(768)), b.Mul(b.Var(g), b.Int(2)))
	k := &Kernel{Name: "E_384", B: b, Global: []*Axis{g}, NumParams: 2, Stores: []*Expr{
		b.Store(0, row, x),
		b.Store(0, b.Add(row, b.Int(1)), x),
		b.Store(1, b.Add(b.Mul(p0, p1), b.Var(g)), x),
	}}
	spans := k.StoreSpans()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want 1 (buffer 0's): %+v", len(spans), spans)
	}
	s := spans[0]
	if s.Buf != 0 || s.Lo != 0 || s.Hi != 767 || !slices.Equal(s.Coef, []int64{768, 0}) {
		t.Errorf("span %+v, want buffer 0, [0, 767] + 768·vars[0]", s)
	}
	if lo, hi := s.At([]int64{5, 9}); lo != 3840 || hi != 4607 {
		t.Errorf("at vars[0] = 5: [%d, %d], want [3840, 4607]", lo, hi)
	}
	fixed := &Kernel{Name: "E_384", B: b, Global: []*Axis{g}, Stores: []*Expr{b.Store(0, b.Add(b.Var(g), b.Int(100)), x)}}
	if s := fixed.StoreSpans(); len(s) != 1 || s[0].Lo != 100 || s[0].Hi != 483 || len(s[0].Coef) != 0 {
		t.Errorf("constant places: %+v, want [100, 483]", s)
	}
	free := &Kernel{Name: "E_384", B: b, Global: []*Axis{g}, NumParams: 1,
		Stores: []*Expr{b.Store(0, b.Add(b.Var(g), b.Mul(b.Var(g), b.Param(0))), x)}}
	if s := free.StoreSpans(); len(s) != 0 {
		t.Errorf("an index vars[0]·g: %+v, want no span", s)
	}
}
