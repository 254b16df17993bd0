package ir_test

import (
	"testing"

	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// TestOverwriteRefusals: which row kernels (the CPU's, after the pass
// table at both vector widths) may write over their input, and why the
// others may not. realize's TestOverwriteInputs runs such schedules and
// compares their numbers with float64 ones.
func TestOverwriteRefusals(t *testing.T) {
	cases := []struct {
		name string
		f    func(x *tensor.Tensor) *tensor.Tensor
		want string
	}{
		{"softmax (kept exponentials)", func(x *tensor.Tensor) *tensor.Tensor { return x.Softmax(-1) }, ""},
		{"centred rows", func(x *tensor.Tensor) *tensor.Tensor { return x.Sub(x.Mean(true, 1)) }, ""},
		{"exp", func(x *tensor.Tensor) *tensor.Tensor { return x.Exp() }, ""},
		{"plus its flip", func(x *tensor.Tensor) *tensor.Tensor { return x.Add(x.Flip(1)) },
			"a read in the innermost loop at another index than the store's"},
		{"minus the max of all", func(x *tensor.Tensor) *tensor.Tensor { return x.Sub(x.Max(true, 0, 1)) },
			"a read before the outermost loop"},
		{"minus the mirrored row's max", func(x *tensor.Tensor) *tensor.Tensor { return x.Sub(x.Flip(0).Max(true, 1)) },
			"a read outside the elements stored in its loop's iteration"},
		{"minus its column's max, by rows", func(x *tensor.Tensor) *tensor.Tensor { return x.Sub(x.T().Max(true, 1)) },
			"a read outside the elements stored in its loop's iteration"},
		{"softmax times the row's sum", func(x *tensor.Tensor) *tensor.Tensor { return x.Softmax(-1).Mul(x.Sum(true, 1)) },
			"a read that may run after the kept loop stored the row"},
	}
	for _, tg := range keepTargets {
		for _, tc := range cases {
			k := rowKernel(t, tc.f(input(64, 64)), tg)
			if got := ir.OverwriteRefusal(k, 1); got != tc.want {
				t.Errorf("width %d, %s: refusal %q, want %q\n%s", tg.VecWidth, tc.name, got, tc.want, k.Dump())
			}
		}
	}
}

// TestOverwriteLanes: an elementwise kernel that takes an exp2 is blocked
// in lanes of 16 (one store a lane) on an AVX-512 host with its output in
// cache; it may still write over its input, where each lane reads the
// element it stores, and not where a lane reads another's.
func TestOverwriteLanes(t *testing.T) {
	tg := ir.Target{Upcast: true, VecWidth: 16, VecRegs: 32, L3: 64 << 20, BufAlign: 4096}
	cases := []struct {
		name string
		f    func(x *tensor.Tensor) *tensor.Tensor
		want string
	}{
		{"sigmoid", func(x *tensor.Tensor) *tensor.Tensor { return x.Sigmoid() }, ""},
		{"exp of a shifted window plus the window", func(x *tensor.Tensor) *tensor.Tensor {
			return x.Shrink([][2]int{{0, 64}, {16, 64}}).Exp().Add(x.Shrink([][2]int{{0, 64}, {0, 48}}))
		}, "a read of the input at another index than its lane's store"},
	}
	for _, tc := range cases {
		k := rowKernel(t, tc.f(input(64, 64)), tg)
		if len(k.Stores) < 16 || k.SIMD == nil {
			t.Fatalf("%s: %d stores, not in vector lanes:\n%s", tc.name, len(k.Stores), k.Dump())
		}
		if got := ir.OverwriteRefusal(k, 1); got != tc.want {
			t.Errorf("%s: refusal %q, want %q\n%s", tc.name, got, tc.want, k.Dump())
		}
	}
}
