package ir_test

import (
	"testing"

	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// TestGPUGroupsRows: on a grid device a matrix-vector product whose
// weight rows lie along the reduce (a decode step's x·Wᵀ, the classifier's
// 32000 outputs) is grouped whatever its output count, about 8 elements
// per lane; weights read across the outputs (x·W, coalesced by the grid
// already) take 4-lane vector accesses instead, a short reduce (64) stays
// one thread per output, and few outputs over a long reduce keep the
// 256-lane rule, as does a reduce over symbolic positions (a decode step's
// attention); one output of a 768-long reduce (a norm) is grouped too,
// symbolic outputs are not.
func TestGPUGroupsRows(t *testing.T) {
	tg := ir.Target{GPU: &ir.GPU{MaxWorkGroup: 256, MaxLocal: [3]int64{256, 256, 64}, LocalMem: 48 << 10, Vec4: true}}
	for _, c := range []struct {
		name   string
		x      *tensor.Tensor
		group  int64
		vector bool
	}{
		{"x·Wᵀ 2304x768", input(1, 768).Dot(input(2304, 768).Permute(1, 0)), 64, false},
		{"classifier 32000x768", input(1, 768).Dot(input(32000, 768).Permute(1, 0)), 64, false},
		{"x·Wᵀ 768x2048", input(1, 2048).Dot(input(768, 2048).Permute(1, 0)), 256, false},
		{"x·W", input(1, 768).Dot(input(768, 2304)), 0, true},
		{"short rows", input(1, 64).Dot(input(512, 64).Permute(1, 0)), 0, false},
		{"few outputs, long reduce", input(4, 4096).Sum(false, 1), 256, false},
		{"one output (a norm's sum of squares)", input(1, 768).Square().Sum(false, 1), 64, false},
		{"over symbolic positions", attended(t, 512).Sum(false, 0), 256, false},
		{"symbolic outputs", attended(t, 512).Sum(false, 1), 0, false},
	} {
		k := convKernel(t, c.x, tg)
		if k.Group != c.group || (k.Vec4 != nil) != c.vector {
			t.Errorf("%s: group %d, vector %v; want group %d, vector %v\n%s", c.name, k.Group, k.Vec4 != nil, c.group, c.vector, k.Dump())
		}
	}
}

// attended is a cache of 1024 positions shrunk to the first start_pos+1
// (start_pos bound to 5): a decode step's attended rows, of width w.
func attended(t *testing.T, w int) *tensor.Tensor {
	v, err := tensor.NewVariable("start_pos", 0, 1023)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := v.Bind(5)
	if err != nil {
		t.Fatal(err)
	}
	return input(1024, w).ShrinkDims([][2]tensor.SInt{{tensor.Int(0), sp.Add(1)}, {tensor.Int(0), tensor.Int(w)}})
}
