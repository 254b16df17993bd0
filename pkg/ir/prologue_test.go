package ir_test

import (
	"strings"
	"testing"

	"tgc/pkg/fuse"
	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// TestProloguePlan: a one-row RMSNorm joined to the matrix-vector product
// after it (fuse's prologues) gets a prologue plan on the CPU, every lane
// of the unrolled product an occurrence; Verify refuses the plan with a
// column moved by one, and with a scratch row one element short.
func TestProloguePlan(t *testing.T) {
	x, g, w := input(1, 128), input(128), input(24, 128)
	ms := x.Mul(x).Sum(true, 1).Mul(tc.Const(1.0/128, ir.Float32))
	out := x.Mul(ms.Add(tc.Const(1e-5, ir.Float32)).Rsqrt()).Mul(g).Dot(w.T())
	s, err := fuse.Create([]*tensor.Node{out.Node()}, fuse.Options{HoistReduces: true})
	if err != nil || len(s.Items) != 1 {
		t.Fatalf("%v: want one kernel, got %d", err, len(s.Items))
	}
	k, err := ir.OptimizeFor(s.Items[0].Kernel, ir.CPUTarget, nil)
	if err != nil {
		t.Fatal(err)
	}
	if k.Pro == nil || len(k.Pro.Col) < 2 || k.Pro.Axis.Size != 128 {
		t.Fatalf("no prologue plan over 128 columns with the product's lanes:\n%s", k.Dump())
	}
	if !strings.Contains(k.Dump(), "prologue ") {
		t.Errorf("the dump does not show the plan:\n%s", k.Dump())
	}
	breaks := []struct {
		name, want string
		f          func(p *ir.Prologue, b *ir.Builder)
	}{
		{"column moved", "is not the value at column", func(p *ir.Prologue, b *ir.Builder) {
			var first *ir.Expr // the occurrence of the lowest columns: one more stays in the row
			for e, c := range p.Col {
				if first == nil || c.Max < p.Col[first].Max {
					first = e
				}
			}
			p.Col[first] = b.Add(p.Col[first], b.Int(1))
		}},
		{"row short", "outside the scratch row", func(p *ir.Prologue, b *ir.Builder) {
			old := p.Axis
			p.Axis = &ir.Axis{ID: old.ID, Size: old.Size - 1, Kind: old.Kind}
			p.Value = b.Rebuild(p.Value, func(e *ir.Expr) *ir.Expr {
				if e.Op == ir.OpVar && e.Arg.(*ir.Axis) == old {
					return b.Var(p.Axis)
				}
				return nil
			}, map[*ir.Expr]*ir.Expr{})
		}},
	}
	for _, br := range breaks {
		nk := *k
		pro := &ir.Prologue{Axis: k.Pro.Axis, Value: k.Pro.Value, Col: map[*ir.Expr]*ir.Expr{}}
		for e, c := range k.Pro.Col {
			pro.Col[e] = c
		}
		br.f(pro, k.B)
		nk.Pro = pro
		if err := nk.Verify(); err == nil || !strings.Contains(err.Error(), br.want) {
			t.Errorf("%s: Verify says %v, want %q", br.name, err, br.want)
		}
	}
}
