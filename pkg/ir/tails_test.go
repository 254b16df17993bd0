package ir_test

import (
	"fmt"
	"testing"

	"tgc/pkg/fuse"
	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// TestSplitTails: split_tails splits a reduce along a row that 2W lanes
// do not divide into a prefix they do and the rest (softmax rows 1001
// wide: 992 + 9 at 16 or 8 lanes, 50257: 50240 + 17 at 16), so that the
// heuristic unrolls the prefix; not a product's sum (its vectors follow
// the output's columns), a row whose width W divides, one shorter than
// 4W, nor on a grid target.
func TestSplitTails(t *testing.T) {
	gpu := ir.Target{GPU: &ir.GPU{}}
	for _, c := range []struct {
		name   string
		out    *tensor.Tensor
		rows   bool // a row kernel (reduces hoisted)
		target ir.Target
		want   string // the reduces' loops after the pass
	}{
		{"softmax rows 1001 wide", input(8, 1001).Softmax(-1), true, zen5(16), "[992 9 992 9]"},
		{"softmax rows 1001 wide at 8 lanes", input(8, 1001).Softmax(-1), true, zen5(8), "[992 9 992 9]"},
		{"softmax rows 50257 wide", input(80, 50257).Softmax(-1), true, zen5(16), "[50240 17 50240 17]"},
		{"sum of rows 1001 wide", input(8, 1001).Sum(false, 1), false, zen5(16), "[992 9]"},
		{"dot products along rows 1001 long", input(8, 1001).Dot(input(16, 1001).T()), false, zen5(16), "[992 9]"},
		{"a product's sum 1001 long", input(8, 1001).Dot(input(1001, 64)), false, zen5(16), "[1001]"},
		{"softmax rows 1024 wide", input(8, 1024).Softmax(-1), true, zen5(16), "[1024 1024]"},
		{"softmax rows 40 wide", input(8, 40).Softmax(-1), true, zen5(16), "[40 40]"},
		{"softmax rows 1001 wide on a grid", input(8, 1001).Softmax(-1), true, gpu, "[1001 1001]"},
	} {
		s, err := fuse.Create([]*tensor.Node{c.out.Node()}, fuse.Options{HoistReduces: c.rows})
		if err != nil {
			t.Fatal(err)
		}
		k := s.Items[0].Kernel
		for _, it := range s.Items {
			if it.Kernel.Kind() == "r" {
				k = it.Kernel
			}
		}
		var after *ir.Kernel
		if _, err := ir.OptimizeFor(k, c.target, func(pass string, k *ir.Kernel) {
			if pass == "reverse_reduces" || pass == "split_tails" {
				after = k
			}
		}); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var sizes []int64
		seen := map[*ir.Axis]bool{}
		for _, a := range after.ReduceAxes() {
			if !seen[a] {
				seen[a] = true
				sizes = append(sizes, a.Size)
			}
		}
		if got := fmt.Sprint(sizes); got != c.want {
			t.Errorf("%s: reduce loops %s, want %s", c.name, got, c.want)
		}
	}
}
