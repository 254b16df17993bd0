package ir_test

import (
	"strings"
	"testing"

	"tgc/pkg/fuse"
	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// convKernel is the last kernel of x's schedule (the convolution), after
// the passes for tg.
func convKernel(t *testing.T, x *tensor.Tensor, tg ir.Target) *ir.Kernel {
	t.Helper()
	s, err := fuse.Create([]*tensor.Node{x.Node()}, fuse.Options{})
	if err != nil {
		t.Fatal(err)
	}
	k, err := ir.OptimizeFor(s.Items[len(s.Items)-1].Kernel, tg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestSkipPlans: a conv over a stored padding (a conv input gradient's
// shape: 5x5 windows over a gradient padded by 4) skips the border rows'
// zero taps at both vector widths, tested on the rows (a reduce loop and
// the output row), never on the vector lanes' columns; a conv without
// padding and a max over a padded input skip nothing.
func TestSkipPlans(t *testing.T) {
	for _, tg := range keepTargets {
		k := convKernel(t, input(2, 8, 6, 12).Conv2d(input(4, 8, 5, 5), nil, tensor.ConvOpts{Padding: []int{4}}), tg)
		if k.Skip == nil || len(k.Skip.Conds) != 1 {
			t.Fatalf("width %d: no skip plan for the padded conv:\n%s", tg.VecWidth, k.Dump())
		}
		if !strings.Contains(k.Dump(), "skip ridx") {
			t.Errorf("width %d: the dump does not show the plan:\n%s", tg.VecWidth, k.Dump())
		}
		last := k.Global[len(k.Global)-1]
		for _, conds := range k.Skip.Conds {
			if len(conds) != 2 {
				t.Errorf("width %d: %d skip conditions, want the rows' two bounds", tg.VecWidth, len(conds))
			}
			for _, c := range conds {
				if ir.LastAxis(c, []*ir.Axis{last}) >= 0 {
					t.Errorf("width %d: skip condition %s reads the columns' loop", tg.VecWidth, c)
				}
			}
		}
		for name, x := range map[string]*tensor.Tensor{
			"unpadded conv": input(2, 8, 6, 12).Conv2d(input(4, 8, 5, 5), nil, tensor.ConvOpts{}),
			"padded max":    input(2, 8, 6, 12).MaxPool2d(tensor.PoolOpts{Kernel: []int{3, 3}, Stride: []int{1, 1}, Padding: []int{1}}),
		} {
			if k := convKernel(t, x, tg); k.Skip != nil {
				t.Errorf("width %d: %s skips iterations:\n%s", tg.VecWidth, name, k.Dump())
			}
		}
	}
}

// TestVerifyCatchesBrokenSkip damages a skip plan and checks that Verify
// refuses each damage and names it.
func TestVerifyCatchesBrokenSkip(t *testing.T) {
	good := convKernel(t, input(2, 8, 6, 12).Conv2d(input(4, 8, 5, 5), nil, tensor.ConvOpts{Padding: []int{4}}), keepTargets[1])
	if good.Skip == nil {
		t.Fatalf("no skip plan to damage:\n%s", good.Dump())
	}
	if err := good.Verify(); err != nil {
		t.Fatalf("the plan as made: %v", err)
	}
	var key *ir.Axis
	var conds []*ir.Expr
	for a, c := range good.Skip.Conds {
		key, conds = a, c
	}
	b := good.B
	var other *ir.Axis // a loop that is no group's first
	for _, a := range good.ReduceAxes() {
		if a != key {
			other = a
		}
	}
	cases := []struct {
		name, want string
		plan       map[*ir.Axis][]*ir.Expr
	}{
		{"a condition no load is guarded by", "does not add zero there", map[*ir.Axis][]*ir.Expr{
			key: {conds[0], b.Lt(b.Var(key), b.Int(2))}}},
		{"the conditions' negation", "does not add zero there", map[*ir.Axis][]*ir.Expr{
			key: {b.Alu(ir.OpNot, conds[0])}}},
		{"no such group", "no reduce group", map[*ir.Axis][]*ir.Expr{other: conds}},
	}
	for _, c := range cases {
		bad := *good
		bad.Skip = &ir.Skip{Conds: c.plan}
		err := bad.Verify()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Verify says %v, want an error with %q", c.name, err, c.want)
		}
	}
}
