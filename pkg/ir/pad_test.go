package ir_test

import (
	"strings"
	"testing"

	"tgc/pkg/fuse"
	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// TestPadHeuristic: the heuristic pads (PADTO) an output axis that no
// vector width divides where that blocks it in whole vectors, or lets it
// block more lanes (the rows of x @ w.T with GPT-2's 50257 classes); not
// an axis it already blocks in whole vectors or whole, nor a kernel
// without such an axis, nor an assign into its own memory.
func TestPadHeuristic(t *testing.T) {
	w := input(1001)
	assign := w.Assign(w.Mul(tc.Const(0.5, ir.Float32)))
	for _, c := range []struct {
		name   string
		out    *tensor.Tensor
		target ir.Target
		padded string // the PADTOs of the heuristic's list
	}{
		{"product 1001 wide", input(64, 96).Dot(input(96, 1001)), zen5(16), "PADTO(1,16)"},
		{"product 1001 wide at 8 lanes", input(64, 96).Dot(input(96, 1001)), zen5(8), "PADTO(1,8)"},
		{"product 1000 wide (8 lanes of 16)", input(64, 96).Dot(input(96, 1000)), zen5(16), "PADTO(1,16)"},
		{"product 1000 wide, half vectors free", input(64, 96).Dot(input(96, 1000)), zen4(16), ""},
		{"matrix-vector 50257 wide", input(1, 768).Dot(input(768, 50257)), zen5(16), "PADTO(0,16)"},
		{"50257 rows of x @ w.T", input(128, 768).Dot(input(50257, 768).T()), zen5(16), "PADTO(0,8)"},
		{"50257 rows of x @ w.T at 8 lanes", input(128, 768).Dot(input(50257, 768).T()), zen5(8), "PADTO(0,8)"},
		{"both axes of a product 1001 square", input(1001, 1001).Dot(input(1001, 1001)), zen5(16), "PADTO(0,8) PADTO(1,16)"},
		{"product 1024 wide", input(64, 96).Dot(input(96, 1024)), zen5(16), ""},
		{"assign 1001 long", assign, zen5(16), ""},
		// AlexNet's 13x13 convs, their weights with the output channels
		// last (as the CPU stores them for rows this short): no block of
		// 2 to 8 divides the rows
		{"conv rows of 13", conv3x3(1, 256, 256, 13), zen5(16), "PADTO(1,4)"},
		{"conv rows of 13, batch 8", conv3x3(8, 96, 64, 13), zen5(16), "PADTO(2,4)"},
		// 25 vectors wide: two vectors by 8 rows over 26, not one by 16
		{"product 400 wide", input(256, 512).Dot(input(512, 400)), zen5(16), "PADTO(1,32)"},
		{"conv columns of 112", input(1, 64, 112, 112).Conv2d(input(128, 64, 3, 3), nil, tensor.ConvOpts{Padding: []int{1}}), zen5(16), "PADTO(2,32)"},
		{"product 400 wide at 8 lanes (two vectors divide it)", input(256, 512).Dot(input(512, 400)), zen5(8), ""},
		// 5 vectors of a product: blocked whole by 2 rows instead
		{"product 80 wide", input(256, 512).Dot(input(512, 80)), zen5(16), ""},
		// 26 = 2 x 13: to 28 (blocks of 7), not blocks of 2
		{"conv rows of 26", conv3x3(1, 64, 64, 26), zen5(16), "PADTO(1,4)"},
		// 27 = 3 x 9: blocks of 3 rows, nothing padded
		{"conv rows of 27", conv3x3(1, 64, 64, 27), zen5(16), ""},
	} {
		k := lastKernel(t, c.out)
		s, err := fuse.Create([]*tensor.Node{c.out.Node()}, fuse.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range s.Items { // the product, not the copy after it
			if it.Kernel.Kind() == "r" {
				k = it.Kernel
			}
		}
		got := heuristicOpts(t, k, c.target)
		var pads []string
		for _, f := range strings.Fields(strings.Trim(got, "[]")) {
			if strings.HasPrefix(f, "PADTO") {
				pads = append(pads, f)
			}
		}
		if p := strings.Join(pads, " "); p != c.padded {
			t.Errorf("%s: heuristic %s, want its PADTOs to be %q", c.name, got, c.padded)
		}
	}
}

// TestOddBlocks: an axis whose register block reuses the vector loads (a
// matmul's rows, a conv's output rows) is blocked by 3, 5 or 7 where no
// even block divides it, not left at one row; a contiguous axis of 3
// vectors (up to 9) that 2 do not divide is blocked in 3 by 4 rows, not in
// one vector by 16, and a product's of 5 or 7 vectors in 5 or 7 by 2.
func TestOddBlocks(t *testing.T) {
	for _, c := range []struct {
		name   string
		out    *tensor.Tensor
		target ir.Target
		block  string
	}{
		{"conv rows of 27", conv3x3(1, 64, 64, 27), zen5(16), "UPCAST(1,3)"},
		{"conv rows of 27, batch 8", conv3x3(8, 64, 64, 27), zen5(16), "UPCAST(2,3)"},
		{"product of 15 rows", input(15, 256).Dot(input(256, 512)), zen5(16), "UPCAST(0,5)"},
		{"product of 14 rows", input(14, 256).Dot(input(256, 512)), zen5(16), "UPCAST(0,7)"},
		{"product of 12 rows", input(12, 256).Dot(input(256, 512)), zen5(16), "UPCAST(0,6)"},
		// the rows whole where no smaller block divides them (not the
		// outermost axis, which the cores split): a 5x5 or 7x7 image
		{"conv rows of 5", conv3x3(4, 256, 256, 5), zen5(16), "UPCAST(2,5)"},
		{"conv rows of 7", conv3x3(1, 512, 512, 7), zen5(16), "UPCAST(1,7)"},
		{"conv rows of 7, 8 lanes", conv3x3(1, 512, 512, 7), zen5(8), "UPCAST(1,7)"},
		{"conv columns of 48", input(1, 64, 48, 48).Conv2d(input(64, 64, 3, 3), nil, tensor.ConvOpts{Padding: []int{1}}), zen5(16), "UPCAST(2,48) UPCAST(0,4)"},
		{"conv columns of 144", input(1, 32, 144, 144).Conv2d(input(64, 32, 3, 3), nil, tensor.ConvOpts{Padding: []int{1}}), zen5(16), "UPCAST(2,48) UPCAST(0,4)"},
		{"conv columns of 24, 8 lanes", input(1, 32, 24, 24).Conv2d(input(64, 32, 3, 3), nil, tensor.ConvOpts{Padding: []int{1}}), zen5(8), "UPCAST(2,24) UPCAST(0,4)"},
		{"product 48 wide", input(4096, 512).Dot(input(512, 48)), zen5(16), "UPCAST(1,48) UPCAST(0,4)"},
		{"product 80 wide", input(4096, 512).Dot(input(512, 80)), zen5(16), "UPCAST(1,80) UPCAST(0,2)"},
		{"product 112 wide", input(512, 256).Dot(input(256, 112)), zen5(16), "UPCAST(1,112) UPCAST(0,2)"},
		// a conv's columns: 5 vectors by 2 channels was no faster; padded
		// to two vectors by 8 channels (padCandidates)
		{"conv columns of 80", input(1, 64, 80, 80).Conv2d(input(64, 64, 3, 3), nil, tensor.ConvOpts{Padding: []int{1}}), zen5(16), "PADTO(2,32) UPCAST(2,32) UPCAST(0,8)"},
		// not past 9 vectors (rows of the right operand 4 KB apart, read
		// again for every 4 rows): padded to two vectors by 8 instead
		{"product 1200 wide", input(256, 512).Dot(input(512, 1200)), zen5(16), "PADTO(1,32) UPCAST(1,32) UPCAST(0,8)"},
	} {
		got := heuristicOpts(t, lastKernel(t, c.out), c.target)
		if !strings.Contains(got, c.block) {
			t.Errorf("%s: heuristic %s, want %s in it", c.name, got, c.block)
		}
	}
}

// conv3x3 is a padded 3x3 conv of a batch x cin x hw x hw input to cout
// channels, its weight stored with the output channels last.
func conv3x3(batch, cin, cout, hw int) *tensor.Tensor {
	w := input(cin, 3, 3, cout).Permute(3, 0, 1, 2)
	return input(batch, cin, hw, hw).Conv2d(w, nil, tensor.ConvOpts{Padding: []int{1}})
}

// TestPadAxis: a padded axis's last block overlaps the one before it, so
// every index stays within its buffer (Verify proves it from the bounds);
// PADTO comes first, is refused where an element stored twice could
// differ (an assign into its own memory, a kernel reading its output,
// KBLOCK adding into it), where it pads nothing, or where one block is
// longer than the axis; a padded kernel never writes over its input, and
// gets no keep plan (the plan does not match the overlapping index; if it
// ever did, its column loop would rescale kept values twice).
func TestPadAxis(t *testing.T) {
	mm := lastKernel(t, input(12, 20).Dot(input(20, 37)))
	prepared := func(k *ir.Kernel, target ir.Target) *ir.Kernel {
		var pre *ir.Kernel
		tg := target
		tg.Choose = func(k *ir.Kernel) []ir.Opt { pre = k; return nil }
		if _, err := ir.OptimizeFor(k, tg, nil); err != nil {
			t.Fatal(err)
		}
		return pre
	}
	k := prepared(mm, zen5(16))
	col := len(k.Global) - 1
	p, err := ir.PadAxis(k, col, 16)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Verify(); err != nil {
		t.Fatalf("padded kernel: %v", err)
	}
	if got := p.Global[col].Size; got != 48 {
		t.Errorf("padded axis of %d, want 48", got)
	}
	if _, err := zen5(16).ApplyOpts(k, []ir.Opt{{Kind: ir.OptPad, Axis: col, Amt: 16}, {Kind: ir.OptUpcast, Axis: col, Amt: 16}}); err != nil {
		t.Errorf("PADTO then UPCAST by 16: %v", err)
	}
	for _, c := range []struct {
		name string
		opts []ir.Opt
		want string
	}{
		{"after an upcast", []ir.Opt{{Kind: ir.OptUpcast, Axis: 0, Amt: 2}, {Kind: ir.OptPad, Axis: col, Amt: 16}}, "comes before"},
		{"with KBLOCK", []ir.Opt{{Kind: ir.OptPad, Axis: col, Amt: 16}, {Kind: ir.OptKBlock, Axis: 0, Amt: 4}}, "KBLOCK"},
		{"a divided axis", []ir.Opt{{Kind: ir.OptPad, Axis: 0, Amt: 4}}, "already divides"},
		{"a block past the axis", []ir.Opt{{Kind: ir.OptPad, Axis: col, Amt: 64}}, "less than one block"},
		// its lanes would store the same elements at the same indices
		{"all of it upcast", []ir.Opt{{Kind: ir.OptPad, Axis: col, Amt: 16}, {Kind: ir.OptUpcast, Axis: col, Amt: 48}}, "all of a padded axis"},
	} {
		if _, err := zen5(16).ApplyOpts(k, c.opts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %s: error %v, want one saying %q", c.name, ir.FormatOpts(c.opts), err, c.want)
		}
	}
	w := input(1001)
	in := prepared(lastKernel(t, w.Assign(w.Mul(tc.Const(0.5, ir.Float32)))), zen5(16))
	if _, err := ir.PadAxis(in, 0, 16); err == nil || !strings.Contains(err.Error(), "assign") {
		t.Errorf("an assign's kernel: error %v, want a refusal", err)
	}
	// a row kernel: padded, no keep plan, and never over its input
	s, err := fuse.Create([]*tensor.Node{input(8, 37).Softmax(-1).Node()}, fuse.Options{HoistReduces: true})
	if err != nil {
		t.Fatal(err)
	}
	rows := prepared(s.Items[0].Kernel, zen5(16))
	plain, err := zen5(16).Apply(rows, nil)
	if err != nil {
		t.Fatal(err)
	}
	if plain.Keep == nil {
		t.Fatalf("the unpadded softmax has no keep plan: the refusal below proves nothing")
	}
	padded, err := zen5(16).Apply(rows, []ir.Opt{{Kind: ir.OptPad, Axis: len(rows.Global) - 1, Amt: 16}})
	if err != nil {
		t.Fatal(err)
	}
	if padded.Keep != nil {
		t.Errorf("a padded softmax has a keep plan")
	}
	if why := ir.OverwriteRefusal(padded, 1); !strings.Contains(why, "padded") {
		t.Errorf("a padded softmax may write over its input (refusal %q)", why)
	}
}
