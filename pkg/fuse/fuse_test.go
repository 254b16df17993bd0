package fuse

import (
	"testing"

	"tgc/pkg/autograd"
	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

func input(shape ...int) *tensor.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	t, err := tc.FromFloats(ir.Float32, shape, make([]float64, n))
	if err != nil {
		panic(err)
	}
	return t
}

func relu(x *tensor.Tensor) *tensor.Tensor { return x.Maximum(tc.Const(0, x.DType())) }

func matmul(a, b *tensor.Tensor) *tensor.Tensor {
	m, k, n := a.Shape()[0], a.Shape()[1], b.Shape()[1]
	return a.Reshape(m, k, 1).Mul(b.Reshape(1, k, n)).Sum(false, 1)
}

func softmax(x *tensor.Tensor) *tensor.Tensor {
	e := x.Sub(x.Max(true, 1)).Exp2()
	return e.Div(e.Sum(true, 1))
}

// TestKernelCounts pins the fusion rule.
func TestKernelCounts(t *testing.T) {
	a, b, c := input(16, 16), input(16, 16), input(16, 16)
	v := input(16)
	cases := []struct {
		name string
		out  *tensor.Tensor
		want int
	}{
		{"elementwise chain", relu(a.Mul(b).Add(c)), 1},
		{"((a*b)+c).relu().sum()", relu(a.Mul(b).Add(c)).Sum(false), 1},
		{"(a*b).sum().relu()", relu(a.Mul(b).Sum(false)), 1},
		{"a.dot(b).relu()", relu(matmul(a, b)), 1},
		{"a.dot(b) + bias", matmul(a, b).Add(v), 1},
		{"softmax", softmax(a), 3},
		{"x - x.mean()", a.Sub(a.Sum(true, 0, 1).Mul(tc.Const(1.0/256, ir.Float32))), 2},
		{"sum of a sum", a.Sum(false, 1).Sum(false, 0), 2},
		// Two uses in one kernel at the same index are one expression.
		{"reduce used twice in one kernel", a.Sum(false, 1).Add(a.Sum(false, 1).Exp2()), 1},
		{"relu of a keepdim=false sum", a.Sum(false, 1).Maximum(tc.Const(0, ir.Float32)).Add(a.Sum(false, 1)), 1},
		{"movement only", a.Permute(1, 0).Reshape(256).Flip(0), 1},
		{"padded elementwise", a.Pad([][2]int{{1, 1}, {2, 2}}, 0).Exp2(), 1},
		{"broadcast elementwise", a.Add(v).Mul(v.Reshape(16, 1)), 1},
		{"contiguous splits", a.Mul(b).Contiguous().Add(c), 2},
		{"rand", tc.Rand(16, 16).Add(a), 1},
		// conv2d: one kernel; with padding the padded input is stored first
		// so the conv's loads need no bounds tests.
		{"conv2d+relu", input(2, 3, 8, 8).Conv2d(input(4, 3, 3, 3), nil, tensor.ConvOpts{}).Relu(), 1},
		{"padded conv2d+relu", input(2, 3, 8, 8).Conv2d(input(4, 3, 3, 3), nil, tensor.ConvOpts{Padding: []int{1}}).Relu(), 2},
		// Elementwise inputs a reduce broadcasts (both matmul operands are
		// expanded) are stored first unless they cost at most a load.
		{"rand dot rand (the demo: rands stored, matmul one kernel)", tc.Rand(16, 16).Dot(tc.Rand(16, 16)), 3},
		{"a.dot(b*2): one op is recomputed", a.Dot(b.Mul(tc.Const(2, ir.Float32))), 1},
		{"relu(a).dot(b): one op", relu(a).Dot(b), 1},
		{"a.relu().dot(b): one select", a.Relu().Dot(b), 1},
		{"a.dot(b.cast(f16).cast(f32)): casts are free", a.Dot(b.Cast(ir.Float16).Cast(ir.Float32)), 1},
		{"(a*b+c).dot(b): two ops are stored", a.Mul(b).Add(c).Dot(b), 2},
		{"a.dot(b.exp2())", a.Dot(b.Exp2()), 2},
		{"broadcast exp inside a sum", v.Exp2().Reshape(1, 16).Mul(a).Sum(false, 1), 2},
		// Broadcast only along the axis the sum reduces: one value per
		// row, computed once before the row's loop.
		{"exp broadcast along the reduced axis", v.Exp2().Reshape(16, 1).Mul(a).Sum(false, 1), 1},
		{"rand inside a sum, not broadcast", tc.Rand(16, 16).Sum(false, 1), 1},
		{"exp inside a sum, not broadcast", a.Exp2().Mul(b).Sum(false, 1), 1},
		{"expand outside the reduce", tc.Rand(16).Reshape(16, 1).Add(a.Sum(true, 1)), 1},
		// A reduce of many elements into one output is split in two stages.
		{"huge sum splits", input(1 << 16).Sum(false), 2},
		{"huge row sums do not", input(256, 1<<12).Sum(false, 1), 1},
	}
	for _, tc := range cases {
		if err := tc.out.Err(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		s, err := Create([]*tensor.Node{tc.out.Node()}, Options{})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if len(s.Items) != tc.want {
			t.Errorf("%s: %d kernels, want %d:\n%s", tc.name, len(s.Items), tc.want, s.Dump())
		}
	}
}

// TestNoFusion: with fusion off, every computed node is its own kernel.
func TestNoFusion(t *testing.T) {
	a, b := input(8, 8), input(8, 8)
	out := relu(a.Mul(b).Add(a))
	s, err := Create([]*tensor.Node{out.Node()}, Options{NoFusion: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Items) != 3 {
		t.Errorf("unfused (a*b+a).relu(): %d kernels, want 3:\n%s", len(s.Items), s.Dump())
	}
}

// TestMovementFoldsAway: a reshape round trip and a double transpose leave
// plain contiguous indexing (no div/mod) in the lowered kernel.
func TestMovementFoldsAway(t *testing.T) {
	a := input(4, 6)
	out := a.Reshape(24).Reshape(4, 6).Permute(1, 0).Permute(1, 0).Exp2()
	s, err := Create([]*tensor.Node{out.Node()}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	k, err := ir.Optimize(s.Items[0].Kernel, nil)
	if err != nil {
		t.Fatal(err)
	}
	ir.Walk(k.Stores, func(e *ir.Expr) {
		if e.Op == ir.OpDiv || e.Op == ir.OpMod {
			t.Errorf("index math not simplified: %s", e)
		}
	})
	if len(k.Global) != 1 || k.Global[0].Size != 24 {
		t.Errorf("want one merged loop of 24, got %d loops", len(k.Global))
	}
}

// TestConvInputGradient: the gradient of a stride-1 conv with respect to
// its input is a convolution (tensor.convGrads): the output gradient is
// padded (stored, as conv inputs are) and convolved with the flipped
// weight (copied: it is small) in one reduce kernel over (cout, kh, kw). Nothing of the size of
// all windows (cin*kh*kw per output position) is stored.
func TestConvInputGradient(t *testing.T) {
	x, w := input(2, 3, 10, 10), input(4, 3, 3, 3)
	out := x.Conv2d(w, nil, tensor.ConvOpts{})
	gs, err := autograd.GradientWith(out, input(2, 4, 8, 8), []*tensor.Tensor{x}, false)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Create([]*tensor.Node{gs[0].Node()}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	last := s.Items[len(s.Items)-1].Kernel.BaseName()
	if len(s.Items) != 3 || last != "r_2_3_10_10_4_3_3" {
		t.Errorf("want the flipped weight and the padded output gradient stored, then one convolution r_2_3_10_10_4_3_3:\n%s", s.Dump())
	}
	for _, it := range s.Items {
		if it.Out.Numel() == 2*3*3*3*8*8 {
			t.Errorf("a window-sized buffer is stored:\n%s", s.Dump())
		}
	}
}

// TestHoistedReduceCounts: with HoistReduces (the C targets) a reduce
// broadcast back over the rows it reduces joins its consumer when the
// kernel computes it once per row (it depends on a leading run of the
// kernel's axes and on no enclosing reduce's loop); otherwise it is a
// buffer, as without the option.
func TestHoistedReduceCounts(t *testing.T) {
	a := input(16, 32)
	x4 := input(4, 3, 8, 8)
	cases := []kernelCount{
		{"softmax", softmax(a), 3, 1},
		{"x - x.mean(1)", a.Sub(a.Sum(true, 1).Mul(tc.Const(1.0/32, ir.Float32))), 2, 1},
		{"logsumexp", a.Sub(a.Max(true, 1)).Exp2().Sum(false, 1).Log2(), 2, 1},
		{"layernorm", layernorm(a), 3, 1},
		// Attention scores (a sum per position and head) read at (head,
		// position) would be computed once per value, not per row: with
		// a fixed length every reduce is stored (rows of a fixed length
		// run in vectors across rows); over the positions of a decode
		// step (symbolic), the scores alone (TestSymbolicSoftmaxJoins).
		{"softmax of scores", softmax(input(64, 4, 8).Mul(input(1, 4, 8)).Sum(false, 2).Transpose(0, 1)), 4, 4},
		// Column sums broadcast over rows: the outer axis is not used.
		{"x - x.sum(0)", a.Sub(a.Sum(true, 0)), 2, 2},
		// BatchNorm's per-channel mean: the batch axis comes first.
		{"x - x.mean((0,2,3))", x4.Sub(x4.Sum(true, 0, 2, 3)), 2, 2},
		// The inner sum depends on the outer one's loop: nested, not hoisted.
		{"sum of a sum", a.Sum(false, 1).Sum(false, 0), 2, 2},
		{"matmul", a.Dot(input(32, 8)), 1, 1},
		// A window reduce per output beside a long one (a max pool's count
		// of its maxima dividing a conv's input gradient): stored on C.
		{"matmul / window sum", input(16, 64).Dot(input(64, 8)).Div(input(16, 8, 4).Sum(false, 2)), 1, 2},
		// A window too long (32 elements), or a long reduce too short (16
		// iterations): inlined.
		{"matmul / long sum", input(16, 64).Dot(input(64, 8)).Div(input(16, 8, 32).Sum(false, 2)), 1, 1},
		{"short matmul / window sum", input(16, 16).Dot(input(16, 8)).Div(input(16, 8, 4).Sum(false, 2)), 1, 1},
		// Sums read at (i, j/2) (a nearest upsample, a pool's gradient):
		// inlined, each would be computed twice.
		{"upsampled sums", input(16, 8, 64).Sum(false, 2).Reshape(16, 8, 1).Expand(16, 8, 2).Reshape(16, 16).Add(input(16, 16)), 2, 2},
		// A window sum that does not read every output axis (one per row,
		// broadcast over the columns) joins as a row reduce.
		{"matmul / row window", input(16, 64).Dot(input(64, 8)).Div(input(16, 1, 4).Sum(false, 2)), 2, 1},
	}
	checkKernelCounts(t, cases)
}

// TestSymbolicSoftmaxJoins: a decode step's softmax over the positions
// attended so far (a symbolic length) of scores computed per (position,
// head): the scores are stored, the max and sum join the softmax's kernel
// (2 kernels; all four stored on main before).
func TestSymbolicSoftmaxJoins(t *testing.T) {
	v, err := tensor.NewVariable("start_pos", 0, 63)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := v.Bind(9)
	if err != nil {
		t.Fatal(err)
	}
	keys := input(64, 4, 8).ShrinkDims([][2]tensor.SInt{{tensor.Int(0), sp.Add(1)}, {tensor.Int(0), tensor.Int(4)}, {tensor.Int(0), tensor.Int(8)}})
	scores := keys.Mul(input(1, 4, 8)).Sum(false, 2).Transpose(0, 1) // (head, position)
	e := scores.Sub(scores.Max(true, 1)).Exp2()
	out := e.Div(e.Sum(true, 1))
	for _, hoist := range []bool{false, true} {
		s, err := Create([]*tensor.Node{out.Node()}, Options{HoistReduces: hoist})
		if err != nil {
			t.Fatal(err)
		}
		want := 4
		if hoist {
			want = 2
		}
		if len(s.Items) != want {
			t.Errorf("hoist %v: %d kernels, want %d:\n%s", hoist, len(s.Items), want, s.Dump())
		}
	}
}

func layernorm(x *tensor.Tensor) *tensor.Tensor {
	n := float64(x.Shape()[1])
	c := x.Sub(x.Sum(true, 1).Mul(tc.Const(1/n, ir.Float32)))
	v := c.Mul(c).Sum(true, 1).Mul(tc.Const(1/n, ir.Float32))
	return c.Mul(v.Add(tc.Const(1e-5, ir.Float32)).Rsqrt())
}

// tc is the context of this package's test graphs (they are scheduled and
// rendered, never realized).
var tc = tensor.NewContext(nil)

// A conv's elementwise epilogue (BatchNorm, ReLU) that the next, padded
// conv reads is stored at its own size: the first conv's kernel computes
// (1, 8, 6, 6), not the padded (1, 8, 8, 8) with a bounds test on every
// output; the pad is a copy of its own.
func TestEpilogueStoredBeforePad(t *testing.T) {
	x, w1, w2 := input(1, 4, 6, 6), input(8, 4, 1, 1), input(8, 8, 3, 3)
	scale, shift := input(1, 8, 1, 1), input(1, 8, 1, 1)
	h := relu(x.Conv2d(w1, nil, tensor.ConvOpts{}).Mul(scale).Add(shift))
	y := h.Conv2d(w2, nil, tensor.ConvOpts{Padding: []int{1}})
	s, err := Create([]*tensor.Node{y.Node()}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var shapes []string
	for _, it := range s.Items {
		shapes = append(shapes, it.Kernel.Name+tensor.FormatShape(it.Out.Shape))
	}
	if len(s.Items) != 3 || s.Items[0].Out.Shape[2] != 6 || s.Items[1].Out.Shape[2] != 8 {
		t.Errorf("kernels %v, want the 1x1 conv at 6x6, the pad at 8x8, the 3x3 conv", shapes)
	}
}

// TestKernelCost: DEBUG's GFLOP/s counts a multiply-add as two flops, as
// the FMA peak and OpenBLAS's rate do (a 8x12 by 12x16 matmul: 2·8·12·16),
// and a max pool's compares as one each.
func TestKernelCost(t *testing.T) {
	cases := []struct {
		name  string
		out   *tensor.Tensor
		flops int64
	}{
		{"matmul", matmul(input(8, 12), input(12, 16)), 2 * 8 * 12 * 16},
		{"matmul+relu", relu(matmul(input(8, 12), input(12, 16))), 2*8*12*16 + 8*16},
		{"row max", input(6, 10).Max(false, 1), 6 * 10},
	}
	for _, c := range cases {
		s, err := Create([]*tensor.Node{c.out.Node()}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Items) != 1 {
			t.Fatalf("%s: %d kernels", c.name, len(s.Items))
		}
		if got, _ := s.Items[0].Kernel.Cost(); got != c.flops {
			t.Errorf("%s: %d flops, want %d", c.name, got, c.flops)
		}
	}
}

// A max pool's 3x3 window over a stored conv output (ONNX's rows, with
// their BatchNorm and ReLU) reads it in place under the padding's guard:
// two kernels (the conv with its epilogue, the pool), no padded copy
// (smallWindow); an average pool of an input is one kernel.
func TestPoolReadsPaddingInPlace(t *testing.T) {
	x, w1 := input(2, 4, 6, 6), input(8, 4, 1, 1)
	scale, shift := input(1, 8, 1, 1), input(1, 8, 1, 1)
	h := relu(x.Conv2d(w1, nil, tensor.ConvOpts{}).Mul(scale).Add(shift)).Contiguous()
	pool := h.MaxPool2d(tensor.PoolOpts{Kernel: []int{3, 3}, Stride: []int{2, 2}, Padding: []int{1}})
	s, err := Create([]*tensor.Node{pool.Node()}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var shapes []string
	for _, it := range s.Items {
		shapes = append(shapes, it.Kernel.Name+tensor.FormatShape(it.Out.Shape))
	}
	if len(s.Items) != 2 || s.Items[0].Out.Shape[2] != 6 || s.Items[1].Out.Shape[2] != 3 {
		t.Errorf("kernels %v, want the 1x1 conv with its epilogue at 6x6 and the pool at 3x3", shapes)
	}
	// an average pool of a plain input: one kernel
	avg := input(2, 4, 6, 6).AvgPool2d(tensor.PoolOpts{Kernel: []int{3, 3}, Stride: []int{1, 1}, Padding: []int{1}}, true)
	if s, err := Create([]*tensor.Node{avg.Node()}, Options{}); err != nil || len(s.Items) != 1 {
		t.Errorf("avg pool: %v kernels, %v; want 1", s, err)
	}
}

// rmsnorm is LLaMA's RMSNorm of the rows of x, scaled by g.
func rmsnorm(x, g *tensor.Tensor) *tensor.Tensor {
	n := float64(x.Shape()[len(x.Shape())-1])
	ms := x.Mul(x).Sum(true, len(x.Shape())-1).Mul(tc.Const(1/n, ir.Float32))
	return x.Mul(ms.Add(tc.Const(1e-5, ir.Float32)).Rsqrt()).Mul(g)
}

// TestPrologueCounts: with HoistReduces a one-row RMSNorm read by the
// matrix-vector product after it joins the product's kernel (a prologue,
// prologue.go); several rows (a prompt) keep it in a kernel of its own.
func TestPrologueCounts(t *testing.T) {
	x, g := input(1, 64), input(64)
	w1, w3 := input(96, 64), input(96, 64)
	xs := input(4, 64)
	cases := []kernelCount{
		{"rmsnorm @ w.T", rmsnorm(x, g).Dot(w1.Transpose(0, 1)), 3, 1},
		{"silu(n @ w1.T) * (n @ w3.T)", rmsnorm(x, g).Dot(w1.Transpose(0, 1)).Silu().Mul(rmsnorm(x, g).Dot(w3.Transpose(0, 1))), 3, 1},
		{"(x + y) normed @ w.T", rmsnorm(x.Add(input(1, 64)), g).Dot(w1.Transpose(0, 1)), 3, 1},
		{"four rows", rmsnorm(xs, g).Dot(w1.Transpose(0, 1)), 4, 4},
	}
	checkKernelCounts(t, cases)
}

// kernelCount is a graph and the kernels it schedules into without and
// with HoistReduces (row kernels).
type kernelCount struct {
	name       string
	out        *tensor.Tensor
	plain, row int
}

func checkKernelCounts(t *testing.T, cases []kernelCount) {
	t.Helper()
	for _, cs := range cases {
		for _, hoist := range []bool{false, true} {
			s, err := Create([]*tensor.Node{cs.out.Node()}, Options{HoistReduces: hoist})
			if err != nil {
				t.Fatalf("%s: %v", cs.name, err)
			}
			want := cs.plain
			if hoist {
				want = cs.row
			}
			if len(s.Items) != want {
				t.Errorf("%s (hoist %v): %d kernels, want %d:\n%s", cs.name, hoist, len(s.Items), want, s.Dump())
			}
		}
	}
}
