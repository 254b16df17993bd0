package ir

import "testing"

// TestSplitReduces: a reduce over a quantized row (block r/32, offset
// r%32 in blocks of 34 bytes) is split into a loop over the blocks and one
// over the offsets, with no division or modulo left.
func TestSplitReduces(t *testing.T) {
	b := NewBuilder()
	r := &Axis{ID: 0, Size: 768, Kind: AxisReduce}
	g := &Axis{ID: 0, Size: 4, Kind: AxisGlobal}
	rv := b.Var(r)
	idx := b.Add(b.Add(b.Mul(b.Var(g), b.Int(24*34)), b.Mul(b.Div(rv, b.Int(32)), b.Int(34))), b.Mod(rv, b.Int(32)))
	v := b.Cast(Float32, b.Load(1, Int8, idx, nil))
	red := b.Reduce(&ReduceArg{Op: OpSum, Axes: []*Axis{r}}, b.Mul(v, b.Load(2, Float32, rv, nil)))
	k := &Kernel{Name: "k", Bufs: []BufParam{{Float32, 4, true}, {Int8, 4 * 24 * 34, false}, {Float32, 768, false}},
		Global: []*Axis{g}, Stores: []*Expr{b.Store(0, b.Var(g), red)}, B: b}
	if k.countDivMod() != 2 {
		t.Fatalf("the test kernel has %d div/mod, want 2", k.countDivMod())
	}
	s := SplitReduces(k)
	if err := s.Verify(); err != nil {
		t.Fatal(err)
	}
	axes := s.ReduceAxes()
	if s.countDivMod() != 0 || len(axes) != 2 || axes[0].Size != 24 || axes[1].Size != 32 {
		t.Errorf("split: %d div/mod, axes %v:\n%s", s.countDivMod(), axes, s.Dump())
	}
}
