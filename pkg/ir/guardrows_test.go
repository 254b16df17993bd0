package ir_test

import (
	"strings"
	"testing"

	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// windowsConv is a 3x3 convolution as the ONNX frontend makes it on the
// CPU: the windows of a channels-last input (12x12x16 at stride 1, 24x24x16
// at stride 2: 12 output pixels a row; padded by pad) as the rows of a
// product with the (kh, kw, Cin) x Cout weight, so the register lanes (8
// pixels) are output pixels of different image rows.
func windowsConv(stride, pad int) *tensor.Tensor {
	h := 12 * stride
	x := input(2, h, h, 16).Pad([][2]int{{0, 0}, {pad, pad}, {pad, pad}, {0, 0}}, 0)
	win, _ := x.Permute(0, 3, 1, 2).PoolWindows(tensor.PoolOpts{Kernel: []int{3, 3}, Stride: []int{stride, stride}}, 0)
	p := (h+2*pad-3)/stride + 1
	return win.Permute(0, 2, 3, 4, 5, 1).Reshape(2, p*p, 144).Dot(input(144, 32))
}

// TestRowPlans: a forward conv over a stored padding (ResNet's 3x3 convs,
// stride 1 and 2, channels last as the ONNX frontend stores them) reads
// its guarded input through row pointers along the innermost reduce loop,
// with the guard free of that loop; a conv without padding plans nothing,
// nor does one whose guards the skip plan tests (lanes along one row).
func TestRowPlans(t *testing.T) {
	for _, tg := range keepTargets {
		for _, stride := range []int{1, 2} {
			k := convKernel(t, windowsConv(stride, 1), tg)
			if k.Rows == nil || len(k.Rows.Loads) == 0 {
				t.Fatalf("width %d stride %d: no row plan for the padded conv:\n%s", tg.VecWidth, stride, k.Dump())
			}
			if !strings.Contains(k.Dump(), "row ridx") {
				t.Errorf("width %d stride %d: the dump does not show the plan:\n%s", tg.VecWidth, stride, k.Dump())
			}
			for _, rl := range k.Rows.Loads {
				if ir.LastAxis(rl.Load.Src[1], []*ir.Axis{rl.Axis}) >= 0 {
					t.Errorf("width %d stride %d: the guard %s reads the row's loop %s", tg.VecWidth, stride, rl.Load.Src[1], rl.Axis.Name())
				}
				if rl.Off.Min < 0 || rl.Off.Max >= k.Rows.Zeros {
					t.Errorf("width %d stride %d: offset [%d..%d] outside %d zeros", tg.VecWidth, stride, rl.Off.Min, rl.Off.Max, k.Rows.Zeros)
				}
			}
		}
		if k := convKernel(t, windowsConv(1, 0), tg); k.Rows != nil {
			t.Errorf("width %d: the unpadded conv reads rows:\n%s", tg.VecWidth, k.Dump())
		}
		k := convKernel(t, input(2, 16, 8, 8).Conv2d(input(32, 16, 3, 3), nil, tensor.ConvOpts{Padding: []int{1}}), tg)
		if k.Skip == nil || k.Rows != nil {
			t.Errorf("width %d: the NCHW conv (lanes along a row) should skip, not read rows:\n%s", tg.VecWidth, k.Dump())
		}
	}
}

// TestVerifyCatchesBrokenRows damages a row plan and checks that Verify
// refuses each damage and names it.
func TestVerifyCatchesBrokenRows(t *testing.T) {
	good := convKernel(t, windowsConv(1, 1), keepTargets[1])
	if good.Rows == nil {
		t.Fatalf("no row plan to damage:\n%s", good.Dump())
	}
	if err := good.Verify(); err != nil {
		t.Fatalf("the plan as made: %v", err)
	}
	rl := good.Rows.Loads[0]
	b := good.B
	var outer *ir.Axis // a reduce loop that is no group's innermost
	for _, a := range good.ReduceAxes() {
		if a != rl.Axis {
			outer = a
		}
	}
	if outer == nil {
		t.Fatalf("one reduce loop:\n%s", good.Dump())
	}
	damage := map[string]struct {
		want string
		rl   ir.RowLoad
	}{
		"row moved by one":         {"is not the index", ir.RowLoad{Load: rl.Load, Axis: rl.Axis, Base: b.Add(rl.Base, b.Int(1)), Off: rl.Off}},
		"row along the loop":       {"changes along", ir.RowLoad{Load: rl.Load, Axis: rl.Axis, Base: b.Add(rl.Base, b.Var(rl.Axis)), Off: rl.Off}},
		"not the innermost loop":   {"innermost loop", ir.RowLoad{Load: rl.Load, Axis: outer, Base: rl.Base, Off: rl.Off}},
		"an offset past the zeros": {"row of", ir.RowLoad{Load: rl.Load, Axis: rl.Axis, Base: rl.Base, Off: b.Mul(rl.Off, b.Int(1000))}},
		"a load not in the kernel": {"not a guarded float32 load", ir.RowLoad{Load: b.Load(0, ir.Float32, b.Var(rl.Axis), b.Lt(b.Var(outer), b.Int(1))), Axis: rl.Axis, Base: rl.Base, Off: rl.Off}},
		"a negative offset":        {"row of", ir.RowLoad{Load: rl.Load, Axis: rl.Axis, Base: rl.Base, Off: b.Sub(b.Int(0), rl.Off)}},
		"an offset read elsewhere": {"row of", ir.RowLoad{Load: rl.Load, Axis: rl.Axis, Base: rl.Base, Off: b.Add(rl.Off, b.Var(outer))}},
	}
	for name, d := range damage {
		bad := *good
		bad.Rows = &ir.Rows{Loads: []ir.RowLoad{d.rl}, Zeros: good.Rows.Zeros}
		err := bad.Verify()
		if err == nil || !strings.Contains(err.Error(), d.want) {
			t.Errorf("%s: Verify says %v, want an error with %q", name, err, d.want)
		}
	}
}
