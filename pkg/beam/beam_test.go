package beam

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"tgc/pkg/backend"
	"tgc/pkg/fuse"
	"tgc/pkg/ir"
	"tgc/pkg/nn"
	"tgc/pkg/quant"
	"tgc/pkg/render"
	"tgc/pkg/tensor"
)

func cpuDevice(t *testing.T) backend.Device {
	t.Helper()
	d, err := backend.Open("CPU")
	if err != nil {
		t.Skipf("CPU unavailable: %v", err)
	}
	return d
}

func floats(r *rand.Rand, shape ...int) *tensor.Tensor {
	n := 1
	for _, s := range shape {
		n *= s
	}
	v := make([]float64, n)
	for i := range v {
		v[i] = r.Float64()*2 - 1
	}
	t, err := tc.FromFloats(ir.Float32, shape, v)
	if err != nil {
		panic(err)
	}
	return t
}

// imageBytes is a uint8 batch of images (N, 1, h, w) with random pixels.
func imageBytes(r *rand.Rand, n, h, w int) *tensor.Tensor {
	v := make([]float64, n*h*w)
	for i := range v {
		v[i] = float64(r.IntN(256))
	}
	t, err := tc.FromFloats(ir.Uint8, []int{n, 1, h, w}, v)
	if err != nil {
		panic(err)
	}
	return t
}

// testKernels are small kernels of every shape of problem the opts meet:
// matmuls (with an epilogue, batched), a padded conv (guarded loads), a
// reduce whose lanes are not contiguous, MAX, an integer result (argmax)
// and softmax. They come out of the scheduler and the always-on passes,
// as BEAM sees them.
func testKernels(t *testing.T) map[string]*ir.Kernel {
	t.Helper()
	r := rand.New(rand.NewPCG(7, 8))
	axis := 1
	graphs := map[string]*tensor.Tensor{
		"matmul+bias+relu": floats(r, 24, 32).Dot(floats(r, 32, 16)).Add(floats(r, 16)).Relu(),
		"batched matmul":   floats(r, 2, 8, 32).Dot(floats(r, 2, 32, 12)),
		// long enough for the heuristic to block its reduce with a small
		// L2 (KBLOCK 64), with an epilogue
		"matmul k=256 relu": floats(r, 8, 256).Dot(floats(r, 256, 64)).Relu(),
		// both operands past half of the small L2 below, 8-lane panels:
		// the heuristic's row groups (TILE) and reduce blocks (KBLOCK)
		"matmul 32x128x32": floats(r, 32, 128).Dot(floats(r, 128, 32)),
		// a left operand past the small L2 whose elements feed 32 outputs
		// each (a 1x1 conv's input rows): prefetched a row block ahead
		"matmul 512x64x32": floats(r, 512, 64).Dot(floats(r, 64, 32)),
		// columns of 3 vectors at 16 lanes: blocks of 3 by 4 rows
		"matmul 16x32x48": floats(r, 16, 32).Dot(floats(r, 32, 48)),
		// and of 5 vectors: blocks of 5 by 2 rows
		"matmul 8x32x80": floats(r, 8, 32).Dot(floats(r, 32, 80)),
		// a left operand past the small L2 with a reduce of 512, 32-lane
		// panels streaming it: BEAM's cache block seeds (BlockSeeds)
		"matmul 32x512x64": floats(r, 32, 512).Dot(floats(r, 512, 64)),
		// with a residual past the small L2 added (a 1x1 conv's
		// epilogue): its lines prefetched before the sum
		"matmul 512x64x32+residual": floats(r, 512, 64).Dot(floats(r, 64, 32)).Add(floats(r, 512, 32)),
		"conv2d pad 1":              floats(r, 2, 3, 8, 8).Conv2d(floats(r, 4, 3, 3, 3), nil, tensor.ConvOpts{Padding: []int{1}}),
		// rows of 40 columns: 2x16+8 lanes where the FMA units run 16 (fullVectors)
		"conv2d 40 columns": floats(r, 1, 2, 3, 40).Conv2d(floats(r, 8, 2, 3, 3), nil, tensor.ConvOpts{Padding: []int{1}}),
		// a 5x5 image, the weight's output channels contiguous: blocks of
		// a channel vector by all 5 rows
		"conv2d 5x5 channels-last weight": floats(r, 2, 8, 5, 5).Conv2d(floats(r, 8, 3, 3, 32).Permute(3, 0, 1, 2), nil, tensor.ConvOpts{Padding: []int{1}}),
		"sum over rows":                   floats(r, 32, 24).Sum(false, 0),
		"max":                             floats(r, 16, 48).Max(false, 1),
		"argmax":                          floats(r, 16, 48).Argmax(&axis, false),
		"softmax":                         floats(r, 8, 64).Softmax(-1),
		// a conv weight gradient as the CPU computes it (tensor.convGrads):
		// the output gradient stored with its channels last, vectors along
		// them, the reduce over batch x image blocked along the batch
		"conv weight grad": func() *tensor.Tensor {
			x, g := floats(r, 16, 8, 6, 6), floats(r, 16, 32, 4, 4)
			gw := g.Permute(0, 2, 3, 1).Contiguous().Permute(0, 3, 1, 2).Permute(1, 0, 2, 3)
			return x.Permute(1, 0, 2, 3).Conv2d(gw, nil, tensor.ConvOpts{}).Permute(1, 0, 2, 3)
		}(),
		// a quantized weight's matrix-vector product: blocks of 32 with a
		// scale each (Q8_0), and a scale and an offset (Q4_K): the
		// factor_reduces pass takes them out of the block's loop
		"block-scaled matvec": floats(r, 1, 128).Dot(blockScaled(r, 16, 128, false).T()),
		"block-affine matvec": floats(r, 1, 128).Dot(blockScaled(r, 16, 128, true).T()),
		"gated block matvecs": floats(r, 1, 128).Dot(blockScaled(r, 16, 128, false).T()).Silu().Mul(floats(r, 1, 128).Dot(blockScaled(r, 16, 128, true).T())),
		// split_reduces' nested loops (kh, kw·Cin) under the opts
		"conv as matmul": convAsMatmul(r),
		// a BatchNorm gradient's channel sums through a max pool's
		// gradient: lanes along the image row read the pool's values at
		// x/2 (the simd pass's window loads), compared with ==
		"pool gradient sums": poolGradSums(r, 4),
		// a convolution of bytes (MNIST's images): widened in vectors
		"conv2d of bytes": imageBytes(r, 2, 12, 12).Conv2d(floats(r, 8, 1, 5, 5), nil, tensor.ConvOpts{}),
		// the same split in two stages (many elements per channel)
		"pool gradient split sums": poolGradSums(r, 128),
		// a sum split in two (64 partials of 16 lanes) whose input the
		// small-L3 targets read from memory: 4 partials side by side, 2
		// vectors each along the sum (ir's streamOpts)
		"split sum": floats(r, 1<<16).Sum(false),
		// a conv's input gradient as tensor.convGrads computes it: the
		// output gradient padded by kernel-1 and convolved with the
		// flipped weight; the border rows' windows skip the padding's
		// zero rows (skip_zeros)
		"conv input grad": floats(r, 2, 8, 6, 12).Conv2d(floats(r, 4, 8, 5, 5), nil, tensor.ConvOpts{Padding: []int{4}}),
		// outputs 37 and 41 wide: no vector width divides them (PADTO:
		// the last block of lanes overlaps the one before it)
		"matmul 12x20x37+bias": floats(r, 12, 20).Dot(floats(r, 20, 37)).Add(floats(r, 37)),
		"matvec 1x24x41":       floats(r, 1, 24).Dot(floats(r, 24, 41)),
	}
	// Row kernels (fuse.Options.HoistReduces, the CPU's schedule): reduces
	// hoisted out of the column loop, computed once per row.
	rows := map[string]*tensor.Tensor{
		// 24 KiB: the small-L3 targets keep it in scratch, stream it, and
		// write each row's lines in the next row's kept loop (Stream.Lag);
		// 96 rows, so that a launch's pieces hold several rows each
		"softmax rows":   floats(r, 96, 64).Softmax(-1),
		"layernorm rows": floats(r, 6, 48).Layernorm(1e-5, -1),
		// rows 37 wide: padded columns (PADTO) and no keep plan
		"softmax rows 37 wide": floats(r, 24, 37).Softmax(-1),
		// past half of the small L2: its sums read the row as a product
		// reads a column panel, outside the columns' loop (no panel
		// prefetch: ir's TestNoPanelPrefetchOutsideItsLoops); the
		// small-cache targets stream its column loop inside the next
		// row's first sum (Stream.Lag without a keep plan), 96 rows so
		// that a launch piece holds several
		"layernorm rows past the L2": floats(r, 96, 256).Layernorm(1e-5, -1),
		// a decode step's RMSNorm in the prologue of the matrix-vector
		// products that read it (fuse's prologues, ir.Prologue): plain,
		// block-scaled (factor_reduces keeps the norm one factor), and the
		// FFN's gate and up, one with a block offset (hoist_reduces' sums
		// of the normed x read the scratch row)
		"rmsnorm matvec": rmsNorm(floats(r, 1, 128), floats(r, 128)).Dot(floats(r, 24, 128).T()),
		"rmsnorm block-scaled matvec": rmsNorm(floats(r, 1, 128).Add(floats(r, 1, 128)), floats(r, 128)).
			Dot(blockScaled(r, 16, 128, false).T()),
		"rmsnorm gated block matvecs": func() *tensor.Tensor {
			x := rmsNorm(floats(r, 1, 128), floats(r, 128))
			return x.Dot(blockScaled(r, 16, 128, false).T()).Silu().Mul(x.Dot(blockScaled(r, 16, 128, true).T()))
		}(),
	}
	// Elementwise kernels whose outputs the small-L3 targets write around
	// the caches: the heuristic blocks them in lines (Target.streamedLines)
	// and the simd pass plans their store runs without accumulators. Not
	// searchable (BEAM leaves them to gcc), so added whatever Searchable says.
	elementwise := map[string]*tensor.Tensor{
		"elementwise streamed":   floats(r, 1024).Mul(floats(r, 1024)).Add(floats(r, 1024)).Relu(),
		"broadcast add streamed": floats(r, 16, 64).Add(floats(r, 64)).Exp(),
		"sigmoid streamed":       floats(r, 1024).Mul(floats(r, 1024)).Sigmoid(), // 1/(1+exp): a vector reciprocal
		// a prompt's RoPE over a feature-major projection: read along the
		// tokens, written along the features (ir transposeOpts' tiles)
		"transposed scale": floats(r, 512, 32).Permute(1, 0).Reshape(32, 8, 64).Mul(floats(r, 32, 1, 64)),
		// a plain transposed copy, rows 2 KiB apart: 16x16 tiles (ir
		// transpose2D)
		"transposed copy": floats(r, 256, 512).Permute(1, 0).Mul(floats(r, 512, 256)),
	}
	// Short reduces (not searchable): a channels-last max pool over its
	// padding, read in place under the padding's guard (fuse's
	// smallWindow), which the heuristic blocks along the channels
	// (Target.windowOpts) so the simd pass makes vector accumulators; a
	// 2x2 conv.
	windows := map[string]*tensor.Tensor{
		"max pool channels last": floats(r, 2, 7, 7, 32).Permute(0, 3, 1, 2).
			MaxPool2d(tensor.PoolOpts{Kernel: []int{3, 3}, Stride: []int{2, 2}, Padding: []int{1}}).Permute(0, 2, 3, 1),
		// padding as wide as the 2x2 kernel: the heuristic upcasts all 19
		// columns, and the last one's windows are all padding (0*w), a
		// sum factor_reduces can nest while the group's other lanes cannot
		// (a group is factored whole or not at all)
		"conv2d 2x2 pad 2 channels-last weight": floats(r, 3, 3, 7, 16).Conv2d(floats(r, 8, 2, 2, 3).Permute(0, 3, 1, 2), nil, tensor.ConvOpts{Padding: []int{2}}),
	}
	out := map[string]*ir.Kernel{}
	for name, x := range windows {
		s, err := fuse.Create([]*tensor.Node{x.Node()}, fuse.Options{})
		if err != nil || len(s.Items) != 1 {
			t.Fatalf("%s: %d kernels, %v", name, len(s.Items), err)
		}
		k, err := ir.Optimize(s.Items[0].Kernel, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name+"/0"] = k
	}
	for name, x := range graphs {
		add(t, out, name, x, fuse.Options{})
	}
	for name, x := range elementwise {
		s, err := fuse.Create([]*tensor.Node{x.Node()}, fuse.Options{})
		if err != nil || len(s.Items) != 1 {
			t.Fatalf("%s: %d kernels, %v", name, len(s.Items), err)
		}
		k, err := ir.Optimize(s.Items[0].Kernel, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name+"/0"] = k
	}
	for name, x := range rows {
		add(t, out, name, x, fuse.Options{HoistReduces: true})
	}
	// Rows no vector divides, at least 4 vectors long, as the CPU's
	// passes before the opts leave them (split_tails, which the plain
	// preparation above does not run): their sums over 96 columns in
	// vectors and the rest (4, or 1: a loop of one iteration) in a scalar
	// tail, and the keep plan keeps both loops' values (ir.Keep.Tail).
	tails := map[string]*tensor.Tensor{
		"softmax rows 100 wide": floats(r, 6, 100).Softmax(-1),
		"softmax rows 97 wide":  floats(r, 6, 97).Softmax(-1),
	}
	for name, x := range tails {
		s, err := fuse.Create([]*tensor.Node{x.Node()}, fuse.Options{HoistReduces: true})
		if err != nil || len(s.Items) != 1 {
			t.Fatalf("%s: %d kernels, %v", name, len(s.Items), err)
		}
		var k *ir.Kernel
		cpu := ir.CPUTarget
		cpu.Choose = func(seen *ir.Kernel) []ir.Opt { k = seen; return nil } // the kernel the opts apply to
		if _, err := ir.OptimizeFor(s.Items[0].Kernel, cpu, nil); err != nil || k == nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name+"/0"] = k
	}
	return out
}

// poolGradSums is sum over (n, y, x) of where(x == up(max2x2(x)), up(g), 0)
// times x, per channel: a BatchNorm gradient behind a 2x2 max pool.
func poolGradSums(r *rand.Rand, n int) *tensor.Tensor {
	up := func(v *tensor.Tensor) *tensor.Tensor {
		return v.Reshape(n, 2, 8, 1, 8, 1).Expand(n, 2, 8, 2, 8, 2).Reshape(n, 2, 16, 16)
	}
	x := floats(r, n, 2, 16, 16)
	m := up(x.Reshape(n, 2, 8, 2, 8, 2).Max(false, 3, 5))
	g := x.Eq(m).Where(up(floats(r, n, 2, 8, 8)), x.Context().Const(0, ir.Float32))
	return g.Mul(x).Sum(false, 0, 2, 3)
}

// rmsNorm is LLaMA's RMSNorm of x's rows, scaled by g.
func rmsNorm(x, g *tensor.Tensor) *tensor.Tensor {
	c := x.Context()
	n := float64(x.Shape()[1])
	ms := x.Mul(x).Sum(true, 1).Mul(c.Const(1/n, ir.Float32))
	return x.Mul(ms.Add(c.Const(1e-5, ir.Float32)).Rsqrt()).Mul(g)
}

// blockScaled is a rows x cols weight made of blocks of 32 columns with a
// scale each (and an offset: d*q - m).
func blockScaled(r *rand.Rand, rows, cols int, offset bool) *tensor.Tensor {
	w := floats(r, rows, cols/32, 32).Mul(floats(r, rows, cols/32, 1))
	if offset {
		w = w.Sub(floats(r, rows, cols/32, 1))
	}
	return w.Reshape(rows, cols)
}

// convAsMatmul is a 3x3 convolution as ONNX's importer computes it on the
// CPU: a matrix product of its windows, a view of the padded
// channels-last input flattened to K = kh·kw·Cin, whose index finds each
// window element through divisions of the one reduce loop (what
// split_reduces turns into nested loops).
func convAsMatmul(r *rand.Rand) *tensor.Tensor {
	return convWindows(r).Dot(floats(r, 72, 16))
}

// convWindows is the left operand of convAsMatmul: (N, P, K), a view.
func convWindows(r *rand.Rand) *tensor.Tensor {
	x := floats(r, 2, 6, 6, 8).Pad([][2]int{{0, 0}, {1, 1}, {1, 1}, {0, 0}}, 0) // (N, H, W, C)
	win, _ := x.Permute(0, 3, 1, 2).PoolWindows(tensor.PoolOpts{Kernel: []int{3, 3}, Stride: []int{1, 1}}, 0)
	return win.Permute(0, 2, 3, 4, 5, 1).Reshape(2, 36, 72)
}

func add(t *testing.T, out map[string]*ir.Kernel, name string, x *tensor.Tensor, opts fuse.Options) {
	t.Helper()
	{
		s, err := fuse.Create([]*tensor.Node{x.Node()}, opts)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for i, it := range s.Items {
			k, err := ir.Optimize(it.Kernel, nil)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if ir.Searchable(k) {
				out[name+"/"+string(rune('0'+i))] = k
			}
		}
	}
}

// optList is a list of opts and the target it is applied for (the simd
// pass after the opts makes vectors of the target's width).
type optList struct {
	opts   []ir.Opt
	target ir.Target
	heur   bool // the heuristic's choice for target
	seed   bool // one of target's BlockSeeds on its heuristic's list
}

// heuristicTargets are the hosts the heuristic is tried for: both vector
// widths, 16 and 32 vector registers (the register blocks' size), and
// caches small enough for the test kernels' operands to need cache
// blocking (column panels outermost, KBLOCK, row groups with TILE), row
// kernels' rows prefetched far ahead (FarPrefetch), and
// their outputs to be
// written around the caches (stream_stores; the CPU device's buffers are
// page aligned).
var heuristicTargets = []ir.Target{
	{Upcast: true, VecWidth: 8},
	{Upcast: true, VecWidth: 16},
	{Upcast: true, VecWidth: 8, VecRegs: 32, L1: 8 << 10, L2: 16 << 10, L3: 4 << 10, BufAlign: 4096},
	{Upcast: true, VecWidth: 16, VecRegs: 32, L1: 8 << 10, L2: 16 << 10, L3: 4 << 10, BufAlign: 4096, FarPrefetch: 128 << 10},
	// two full-width FMA units (Zen 5): rows blocked in full vectors
	{Upcast: true, VecWidth: 16, VecRegs: 32, FMAWidth: 16},
}

// optLists are the heuristic's lists for each of heuristicTargets, and
// every single action and every action that extends one (for the default
// target).
func optLists(k *ir.Kernel) []optList {
	var lists []optList
	seen := map[string]bool{}
	for _, t := range heuristicTargets {
		// The same list at one width renders the same, unless one target
		// streams outputs (its L3 known) and the other does not.
		h := t.HeuristicOpts(k)
		key := fmt.Sprint(t.VecWidth, t.L3 > 0, ir.FormatOpts(h))
		if len(h) > 0 && !seen[key] {
			seen[key] = true
			lists = append(lists, optList{h, t, true, false})
		}
		for _, l := range t.BlockSeeds(k, h) {
			if key := fmt.Sprint(t.VecWidth, t.L3 > 0, ir.FormatOpts(l)); !seen[key] {
				seen[key] = true
				lists = append(lists, optList{l, t, false, true})
			}
		}
	}
	for _, a := range ir.Actions(k, nil) {
		for _, l := range append([][]ir.Opt{{a}}, extend(k, a)...) {
			if key := ir.FormatOpts(canonical(l)); !seen[key] {
				seen[key] = true
				lists = append(lists, optList{l, ir.CPUTarget, false, false})
			}
		}
	}
	return lists
}

func extend(k *ir.Kernel, a ir.Opt) [][]ir.Opt {
	var out [][]ir.Opt
	for _, b := range ir.Actions(k, []ir.Opt{a}) {
		out = append(out, []ir.Opt{a, b})
	}
	return out
}

// TestEveryOptPreservesResults applies every single opt and every pair to
// each test kernel, and the heuristic's choice for several hosts (register
// blocks, row kernels, cache blocking), runs it on the CPU and in the GO
// interpreter, and compares both with the unoptimized kernel run by the
// GO interpreter on the same random inputs.
func TestEveryOptPreservesResults(t *testing.T) {
	cpu := cpuDevice(t)
	gdev, err := backend.Open("GO")
	if err != nil {
		t.Fatal(err)
	}
	tested, unrolled, blocked, kept, batchBlocked, factored, skipped, streamed, rowed := 0, 0, 0, 0, 0, 0, 0, 0, 0
	tailKept := 0  // lists keeping the values of a split sum's tail too (ir.Keep.Tail)
	wholeRows := 0 // heuristic lists blocking all of a conv's 5 rows
	tiles2D := 0   // heuristic lists tiling a plain transposed copy 16x16
	streamedElementwise, scratchLines, lagged := 0, 0, 0
	laggedRows := 0                   // lists lagging a row kernel's column loop without a keep plan
	padLists := 0                     // lists padding an axis (PADTO)
	seeds := 0                        // BEAM's cache block seeds (ir.Target.BlockSeeds)
	tripled := 0                      // heuristic lists blocking 48 columns in three 16-lane vectors
	fived := 0                        // and 80 columns in five
	heuristic := map[ir.OptKind]int{} // the kinds the heuristic's lists use
	widened, pooled, prefetched, epilogues, panels, farKept := 0, 0, 0, 0, 0, 0
	chained := 0                  // heuristic lists unrolling a quantized row's blocks by 2 (blockChains)
	transposed := 0               // heuristic lists tiling a transposing kernel (transposeOpts)
	hsumGroups := 0               // opt lists whose horizontal sums are rendered together (render.hsumGroups)
	streamReduced := 0            // heuristic lists of a streaming reduce's rows and vectors (streamOpts)
	prologued := map[string]int{} // per kernel, opt lists with a prologue plan
	for name, k := range testKernels(t) {
		ref, err := newBench(gdev, ir.Target{}, k)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		onCPU, err := newBench(cpu, ir.CPUTarget, k)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for i := range ref.ref {
			if ref.ref[i] != nil {
				if err := same(k.Bufs[i].DType, ref.ref[i], onCPU.ref[i]); err != nil {
					t.Fatalf("%s: unoptimized CPU kernel differs from GO: %v", name, err)
				}
			}
		}
		lists := optLists(k)
		if len(lists) == 0 {
			t.Errorf("%s: no opts to try", name)
		}
		var ks []*ir.Kernel
		for _, l := range lists {
			// The opts and the passes after them (the simd pass's vectors).
			ok, err := l.target.Apply(k, l.opts)
			if err != nil {
				t.Fatalf("%s: %s does not apply (heuristic: %v): %v", name, ir.FormatOpts(l.opts), l.heur, err)
			}
			if nestedReduce(ok) {
				factored++
			}
			ks = append(ks, onCPU.rename(ok))
			if l.heur && strings.HasPrefix(name, "conv2d 5x5") && strings.Contains(ir.FormatOpts(l.opts), ",5)") {
				wholeRows++
			}
			if ok.Keep != nil {
				kept++
				if ok.Keep.Tail != nil {
					tailKept++
				}
				if ok.Keep.Scratch && ok.Stream != nil && ok.Stream.Cols {
					scratchLines++
					if ok.Stream.Lag > 0 {
						lagged++
					}
				}
			}
			if ok.Skip != nil {
				skipped++
			}
			if ok.Stream != nil && ok.Keep == nil && ok.Stream.Lag > 0 {
				laggedRows++
			}
			if ok.Stream != nil {
				streamed++
				if l.heur && strings.HasSuffix(name, "streamed/0") {
					streamedElementwise++
				}
			}
			if ok.Rows != nil {
				rowed++
			}
			if l.heur && strings.HasPrefix(name, "max pool") && ok.SIMD != nil {
				pooled++
			}
			if ok.Prefetch != nil {
				prefetched++
				if len(ok.Prefetch.Epilogue) > 0 {
					epilogues++
				}
				for _, at := range ok.Prefetch.Loads {
					if at.At != nil {
						panels++ // a column panel's next one (ir.panelPrefetchable)
						break
					}
				}
			}
			if ok.Pro != nil {
				prologued[name]++
			}
			if strings.Contains(render.Render(render.C, ok), "vhsum") {
				hsumGroups++
			}
			if ok.Keep != nil && ok.Keep.Far > 0 {
				farKept++
			}
		}
		// One translation unit per vector width, as a device compiles
		// (its kernels share the vector types' prelude).
		cprogs := make([]backend.Program, len(ks))
		for _, w := range []int64{8, 16} {
			var idx []int
			var same []*ir.Kernel
			for i, l := range lists {
				if l.target.Width() == w {
					idx, same = append(idx, i), append(same, ks[i])
				}
			}
			if len(same) == 0 {
				continue
			}
			ps, err := cpu.Compile(same)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			for j, i := range idx {
				cprogs[i] = ps[j]
			}
		}
		gprogs, err := gdev.Compile(ks)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for i, l := range lists {
			what := fmt.Sprintf("%s %s (width %d)", name, ir.FormatOpts(l.opts), l.target.Width())
			if _, err := onCPU.check(cprogs[i]); err != nil {
				t.Errorf("%s on CPU: %v", what, err)
			}
			if _, err := ref.check(gprogs[i]); err != nil {
				t.Errorf("%s in the GO interpreter: %v", what, err)
			}
			tested++
			if l.seed {
				seeds++
			}
			if l.heur && l.target.Width() == 16 && strings.Contains(ir.FormatOpts(l.opts), "UPCAST(1,48)") {
				tripled++
			}
			if l.heur && l.target.Width() == 16 && strings.Contains(ir.FormatOpts(l.opts), "UPCAST(1,80)") {
				fived++
			}
			if strings.Contains(ir.FormatOpts(l.opts), "PADTO") {
				padLists++
			}
			if strings.Contains(ir.FormatOpts(l.opts), "UNROLL") {
				unrolled++
			}
			if strings.Contains(ir.FormatOpts(l.opts), "KBLOCK") {
				blocked++
				if l.heur && len(k.ReduceAxes()) > 1 {
					batchBlocked++ // a weight gradient's batch axis
				}
			}
			for _, o := range l.opts {
				if l.heur {
					heuristic[o.Kind]++
				}
				if l.heur && o.Kind == ir.OptUpcast && o.Amt == 40 && strings.HasPrefix(name, "conv2d 40 columns/") {
					widened++ // a whole 40-column row: 2x16+8 lanes (Target.FMAWidth)
					if src := render.Render(render.C, ks[i]); !strings.Contains(src, "sizeof l_") {
						t.Errorf("%s: the 8-lane broadcasts are not the low halves of the 16-lane ones (widerBroadcast)", what)
					}
				}
				if l.heur && o.Kind == ir.OptUnroll && name == "split sum/0" && strings.Contains(ir.FormatOpts(l.opts), "UPCAST(0,4)") {
					streamReduced++
				}
				if l.heur && o.Kind == ir.OptTile && strings.HasPrefix(name, "transposed scale/") && strings.Contains(ir.FormatOpts(l.opts), "OUTER(1)") {
					transposed++
				}
				if l.heur && o.Kind == ir.OptTile && strings.HasPrefix(name, "transposed copy/") && ir.FormatOpts(l.opts) == "[UPCAST(1,16) TILE(0,16) OUTER(1)]" {
					tiles2D++
				}
				if l.heur && o.Kind == ir.OptUnroll && o.Amt == 2 && strings.Contains(name, "block") && strings.Contains(name, "matvec") {
					chained++ // two accumulators over a row's blocks (ir blockChains)
				}
			}
		}
		ref.free()
		onCPU.free()
	}
	t.Logf("%d opt lists tested (%d with UNROLL, %d with KBLOCK, %d with a keep plan, %d skipping zeros, %d streaming stores, %d reading rows)", tested, unrolled, blocked, kept, skipped, streamed, rowed)
	if tested < 50 || unrolled < 10 || blocked < 5 || kept < 3 {
		t.Errorf("only %d opt lists tested (%d with UNROLL, %d with KBLOCK, %d with a keep plan)", tested, unrolled, blocked, kept)
	}
	for _, name := range []string{"rmsnorm matvec/0", "rmsnorm block-scaled matvec/0", "rmsnorm gated block matvecs/0"} {
		if prologued[name] < 3 {
			t.Errorf("%s: only %d opt lists compute the norm in a prologue (%d kernels tested)", name, prologued[name], len(prologued))
		}
	}
	if tripled == 0 || fived == 0 {
		t.Errorf("heuristic lists blocking a row in three vectors: %d, in five: %d", tripled, fived)
	}
	// The floors of the counters: at least 1 reads "no ...".
	for _, c := range []struct {
		n, least int
		what     string
	}{
		{tiles2D, 2, "heuristic lists tile a transposed copy 16x16"},
		{wholeRows, 2, "heuristic lists block a 5x5 conv's rows whole"},
		{tailKept, 2, "opt lists keep a split sum's tail values"},
		{skipped, 5, "opt lists skip a padding's zeros"},
		{rowed, 5, "opt lists read guarded rows through row pointers"},
		{streamed, 2, "opt lists stream their stores"},
		{scratchLines, 2, "opt lists keep a row in scratch and stream the column loop's lines"},
		{lagged, 2, "opt lists write a row's lines in the next row's kept loop"},
		{laggedRows, 2, "opt lists write a row's lines in the next row's first sum (no keep plan)"},
		{streamedElementwise, 2, "heuristic lists of elementwise kernels stream their stores"},
		{hsumGroups, 3, "opt lists sum several accumulators' lanes together (render.hsumGroups)"},
		{factored, 5, "opt lists with a reduce factored out of another"},
		{padLists, 10, "opt lists pad an axis (PADTO)"},
		{batchBlocked, 1, "heuristic list blocks a reduce over several axes (KBLOCK of a weight gradient's batch)"},
		{widened, 1, "heuristic list blocks a row in full vectors (Target.FMAWidth)"},
		{transposed, 1, "heuristic list tiles a transposing elementwise kernel (ir transposeOpts)"},
		{chained, 1, "heuristic list unrolls a block-scaled matrix-vector row's blocks by 2"},
		{streamReduced, 1, "heuristic list reads a streaming reduce's partials 4 at a time along the sum (ir streamOpts)"},
		{prefetched, 1, "opt list prefetches a streamed operand (ir.Prefetch)"},
		{farKept, 1, "opt list prefetches a row kernel's rows far ahead (ir.Keep.Far)"},
		{panels, 1, "opt list prefetches a matmul's next column panel (ir.PrefetchAt.At)"},
		{epilogues, 1, "opt list prefetches an epilogue's residual (ir.Prefetch.Epilogue)"},
		{pooled, 1, "heuristic list makes a max pool's window vectors (Target.windowOpts)"},
		{seeds, 1, "cache block seeds tested (ir.Target.BlockSeeds)"},
	} {
		switch {
		case c.n < c.least && c.least == 1:
			t.Errorf("no %s", c.what)
		case c.n < c.least:
			t.Errorf("only %d %s", c.n, c.what)
		}
	}
	for _, kind := range []ir.OptKind{ir.OptUpcast, ir.OptUnroll, ir.OptOuter, ir.OptKBlock, ir.OptTile, ir.OptPad} {
		if heuristic[kind] == 0 {
			t.Errorf("no heuristic list with %s tested", kind)
		}
	}
}

// nestedReduce says whether a reduce of k sums another (factor_reduces).
func nestedReduce(k *ir.Kernel) bool {
	found := false
	ir.Walk(k.Stores, func(e *ir.Expr) {
		if e.Op == ir.OpReduce {
			ir.Walk([]*ir.Expr{e.Src[0]}, func(x *ir.Expr) { found = found || x.Op == ir.OpReduce })
		}
	})
	return found
}

// TestCheckRejectsWrongKernel: a kernel with the same buffers that
// computes something else fails the check (so check can fail at all).
func TestCheckRejectsWrongKernel(t *testing.T) {
	cpu := cpuDevice(t)
	r := rand.New(rand.NewPCG(1, 1))
	a, b := floats(r, 16, 32), floats(r, 32, 16)
	kernelOf := func(x *tensor.Tensor) *ir.Kernel {
		s, err := fuse.Create([]*tensor.Node{x.Node()}, fuse.Options{})
		if err != nil || len(s.Items) != 1 {
			t.Fatalf("schedule: %v", err)
		}
		k, err := ir.Optimize(s.Items[0].Kernel, nil)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	good, bad := kernelOf(a.Dot(b)), kernelOf(a.Dot(b).Mul(a.Dot(b)))
	bn, err := newBench(cpu, ir.CPUTarget, good)
	if err != nil {
		t.Fatal(err)
	}
	defer bn.free()
	checkGoodBad(t, cpu, bn, good, bad, "a kernel computing x*x")
}

// checkGoodBad compiles good and bad against bench bn: good must pass its
// check, bad (described by what) must fail it.
func checkGoodBad(t *testing.T, dev backend.Device, bn *bench, good, bad *ir.Kernel, what string) {
	t.Helper()
	progs, err := dev.Compile([]*ir.Kernel{bn.rename(good), bn.rename(bad)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bn.check(progs[0]); err != nil {
		t.Errorf("the kernel itself fails its check: %v", err)
	}
	if _, err := bn.check(progs[1]); err == nil {
		t.Errorf("%s passed the check", what)
	}
}

// TestSearchStoresAndReuses: a search picks opts that apply, stores them,
// a new searcher reuses them without searching, and a corrupt entry is
// searched again instead of trusted.
func TestSearchStoresAndReuses(t *testing.T) {
	cpu := cpuDevice(t)
	dir := t.TempDir()
	ks := testKernels(t)
	k := ks["matmul+bias+relu/0"]
	if k == nil {
		t.Fatalf("no matmul kernel among %d", len(ks))
	}
	opts := Options{Width: 2, Budget: 20 * time.Second, Dir: dir}
	s1 := New(cpu, opts)
	chosen := s1.Choose(k)
	if s1.Stats.Searched != 1 || s1.Stats.Candidates < 5 {
		t.Fatalf("stats after a search: %+v", s1.Stats)
	}
	if _, err := ir.ApplyOpts(k, chosen); err != nil {
		t.Fatalf("chosen opts %s do not apply: %v", ir.FormatOpts(chosen), err)
	}
	entries, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(entries) != 1 {
		t.Fatalf("%d stored entries, want 1", len(entries))
	}
	s2 := New(cpu, opts)
	again := s2.Choose(k)
	if s2.Stats.Searched != 0 || s2.Stats.Reused != 1 || ir.FormatOpts(again) != ir.FormatOpts(chosen) {
		t.Fatalf("second searcher: stats %+v, opts %s, want the stored %s", s2.Stats, ir.FormatOpts(again), ir.FormatOpts(chosen))
	}
	// A different width is a different search.
	s3 := New(cpu, Options{Width: 1, Budget: 20 * time.Second, Dir: dir})
	s3.Choose(k)
	if s3.Stats.Searched != 1 {
		t.Errorf("width 1 reused width 2's result: %+v", s3.Stats)
	}
	for _, garbage := range []string{"not json", `{"opts":[{"kind":"UPCAST","axis":9,"amt":4}]}`, `{"opts":[{"kind":"UPCAST","axis":0,"amt":7}]}`} {
		if err := os.WriteFile(entries[0], []byte(garbage), 0o600); err != nil {
			t.Fatal(err)
		}
		s4 := New(cpu, opts)
		got := s4.Choose(k)
		if s4.Stats.Searched != 1 {
			t.Errorf("entry %q was trusted: %+v", garbage, s4.Stats)
		}
		if _, err := ir.ApplyOpts(k, got); err != nil {
			t.Errorf("after entry %q: opts %s do not apply", garbage, ir.FormatOpts(got))
		}
		data, _ := os.ReadFile(entries[0])
		if !strings.Contains(string(data), `"opts"`) || strings.Contains(string(data), "not json") {
			t.Errorf("corrupt entry not replaced: %q", data)
		}
	}
}

// TestStoredEntriesAreValidated is issue 9 row 4: a crafted store entry
// (amounts that overflow when multiplied, negative or unknown ones, a
// FIFO, an oversized file) is ignored with a warning, never a panic, a
// hang or a wrong kernel. A good entry is still used.
func TestStoredEntriesAreValidated(t *testing.T) {
	cpu := cpuDevice(t)
	k := testKernels(t)["matmul+bias+relu/0"]
	if k == nil {
		t.Fatal("no matmul kernel")
	}
	huge := `4611686018427387904`
	for _, tc := range []struct {
		name, entry string
		ok          bool
	}{
		{"good", `{"opts":[{"kind":"UPCAST","axis":0,"amt":4}],"seconds":1e-5}`, true},
		{"product overflows to 0", `{"opts":[{"kind":"UPCAST","axis":0,"amt":4},{"kind":"UPCAST","axis":0,"amt":` + huge + `}]}`, false},
		{"unroll product overflows", `{"opts":[{"kind":"UNROLL","axis":0,"amt":4},{"kind":"UNROLL","axis":0,"amt":` + huge + `}]}`, false},
		{"huge amount", `{"opts":[{"kind":"UPCAST","axis":0,"amt":` + huge + `}]}`, false},
		{"negative amount", `{"opts":[{"kind":"UPCAST","axis":0,"amt":-4}]}`, false},
		{"huge axis", `{"opts":[{"kind":"UPCAST","axis":` + huge + `,"amt":4}]}`, false},
		{"negative axis", `{"opts":[{"kind":"OUTER","axis":-1}]}`, false},
		{"outer with an amount", `{"opts":[{"kind":"OUTER","axis":0,"amt":3}]}`, false},
		{"unknown kind", `{"opts":[{"kind":"LOCAL","axis":0,"amt":4}]}`, false},
		{"too many opts", `{"opts":[` + strings.Repeat(`{"kind":"OUTER","axis":0},`, 40) + `{"kind":"OUTER","axis":0}]}`, false},
		{"negative time", `{"opts":[],"seconds":-1}`, false},
		{"oversized", `{"opts":[],"kernel":"` + strings.Repeat("x", 1<<17) + `"}`, false},
		{"fifo", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log strings.Builder
			s := New(cpu, Options{Dir: t.TempDir(), Out: &log})
			path := s.path(s.key(k))
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			if tc.name == "fifo" {
				if err := syscall.Mkfifo(path, 0o600); err != nil {
					t.Skip(err)
				}
			} else if err := os.WriteFile(path, []byte(tc.entry), 0o600); err != nil {
				t.Fatal(err)
			}
			done := make(chan bool)
			var opts []ir.Opt
			var ok bool
			go func() {
				opts, ok = s.Lookup(k)
				close(done)
			}()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("Lookup hangs")
			}
			if ok != tc.ok {
				t.Fatalf("entry used: %v (opts %s), want %v", ok, ir.FormatOpts(opts), tc.ok)
			}
			if warned := strings.Contains(log.String(), "warning: BEAM: ignoring the stored result "+path); warned == tc.ok {
				t.Errorf("warning %q", log.String())
			}
		})
	}
	// ApplyOpts itself refuses amounts whose product overflows.
	for _, opts := range [][]ir.Opt{
		{{Kind: ir.OptUpcast, Axis: 0, Amt: 4}, {Kind: ir.OptUpcast, Axis: 0, Amt: 1 << 62}},
		{{Kind: ir.OptUpcast, Axis: 0, Amt: 2}, {Kind: ir.OptUpcast, Axis: 0, Amt: 1<<63 - 1}},
		{{Kind: ir.OptUnroll, Axis: 0, Amt: 2}, {Kind: ir.OptUnroll, Axis: 0, Amt: 1<<63 - 1}},
	} {
		if _, err := ir.ApplyOpts(k, opts); err == nil {
			t.Errorf("ApplyOpts accepted %s", ir.FormatOpts(opts))
		}
	}
}

// tc is the context of this package's test graphs (they are scheduled and
// rendered, never realized).
var tc = tensor.NewContext(nil)

// TestSplitLoopsPreservesResults: split_reduces turns the flattened window
// sum of a convolution as a matrix product, and split_globals a copy of
// those windows, into nested loops without divisions in their index, and
// the kernels
// compute the same values: bit for bit in the GO interpreter (the loops
// visit the sum in the same order), within rounding on the CPU.
func TestSplitLoopsPreservesResults(t *testing.T) {
	gdev, err := backend.Open("GO")
	if err != nil {
		t.Fatal(err)
	}
	cpu := cpuDevice(t)
	r := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		name  string
		x     *tensor.Tensor
		pass  func(*ir.Kernel) *ir.Kernel
		loops func(*ir.Kernel) int // the loops the pass adds to
	}{
		{"conv as matmul", convAsMatmul(r), ir.SplitReduces, func(k *ir.Kernel) int { return len(k.ReduceAxes()) }},
		{"window copy", convWindows(r).Contiguous(), ir.SplitGlobals, func(k *ir.Kernel) int { return len(k.Global) }},
	} {
		s, err := fuse.Create([]*tensor.Node{tc.x.Node()}, fuse.Options{})
		if err != nil {
			t.Fatal(err)
		}
		k := ir.MergeAxes(ir.Simplify(s.Items[len(s.Items)-1].Kernel))
		split := tc.pass(k)
		if tc.loops(split) <= tc.loops(k) || countDivMod(split) >= countDivMod(k) {
			t.Fatalf("%s: not split (%d loops, %d divisions and modulos; before %d, %d):\n%s",
				tc.name, tc.loops(split), countDivMod(split), tc.loops(k), countDivMod(k), split.Dump())
		}
		if err := split.Verify(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		ref, err := newBench(gdev, ir.Target{}, k)
		if err != nil {
			t.Fatal(err)
		}
		progs, err := gdev.Compile([]*ir.Kernel{ref.rename(split)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ref.check(progs[0]); err != nil {
			t.Errorf("%s: split kernel in the GO interpreter: %v", tc.name, err)
		}
		for i := range ref.ref {
			if ref.ref[i] == nil {
				continue
			}
			got := make([]byte, len(ref.ref[i]))
			if err := ref.bufs[i].CopyOut(got); err != nil {
				t.Fatal(err)
			}
			if string(got) != string(ref.ref[i]) {
				t.Errorf("%s: output %d is not bit for bit the unsplit kernel's", tc.name, i)
			}
		}
		ref.free()
		onCPU, err := newBench(cpu, ir.CPUTarget, k)
		if err != nil {
			t.Fatal(err)
		}
		cprogs, err := cpu.Compile([]*ir.Kernel{onCPU.rename(split)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := onCPU.check(cprogs[0]); err != nil {
			t.Errorf("%s: split kernel on the CPU: %v", tc.name, err)
		}
		onCPU.free()
	}
}

func countDivMod(k *ir.Kernel) int {
	n := 0
	ir.Walk(k.Stores, func(e *ir.Expr) {
		if (e.Op == ir.OpDiv || e.Op == ir.OpMod) && !e.DType.IsFloat() {
			n++
		}
	})
	return n
}

// TestMatvecReadsRowAtATime: the heuristic gives a matrix-vector product
// (a decode step's projection, plain or with a block-scaled weight) no
// block of rows (UPCAST of the row axis), which would read the rows side
// by side as many short streams, and a sum blocked into up to 4 vectors
// (UNROLL along the sum).
func TestMatvecReadsRowAtATime(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	graphs := map[string]*tensor.Tensor{
		"matvec":              floats(r, 1, 256).Dot(floats(r, 48, 256).T()),
		"block-scaled matvec": floats(r, 1, 128).Dot(blockScaled(r, 16, 128, false).T()),
	}
	forHeuristicKernels(t, graphs, func(name, kn string, tg ir.Target, k *ir.Kernel) {
		opts := tg.HeuristicOpts(k)
		unrolled := false
		for _, o := range opts {
			if o.Kind == ir.OptUpcast {
				t.Errorf("%s (%s), width %d: %s blocks rows", name, kn, tg.VecWidth, ir.FormatOpts(opts))
			}
			unrolled = unrolled || o.Kind == ir.OptUnroll && o.Amt >= tg.Width()
		}
		if !unrolled {
			t.Errorf("%s (%s), width %d: %s has no vector along the sum", name, kn, tg.VecWidth, ir.FormatOpts(opts))
		}
	})
}

// forHeuristicKernels calls f for every kernel of every graph with every
// heuristic target.
func forHeuristicKernels(t *testing.T, graphs map[string]*tensor.Tensor, f func(name, kn string, tg ir.Target, k *ir.Kernel)) {
	t.Helper()
	for name, x := range graphs {
		ks := map[string]*ir.Kernel{}
		add(t, ks, name, x, fuse.Options{})
		for kn, k := range ks {
			for _, tg := range heuristicTargets {
				f(name, kn, tg, k)
			}
		}
	}
}

// TestMatvecSumsActivationsOnce: in a matrix-vector product with a block
// offset (Q4_K's d*sc*q - dmin*m), the sums of x over a block, which
// every row's offset term needs and no row changes, are computed once
// per launch before the row loop (hoist_reduces), not again in every
// row: every reduce of the optimized kernel that reads no global axis is
// one Linearize evaluates before the global loops, and two products of
// the same x (the FFN's gate and up) share them.
func TestMatvecSumsActivationsOnce(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	x := floats(r, 1, 128)
	graphs := map[string]*tensor.Tensor{
		"block-affine matvec": floats(r, 1, 256).Dot(blockScaled(r, 24, 256, true).T()),
		"gated block matvecs": x.Dot(blockScaled(r, 16, 128, true).T()).Silu().Mul(x.Dot(blockScaled(r, 16, 128, true).T())),
		"Q4_K matvec":         floats(r, 1, 512).Dot(packedQ4K(t, r, 16, 512).T()),
	}
	forHeuristicKernels(t, graphs, func(name, kn string, tg ir.Target, k *ir.Kernel) {
		opts := tg.HeuristicOpts(k)
		nk, err := tg.Apply(k, opts)
		if err != nil {
			t.Fatalf("%s (%s): %v", name, kn, err)
		}
		p := ir.Linearize(nk)
		before := map[*ir.Expr]bool{}
		for _, e := range p.Hoisted[0].Nodes {
			before[e] = true
		}
		hoisted := 0
		bodies := map[string]bool{} // a sum's body, its loop variable named the same
		ir.Walk(nk.Stores, func(e *ir.Expr) {
			if e.Op != ir.OpReduce || readsGlobal(e) {
				return
			}
			if !before[e] {
				t.Errorf("%s (%s), width %d, %s: a sum that no row changes is computed in the row loop", name, kn, tg.VecWidth, ir.FormatOpts(opts))
			}
			loop := e.Arg.(*ir.ReduceArg).Axes[0].Name()
			body := strings.ReplaceAll(e.Src[0].String(), loop, "i")
			if bodies[body] {
				t.Errorf("%s (%s), width %d, %s: the sum %s is computed twice", name, kn, tg.VecWidth, ir.FormatOpts(opts), body)
			}
			bodies[body] = true
			hoisted++
		})
		if hoisted == 0 {
			t.Errorf("%s (%s), width %d, %s: no sum of x is computed before the row loop", name, kn, tg.VecWidth, ir.FormatOpts(opts))
		}
	})
}

func readsGlobal(e *ir.Expr) bool {
	found := false
	ir.Walk([]*ir.Expr{e}, func(x *ir.Expr) {
		found = found || x.Op == ir.OpVar && x.Arg.(*ir.Axis).Kind == ir.AxisGlobal
	})
	return found
}

// packedQ4K is a rows x cols Q4_K weight as the loader holds it: random
// values quantized, packed (quant.Pack) and dequantized by the lazy
// expression (nn.DequantPacked).
func packedQ4K(t *testing.T, r *rand.Rand, rows, cols int) *tensor.Tensor {
	t.Helper()
	return packed(t, r, quant.Q4_K, rows, cols)
}

// packed is a rows x cols weight of type qt in its packed layout
// (quant.Pack): random values quantized, packed and dequantized by the
// lazy expression (nn.DequantPacked).
func packed(t *testing.T, r *rand.Rand, qt quant.Type, rows, cols int) *tensor.Tensor {
	t.Helper()
	f := make([]float32, rows*cols)
	for i := range f {
		f[i] = float32(r.NormFloat64())
	}
	q, err := quant.Quantize(qt, f)
	if err == nil {
		q, err = quant.Pack(qt, q)
	}
	if err != nil {
		t.Fatal(err)
	}
	raw, err := tc.FromBytes(ir.Uint8, []int{len(q)}, q)
	if err != nil {
		t.Fatal(err)
	}
	w, err := nn.DequantPacked(raw, qt, []int{rows, cols})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestMatvecMinsOneHSum: the row's terms that hoist_reduces adds for a
// Q4_K product, -dmin*m(o) times the sum of x over sub-block o, are added
// lane by lane across the row's blocks of 256 weights (a vector multiply
// and add per block) and summed horizontally once per row, whatever the
// row's length: a horizontal sum per block (permutes, on one port) cost a
// 2048-long row ~10% of its time.
func TestMatvecMinsOneHSum(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, cols := range []int{512, 2048} {
		graphs := map[string]*tensor.Tensor{fmt.Sprintf("Q4_K matvec %d", cols): floats(r, 1, cols).Dot(packedQ4K(t, r, 16, cols).T())}
		forHeuristicKernels(t, graphs, func(name, kn string, tg ir.Target, k *ir.Kernel) {
			opts := tg.HeuristicOpts(k)
			nk, err := tg.Apply(k, opts)
			if err != nil {
				t.Fatalf("%s (%s): %v", name, kn, err)
			}
			if nk.SIMD == nil {
				t.Fatalf("%s (%s), width %d: no vector plan", name, kn, tg.VecWidth)
			}
			// the row's sums (the hoisted sums of x, before the rows,
			// have theirs): the accumulator's and the mins terms'
			n := 0
			for _, h := range nk.SIMD.HSums {
				if readsGlobal(h.Root) {
					n++
				}
			}
			if n == 0 || n > 2 {
				t.Errorf("%s (%s), width %d, %s: %d horizontal sums per row, want 1..2", name, kn, tg.VecWidth, ir.FormatOpts(opts), n)
			}
		})
	}
}

// TestQuantizedMatvecsInVectors: the matrix-vector products of the
// quantized types a Q4_K_M or Q5_K_M file holds (Q4_K and Q5_K packed as
// loaded, and Q6_K, whose high bits are shifted by 0 to 6 by sub-block: a
// scalar shift for all lanes), of Q2_K and Q3_K (packed as loaded), of
// IQ4_NL and IQ4_XS (packed: their nibbles index a non-linear grid, a chain
// of selects that becomes one permute's table), and of Q5_0 and Q5_1
// (each lane shifts its
// block's word of fifth bits by its own amount: a vector literal at 16
// lanes, an index plus the lane numbers at 8) accumulate in vectors at
// both widths (the simd pass has
// runs), and the optimized kernel agrees with the unoptimized one on the
// CPU and in the GO interpreter. Their sub-blocks' scales come from tables
// (ir.Tables) with results bit for bit those of the kernel computing them
// in the loop; Q6_K's at 16 lanes, whose blocks of 16 weights are one
// vector each, unrolled whole and two side by side (subBlockChains), from
// a family table (two scales a step, 16 a super-block in one loop); at 16 lanes the quants become floats by permutes of their values
// (tg_perm16: Q4_K's nibbles, Q6_K's low nibble and high bits), at 8 by
// converts.
func TestQuantizedMatvecsInVectors(t *testing.T) {
	cpu := cpuDevice(t)
	gdev, err := backend.Open("GO")
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(9, 10))
	graphs := map[string]*tensor.Tensor{
		"Q4_K matvec":   floats(r, 1, 512).Dot(packedQ4K(t, r, 16, 512).T()),
		"Q6_K matvec":   floats(r, 1, 512).Dot(quantized(t, r, quant.Q6_K, 16, 512).T()),
		"Q5_K matvec":   floats(r, 1, 512).Dot(packed(t, r, quant.Q5_K, 16, 512).T()),
		"Q5_0 matvec":   floats(r, 1, 512).Dot(quantized(t, r, quant.Q5_0, 16, 512).T()),
		"Q5_1 matvec":   floats(r, 1, 512).Dot(quantized(t, r, quant.Q5_1, 16, 512).T()),
		"Q2_K matvec":   floats(r, 1, 512).Dot(quantized(t, r, quant.Q2_K, 16, 512).T()),
		"Q3_K matvec":   floats(r, 1, 512).Dot(packed(t, r, quant.Q3_K, 16, 512).T()),
		"IQ4_NL matvec": floats(r, 1, 512).Dot(quantized(t, r, quant.IQ4_NL, 16, 512).T()),
		"IQ4_XS matvec": floats(r, 1, 512).Dot(packed(t, r, quant.IQ4_XS, 16, 512).T()),
	}
	for name, x := range graphs {
		s, err := fuse.Create([]*tensor.Node{x.Node()}, fuse.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range s.Items {
			for _, w := range []int{8, 16} {
				target := ir.CPUTarget
				target.VecWidth = w
				k, err := ir.OptimizeFor(it.Kernel, target, nil)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if k.SIMD == nil || len(k.SIMD.Accs) == 0 {
					t.Errorf("%s %s (width %d): no vector accumulators", name, k.Name, w)
				}
				src := render.Render(render.C, k)
				// Q6_K's sub-blocks of 16 are one vector at 16 lanes,
				// unrolled whole with two side by side: no block loop
				// is left, and the two sub-blocks' scales are a family
				// table filled 16 at a time. Q5_0's and Q5_1's blocks
				// have one scale each (no sub-blocks), as Q8_0's.
				// Q2_K's and Q3_K's sub-blocks are 16 weights too, and
				// Q2_K's have a minimum beside the scale: two family
				// tables.
				// IQ4_NL's blocks have one scale each as Q5_0's; IQ4_XS's
				// sub-blocks of 32 are two vectors at 16 lanes, unrolled
				// whole, which share their scale: a table without
				// sub-block sums.
				kquant := !strings.HasPrefix(name, "Q5_0") && !strings.HasPrefix(name, "Q5_1") && !strings.HasPrefix(name, "IQ4_NL")
				if tabled := k.Tabs != nil && strings.Contains(src, "tg_tab0["); tabled != kquant {
					t.Errorf("%s %s (width %d): the sub-blocks' scales tabled %v:\n%s", name, k.Name, w, tabled, k.Dump())
				}
				families := 0
				for i := 0; k.Tabs != nil && i < len(k.Tabs.Tabs); i++ {
					if k.Tabs.Tabs[i].Family != nil {
						families++
					}
				}
				wantFamilies := 0
				if w == 16 {
					wantFamilies = map[string]int{"Q6_K matvec": 1, "Q3_K matvec": 1, "Q2_K matvec": 2}[name]
				}
				if families != wantFamilies || families > 0 && !strings.Contains(src, "< 16; ridx") {
					t.Errorf("%s %s (width %d): %d family tables, want %d:\n%s", name, k.Name, w, families, wantFamilies, src)
				}
				if whole := strings.Contains(ir.FormatOpts(k.Opts), "UNROLL(5,16) UNROLL(4,2)"); whole != (w == 16 && name == "Q6_K matvec") {
					t.Errorf("%s %s (width %d): opts %s", name, k.Name, w, ir.FormatOpts(k.Opts))
				}
				if nib := strings.Contains(src, "tg_perm16("); nib != (w == 16) {
					t.Errorf("%s %s (width %d): nibbles converted by permutes %v", name, k.Name, w, nib)
				}
				// IQ4's grid is no line: at 8 lanes two permutes of 8 and a
				// select, where the linear tables convert
				if grid := strings.Contains(src, "tg_perm8x2("); grid != (w == 8 && strings.HasPrefix(name, "IQ4")) {
					t.Errorf("%s %s (width %d): a grid's two 8-lane permutes %v", name, k.Name, w, grid)
				}
				// Q2_K's d·sc·q − dmin·m: the scale and the minimum in the
				// permuted table (offsetPerm), one multiply-add a vector
				offset := regexp.MustCompile(`tg_perm16\(\(\(vbc\d+\*\(\(tg_f16\)\{[-0-9,]*\}\)\)-vbc\d+\)`).MatchString(src)
				if want := w == 16 && name == "Q2_K matvec"; offset != want {
					t.Errorf("%s %s (width %d): the minimum folded into the table %v, want %v:\n%s", name, k.Name, w, offset, want, src)
				}
				// every table filled a vector at a time: 16 lanes along
				// a family's loop of 16 scales at 16, the 8 bytes of
				// Q4_K's, Q5_K's, Q3_K's and IQ4_XS's super-block scales
				// (over loops of 4x2 for the K types), 8 at 8 lanes
				for i := 0; k.Tabs != nil && i < len(k.Tabs.Tabs); i++ {
					tb := k.Tabs.Tabs[i]
					want := 8
					if w == 16 && tb.Family != nil {
						want = 16
					}
					if tb.Fill.W != want || !strings.Contains(src, fmt.Sprintf("tg_store(&tg_tab%d[", i)) {
						t.Errorf("%s %s (width %d): table %d filled %d lanes at a time (%d loops whole), want %d:\n%s", name, k.Name, w, i, tb.Fill.W, tb.FillAxes, want, src)
					}
					// the verifier proves each lane is the value at its element
					bad := *k
					tabs := *k.Tabs
					tabs.Tabs = slices.Clone(k.Tabs.Tabs)
					tabs.Tabs[i].Fill.L[0], tabs.Tabs[i].Fill.L[1] = tb.Fill.L[1], tb.Fill.L[0]
					bad.Tabs = &tabs
					if err := bad.Verify(); err == nil || !strings.Contains(err.Error(), "fill lane") {
						t.Errorf("%s %s (width %d): table %d's fill with two lanes swapped verified: %v", name, k.Name, w, i, err)
					}
				}
				// the loops whose variable shifts the high bits (Q3_K's
				// and Q5_K's by sub-block, Q6_K's two, Q2_K's 2-bit
				// quants) unrolled whole by gcc (ir.ValueLoops); not
				// Q4_K's or IQ4_XS's choice of a nibble
				loops := 0
				if k.ValueLoops != nil {
					loops = len(k.ValueLoops.Axes)
				}
				wantLoops := map[string]int{"Q2_K matvec": 1, "Q3_K matvec": 2, "Q5_K matvec": 2, "Q6_K matvec": 2}[name]
				if dump := k.Dump(); strings.Count(dump, "  unrolled ") != wantLoops || k.Tabs != nil && strings.Count(dump, "; filled ") != len(k.Tabs.Tabs) {
					t.Errorf("%s %s (width %d): the DEBUG=5 dump lacks the fills or the unrolled loops:\n%s", name, k.Name, w, dump)
				}
				if loops != wantLoops || strings.Count(src, "#pragma GCC unroll") != wantLoops {
					t.Errorf("%s %s (width %d): %d loops unrolled whole, want %d:\n%s", name, k.Name, w, loops, wantLoops, src)
				}
				if loops > 0 {
					bad := *k
					bad.ValueLoops = &ir.ValueLoops{Axes: append(slices.Clone(k.ValueLoops.Axes), k.ReduceAxes()[0])}
					if err := bad.Verify(); err == nil || !strings.Contains(err.Error(), "value_loops") {
						t.Errorf("%s %s (width %d): a reduce's first loop unrolled whole verified: %v", name, k.Name, w, err)
					}
				}
				if k.Tabs != nil {
					inLoop := *k
					inLoop.Tabs = nil
					tabled, err1 := newBench(cpu, target, k)
					plain, err2 := newBench(cpu, target, &inLoop)
					if err1 != nil || err2 != nil {
						t.Fatal(err1, err2)
					}
					if string(tabled.ref[0]) != string(plain.ref[0]) {
						t.Errorf("%s %s (width %d): the tables changed the results", name, k.Name, w)
					}
					tabled.free()
					plain.free()
				}
				for _, dev := range []backend.Device{cpu, gdev} {
					ref, err := newBench(dev, target, it.Kernel)
					if err != nil {
						t.Fatal(err)
					}
					progs, err := dev.Compile([]*ir.Kernel{ref.rename(k)})
					if err != nil {
						t.Fatal(err)
					}
					if _, err := ref.check(progs[0]); err != nil {
						t.Errorf("%s %s (width %d) on %s: %v", name, k.Name, w, dev.Name(), err)
					}
					ref.free()
				}
			}
		}
	}
}

// quantized is a rows x cols weight of type qt in the file's layout:
// random values quantized and dequantized by the lazy expression
// (nn.Dequant).
func quantized(t *testing.T, r *rand.Rand, qt quant.Type, rows, cols int) *tensor.Tensor {
	t.Helper()
	f := make([]float32, rows*cols)
	for i := range f {
		f[i] = float32(r.NormFloat64())
	}
	q, err := quant.Quantize(qt, f)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := tc.FromBytes(ir.Uint8, []int{len(q)}, q)
	if err != nil {
		t.Fatal(err)
	}
	w, err := nn.Dequant(raw, qt, []int{rows, cols})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// lastKernel16 is x's schedule's last kernel optimized for the CPU at 16
// lanes.
func lastKernel16(t *testing.T, x *tensor.Tensor) *ir.Kernel {
	t.Helper()
	s, err := fuse.Create([]*tensor.Node{x.Node()}, fuse.Options{})
	if err != nil {
		t.Fatal(err)
	}
	target := ir.CPUTarget
	target.VecWidth = 16
	k, err := ir.OptimizeFor(s.Items[len(s.Items)-1].Kernel, target, nil)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestTablesVerify: Verify accepts a Q4_K matrix-vector kernel's tables
// plan and refuses it with an element moved by one, with a loop its value
// does not read dropped, with a value that reads the block's sum, and
// with a table too large.
func TestTablesVerify(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	k := lastKernel16(t, floats(r, 1, 512).Dot(packedQ4K(t, r, 16, 512).T()))
	if k.Tabs == nil || len(k.Tabs.Tabs) != 1 || k.Tabs.Tabs[0].Size() != 16 || k.Verify() != nil {
		t.Fatalf("want one verified table of 16 sub-block scales:\n%s", k.Dump())
	}
	if !strings.Contains(k.Dump(), "table 0 over") {
		t.Errorf("the dump does not show the plan:\n%s", k.Dump())
	}
	tab := k.Tabs.Tabs[0]
	var sum *ir.Expr // the block's sum the value multiplies
	ir.Walk(k.Stores, func(e *ir.Expr) {
		if e.Op == ir.OpMul && e.Src[0] == tab.Value && e.Src[1].Op == ir.OpReduce {
			sum = e
		}
	})
	if sum == nil {
		t.Fatalf("no product of the table's value and a block's sum:\n%s", k.Dump())
	}
	breaks := []struct {
		name, want string
		f          func(tb *ir.Table)
	}{
		{"element moved", "not its loops flattened", func(tb *ir.Table) { tb.Col = k.B.Add(tb.Col, k.B.Int(1)) }},
		{"loop dropped", "reads", func(tb *ir.Table) { tb.Axes = tb.Axes[1:] }},
		{"value reads a reduce", "reads a reduce", func(tb *ir.Table) { tb.Value = sum }},
		{"too large", "elements", func(tb *ir.Table) {
			tb.Axes = append(tb.Axes, &ir.Axis{ID: 999, Size: ir.MaxTable, Kind: ir.AxisReduce})
		}},
	}
	for _, br := range breaks {
		nk := *k
		tb := tab
		tb.Axes = append([]*ir.Axis{}, tab.Axes...)
		br.f(&tb)
		nk.Tabs = &ir.Tables{Tabs: []ir.Table{tb}}
		if err := nk.Verify(); err == nil || !strings.Contains(err.Error(), br.want) {
			t.Errorf("%s: Verify says %v, want %q", br.name, err, br.want)
		}
	}
}

// TestFamilyTableVerify: a Q6_K matrix-vector kernel at 16 lanes gets a
// family table (its two unrolled sub-blocks' scales, one loop of 16 over a
// super-block's scale bytes), which Verify accepts, and refuses with a
// member's element moved, the members swapped, an inner loop dropped, and
// a value that reads the inner loops instead of the table's own.
func TestFamilyTableVerify(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	k := lastKernel16(t, floats(r, 1, 512).Dot(quantized(t, r, quant.Q6_K, 16, 512).T()))
	if k.Tabs == nil || len(k.Tabs.Tabs) != 1 || k.Tabs.Tabs[0].Family == nil || k.Verify() != nil {
		t.Fatalf("want one verified family table:\n%s", k.Dump())
	}
	tab := k.Tabs.Tabs[0]
	f := tab.Family
	if len(f.Members) != 2 || f.Axis.Size != 16 || tab.Size() != 32 {
		t.Fatalf("want 2 members, a loop of 16 and 32 elements (two super-blocks): %d, %d, %d\n%s", len(f.Members), f.Axis.Size, tab.Size(), k.Dump())
	}
	if !strings.Contains(k.Dump(), "and the members") {
		t.Errorf("the dump does not show the family:\n%s", k.Dump())
	}
	breaks := []struct {
		name, want string
		f          func(tb *ir.Table, fm *ir.Family)
	}{
		{"element moved", "member 1's element", func(tb *ir.Table, fm *ir.Family) { fm.Cols[1] = fm.Cols[0] }},
		{"members swapped", "member 0 is not the value", func(tb *ir.Table, fm *ir.Family) {
			fm.Members[0], fm.Members[1] = fm.Members[1], fm.Members[0]
		}},
		{"inner loop dropped", "a loop of 16 over 8", func(tb *ir.Table, fm *ir.Family) { fm.Inner = fm.Inner[1:] }},
		{"value reads the inner loops", "value reads", func(tb *ir.Table, fm *ir.Family) { tb.Value = fm.Members[0] }},
	}
	for _, br := range breaks {
		nk := *k
		tb := tab
		fm := *f
		fm.Members, fm.Cols, fm.Inner = slices.Clone(f.Members), slices.Clone(f.Cols), slices.Clone(f.Inner)
		tb.Family = &fm
		br.f(&tb, &fm)
		nk.Tabs = &ir.Tables{Tabs: []ir.Table{tb}}
		if err := nk.Verify(); err == nil || !strings.Contains(err.Error(), br.want) {
			t.Errorf("%s: Verify says %v, want %q", br.name, err, br.want)
		}
	}
}

// TestSearchPartialWrite: a kernel that writes one row of its output (a
// KV cache's position, at vars[0]: the row of sums of 64 rows of 32) is
// searched like any other: the reference runs on poisoned outputs as the
// candidates do, so the rows it leaves alone compare equal. (Before, the
// reference's untouched memory against the candidates' poison failed
// every candidate, the heuristic's first, and the search gave up.) A
// candidate that writes NaN over part of the row still fails its check.
func TestSearchPartialWrite(t *testing.T) {
	cpu := cpuDevice(t)
	b := ir.NewBuilder()
	g := &ir.Axis{ID: 0, Size: 64, Kind: ir.AxisGlobal}
	r := &ir.Axis{ID: 1, Size: 32, Kind: ir.AxisReduce}
	pos := b.ParamIn(ir.ParamArg{Index: 0, Name: "start_pos", Min: 0, Max: 63})
	sum := b.Reduce(&ir.ReduceArg{Op: ir.OpSum, Axes: []*ir.Axis{r}}, b.Load(1, ir.Float32, b.Add(b.Mul(b.Var(g), b.Int(32)), b.Var(r)), nil))
	at := b.Add(b.Mul(pos, b.Int(64)), b.Var(g))
	mk := func(val *ir.Expr) *ir.Kernel {
		return &ir.Kernel{Name: "r_64_32", B: b, Global: []*ir.Axis{g}, NumParams: 1,
			Bufs:   []ir.BufParam{{DType: ir.Float32, Size: 64 * 64, Output: true}, {DType: ir.Float32, Size: 64 * 32}},
			Stores: []*ir.Expr{b.Store(0, at, val)}}
	}
	k := mk(sum)
	bn, err := newBench(cpu, ir.CPUTarget, k)
	if err != nil {
		t.Fatal(err)
	}
	defer bn.free()
	holes := mk(b.Alu(ir.OpWhere, b.Alu(ir.OpCmpLt, b.Var(g), b.Int(60)), sum, b.Const(ir.Float32, math.NaN())))
	checkGoodBad(t, cpu, bn, k, holes, "a kernel writing NaN over part of the row")
	s := New(cpu, Options{Width: 2, Budget: 10 * time.Second, Dir: t.TempDir()})
	s.Choose(k)
	if s.Stats.Searched != 1 || s.Stats.Candidates < 2 {
		t.Errorf("stats after the search: %+v, want a search of several candidates", s.Stats)
	}
}
