package ir_test

import (
	"slices"
	"testing"

	"tgc/pkg/fuse"
	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// elementwiseKernel is the one kernel of x's schedule, before the passes.
func elementwiseKernel(t *testing.T, x *tensor.Tensor) *ir.Kernel {
	t.Helper()
	s, err := fuse.Create([]*tensor.Node{x.Node()}, fuse.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Items) != 1 {
		t.Fatalf("%d kernels, want one", len(s.Items))
	}
	return s.Items[0].Kernel
}

// TestTransposeOpts: a kernel that reads an input along an outer axis and
// writes along the innermost (a prompt's RoPE over a feature-major
// projection) is tiled along the outer axis, the next axis outside the
// tile's loop, where the lines its inner loops read would not stay in the
// L1; not where they fit, nor a kernel that reads as it writes.
func TestTransposeOpts(t *testing.T) {
	rope := func(tokens int) *tensor.Tensor {
		q := input(768, tokens).Permute(1, 0).Reshape(tokens, 12, 64)
		return q.Mul(input(tokens, 1, 64))
	}
	// the model's form: pairs taken apart and stacked again (four axes,
	// the stack's last; the projection read along the tokens)
	rotate := func(tokens int) *tensor.Tensor {
		x := input(768, tokens).Permute(1, 0).Reshape(tokens, 12, 32, 2)
		x0 := x.Shrink([][2]int{{0, tokens}, {0, 12}, {0, 32}, {0, 1}}).Reshape(tokens, 12, 32)
		x1 := x.Shrink([][2]int{{0, tokens}, {0, 12}, {0, 32}, {1, 2}}).Reshape(tokens, 12, 32)
		cos, sin := input(tokens, 1, 32), input(tokens, 1, 32)
		return tensor.Stack(-1, x0.Mul(cos).Sub(x1.Mul(sin)), x0.Mul(sin).Add(x1.Mul(cos)))
	}
	tiled := func(opts []ir.Opt) bool {
		return slices.ContainsFunc(opts, func(o ir.Opt) bool { return o.Kind == ir.OptTile && o.Axis == 0 }) &&
			slices.Contains(opts, ir.Opt{Kind: ir.OptOuter, Axis: 1})
	}
	zen5 := ir.Target{Upcast: true, VecWidth: 16, VecRegs: 32, L1: 48 << 10}
	for _, c := range []struct {
		name string
		x    *tensor.Tensor
		tg   ir.Target
		want bool
	}{
		{"128 tokens", rope(128), zen5, true},
		{"128 tokens, L1 unknown", rope(128), ir.Target{Upcast: true, VecWidth: 8}, true},
		{"a 1 MiB L1", rope(128), ir.Target{Upcast: true, VecWidth: 16, L1: 1 << 20}, false},
		{"16 tokens", rope(16), zen5, false},
		{"pairs stacked", rotate(128), zen5, true},
		{"not transposed", input(128, 12, 64).Mul(input(128, 1, 64)), zen5, false},
	} {
		k := elementwiseKernel(t, c.x)
		opts := c.tg.HeuristicOpts(k)
		if tiled(opts) != c.want {
			t.Errorf("%s: %s opts %s, want tiled %v", c.name, k.Name, ir.FormatOpts(opts), c.want)
		}
	}
}
