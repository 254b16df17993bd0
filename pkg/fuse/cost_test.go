package fuse

import (
	"testing"

	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// TestOneHotSum: the one-hot sums the cost model reads as gathers (their
// table arm is not recomputed per lookup) are the ones ir's gather rule
// rewrites: an index that does not change along the sum compared with
// position math that changes along the summed axis alone.
func TestOneHotSum(t *testing.T) {
	const vocab, dim, n = 16, 4, 3
	table := input(vocab, dim).Cast(ir.Float32).Mul(input(vocab, 1).Exp())
	ids := func(shape ...int) *tensor.Tensor {
		s := 1
		for _, d := range shape {
			s *= d
		}
		x, _ := tc.FromFloats(ir.Int32, shape, make([]float64, s))
		return x
	}
	arange := tc.Arange(0, vocab, 1, ir.Int32).Reshape(vocab, 1)
	zero := tc.Const(0, ir.Float32)
	cases := []struct {
		name string
		sum  *tensor.Tensor
		want bool
	}{
		{"rows of a prompt", ids(1, n).Reshape(1, n, 1, 1).Eq(arange).Where(table, zero).Sum(false, -2), true},
		{"one row", ids(1, 1).Reshape(1, 1, 1, 1).Eq(arange).Where(table, zero).Sum(false, -2), true},
		{"arange on the left", arange.Eq(ids(1, n).Reshape(1, n, 1, 1)).Where(table, zero).Sum(false, -2), true},
		{"index changes along the sum", ids(n, vocab, 1).Eq(arange).Where(table, zero).Sum(false, -2), false},
		{"positions change along a kept axis", ids(n, 1, 1).Eq(arange.Add(tc.Arange(0, dim, 1, ir.Int32).Reshape(1, dim))).Where(table, zero).Sum(false, -2), false},
		{"summed along another axis", ids(1, n).Reshape(1, n, 1, 1).Eq(arange).Where(table, zero).Sum(false, -1), false},
		{"other arm not zero", ids(1, n).Reshape(1, n, 1, 1).Eq(arange).Where(table, tc.Const(1, ir.Float32)).Sum(false, -2), false},
		{"a max, not a sum", ids(1, n).Reshape(1, n, 1, 1).Eq(arange).Where(table, zero).Max(false, -2), false},
		{"two index tensors", ids(1, n).Reshape(1, n, 1, 1).Eq(ids(vocab, 1)).Where(table, zero).Sum(false, -2), false},
	}
	for _, c := range cases {
		if c.sum.Err() != nil {
			t.Fatalf("%s: %v", c.name, c.sum.Err())
		}
		r := c.sum.Node()
		for r.Op.IsMovement() {
			r = r.Src[0]
		}
		if got := oneHotSum(r) != nil; got != c.want {
			t.Errorf("%s: one-hot sum %v, want %v", c.name, got, c.want)
		}
	}
}
