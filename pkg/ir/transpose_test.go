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

// TestTranspose2D: a plain transposed copy is tiled 16x16 (a vector of 16
// along the written axis, TILE along the other, the written axis's blocks
// outside it) where the input's rows are 2 KiB or more apart and at least
// 256 of them are read: a big matrix's transpose, a conv weight stored
// with its output channels last; not a prompt's 128-token transposes, nor
// rows 1 KiB apart, nor a copy that reads as it writes.
func TestTranspose2D(t *testing.T) {
	zen5 := ir.Target{Upcast: true, VecWidth: 16, VecRegs: 32, L1: 48 << 10}
	want := []ir.Opt{{Kind: ir.OptUpcast, Axis: 1, Amt: 16}, {Kind: ir.OptTile, Axis: 0, Amt: 16}, {Kind: ir.OptOuter, Axis: 1}}
	// the kernel as the opts see it: the weight's (Cin, kh, kw) merged
	prepared := func(x *tensor.Tensor, tg ir.Target) *ir.Kernel {
		var pre *ir.Kernel
		tg.Choose = func(k *ir.Kernel) []ir.Opt { pre = k; return nil }
		if _, err := ir.OptimizeFor(elementwiseKernel(t, x), tg, nil); err != nil {
			t.Fatal(err)
		}
		if pre == nil {
			t.Fatal("no kernel reached the opts")
		}
		return pre
	}
	for _, c := range []struct {
		name  string
		x     *tensor.Tensor
		tiled bool
	}{
		{"512x4608 transposed", input(512, 4608).Permute(1, 0).Mul(input(4608, 512)), true},
		{"4608x512 transposed", input(4608, 512).Permute(1, 0).Mul(input(512, 4608)), true},
		{"1024x256 transposed", input(256, 1024).Permute(1, 0).Mul(input(1024, 256)), true},
		{"a 3x3 conv weight, output channels last", input(512, 512, 3, 3).Permute(1, 2, 3, 0).Mul(input(512, 3, 3, 512)), true},
		{"rows 1 KiB apart", input(1024, 256).Permute(1, 0).Mul(input(256, 1024)), false},
		{"128 rows", input(128, 768).Permute(1, 0).Mul(input(768, 128)), false},
		{"a prompt's 128 tokens", input(768, 128).Permute(1, 0).Mul(input(128, 768)), false},
		{"not transposed", input(512, 4608).Mul(input(512, 4608)), false},
	} {
		for _, w := range []int{8, 16} {
			tg := zen5
			tg.VecWidth = w
			k := prepared(c.x, tg)
			got := tg.HeuristicOpts(k)
			if slices.Equal(got, want) != c.tiled {
				t.Errorf("%s at %d lanes: %s opts %s, want tiled %v", c.name, w, k.Name, ir.FormatOpts(got), c.tiled)
			}
		}
	}
}
