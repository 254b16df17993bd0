package ir_test

import (
	"testing"

	"tgc/pkg/fuse"
	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// TestMergeOuter: a conv over a batch of 8 images splits across cores a
// loop of at least 64 iterations (the batch merged with the next loop),
// keeps its columns' loop (the padding's guards are tested before it), and
// keeps its skip plan; a KBLOCK kernel and a row kernel keep their loops.
func TestMergeOuter(t *testing.T) {
	for _, tg := range keepTargets {
		k := convKernel(t, input(8, 8, 10, 16).Conv2d(input(16, 8, 3, 3), nil, tensor.ConvOpts{Padding: []int{1}}), tg)
		if k.Global[0].Size < 64 || len(k.Global) < 2 {
			t.Errorf("width %d: loops %v, want an outer one of at least 64 iterations and the columns' own:\n%s", tg.VecWidth, sizes(k), k.Dump())
		}
		if k.Skip == nil && k.Rows == nil {
			t.Errorf("width %d: the merged conv lost its padding plans:\n%s", tg.VecWidth, k.Dump())
		}
		// a batched matmul (no guards): its loops, fewer than 64
		// iterations in all, become one
		m := convKernel(t, input(4, 8, 32).Dot(input(4, 32, 64)), tg)
		if len(m.Global) != 1 {
			t.Errorf("width %d: matmul loops %v, want one", tg.VecWidth, sizes(m))
		}
	}
	// KBLOCK: the block loop right inside the core split stays a loop of its own
	s, err := fuse.Create([]*tensor.Node{input(8, 256).Dot(input(256, 64)).Node()}, fuse.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tg := ir.Target{Upcast: true, VecWidth: 16, VecRegs: 32}
	tg.Choose = func(k *ir.Kernel) []ir.Opt {
		return []ir.Opt{{Kind: ir.OptUpcast, Axis: 1, Amt: 16}, {Kind: ir.OptKBlock, Axis: 0, Amt: 64}}
	}
	k, err := ir.OptimizeFor(s.Items[0].Kernel, tg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(k.Global) < 2 || k.Global[0].Size >= 64 {
		t.Errorf("KBLOCK kernel's loops %v merged:\n%s", sizes(k), k.Dump())
	}
}

func sizes(k *ir.Kernel) []int64 {
	var s []int64
	for _, a := range k.Global {
		s = append(s, a.Size)
	}
	return s
}
