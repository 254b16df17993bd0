package nn_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"tgc/pkg/fuse"
	"tgc/pkg/half"
	"tgc/pkg/ir"
	"tgc/pkg/nn"
	"tgc/pkg/quant"
	"tgc/pkg/realize"
	"tgc/pkg/render"
	"tgc/pkg/tensor"
)

// halfFields are the byte offsets of the float16 fields of each block
// (scales and mins), which random bytes must not make NaN or infinite.
var halfFields = map[quant.Type][]int{
	quant.Q8_0: {0}, quant.Q4_0: {0}, quant.Q4_1: {0, 2}, quant.Q4_K: {0, 2}, quant.Q6_K: {208},
	quant.Q5_0: {0}, quant.Q5_1: {0, 2}, quant.Q5_K: {0, 2}, quant.Q2_K: {80, 82}, quant.Q3_K: {108}, quant.IQ4_NL: {0}, quant.IQ4_XS: {0},
}

// randomBlocks is nb blocks of random bytes (every bit pattern of the
// quants, the packed scales and the signs) with finite float16 scales.
func randomBlocks(r *rand.Rand, t quant.Type, nb int) []byte {
	bb := t.BlockBytes()
	data := make([]byte, nb*bb)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	for b := range nb {
		for _, off := range halfFields[t] {
			v := float32(r.NormFloat64() * 0.05)
			binary.LittleEndian.PutUint16(data[b*bb+off:], half.FromFloat32(v))
		}
	}
	if t == quant.F16 {
		for i := 0; i < len(data); i += 2 {
			binary.LittleEndian.PutUint16(data[i:], half.FromFloat32(float32(r.NormFloat64())))
		}
	}
	if t == quant.F32 {
		for i := 0; i < len(data); i += 4 {
			binary.LittleEndian.PutUint32(data[i:], math.Float32bits(float32(r.NormFloat64())))
		}
	}
	return data
}

// layouts are the in-memory layouts of a type's blocks the loader uses:
// the file's, and the packed kernel layout where the type has one.
func layouts(typ quant.Type) []bool {
	if quant.HasPacked(typ) {
		return []bool{false, true}
	}
	return []bool{false}
}

// dequant is nn.Dequant of the file's blocks, or nn.DequantPacked of
// quant.Pack of them.
func dequant(ctx *tensor.Context, typ quant.Type, data []byte, shape []int, packed bool) (*tensor.Tensor, error) {
	if packed {
		var err error
		if data, err = quant.Pack(typ, data); err != nil {
			return nil, err
		}
	}
	raw, err := ctx.FromBytes(ir.Uint8, []int{len(data)}, data)
	if err != nil {
		return nil, err
	}
	if packed {
		return nn.DequantPacked(raw, typ, shape)
	}
	return nn.Dequant(raw, typ, shape)
}

// TestDequantMatchesReference: the engine's dequantization expression of
// every tensor type gives pkg/quant's values, block by block: bit for bit
// on GO (the same float32 operations in the same order), within 1e-6
// relative on the compiled devices (the C compiler may fuse a multiply
// and an add). BF16 is fed every bit pattern (NaN, infinities,
// subnormals) in its random bytes.
func TestDequantMatchesReference(t *testing.T) {
	for _, dev := range []string{"GO", "CPU", "CL", "CUDA"} {
		ctx, _, err := realize.NewContext(dev, realize.Options{})
		if err != nil {
			t.Logf("skipping %s: %v", dev, err)
			continue
		}
		for _, typ := range quant.SupportedTypes() {
			r := rand.New(rand.NewPCG(uint64(typ), 3))
			rows, cols := 3, 2*max(typ.BlockSize(), 32)
			nb := rows * cols / typ.BlockSize()
			data := randomBlocks(r, typ, nb)
			want := make([]float32, rows*cols)
			if err := quant.Dequantize(typ, want, data); err != nil {
				t.Fatal(err)
			}
			for _, packed := range layouts(typ) {
				w, err := dequant(ctx, typ, data, []int{rows, cols}, packed)
				if err != nil {
					t.Fatalf("%s (packed %v): %v", typ, packed, err)
				}
				got, err := w.Floats()
				if err != nil {
					t.Fatalf("%s on %s (packed %v): %v", typ, dev, packed, err)
				}
				for i := range want {
					g, x := float32(got[i]), want[i]
					same := g == x || math.IsNaN(float64(g)) && math.IsNaN(float64(x))
					if dev != "GO" && !same {
						same = math.Abs(float64(g-x)) <= 1e-6*math.Abs(float64(x))
					}
					if !same {
						t.Errorf("%s on %s (packed %v): element %d (block %d) is %v, want %v", typ, dev, packed, i, i/typ.BlockSize(), g, x)
						break
					}
				}
			}
		}
	}
}

// TestDequantFusesIntoMatmul: a matrix-vector product with a quantized
// weight (decode) is one kernel that reads the raw blocks; no buffer of
// the dequantized weight exists. For a batch of rows (prefill) the fusion
// cost model (fuse/cost.go) may store the dequantized weight first, once,
// at its own size (recomputing its bit operations for every row costs
// more than loading it), from one kernel that reads the blocks.
func TestDequantFusesIntoMatmul(t *testing.T) {
	ctx := tensor.NewContext(nil)
	for _, typ := range quant.SupportedTypes() {
		n, k := 64, 512
		nb := n * k / typ.BlockSize()
		for _, packed := range layouts(typ) {
			w, err := dequant(ctx, typ, make([]byte, nb*typ.BlockBytes()), []int{n, k}, packed)
			if err != nil {
				t.Fatal(err)
			}
			fusesIntoMatmul(t, ctx, typ, w, n, k)
		}
	}
}

// fusesIntoMatmul checks the kernels of x·wᵀ for 1 and 128 rows of x,
// written as a broadcast product and sum and as models/llama.tg's
// Linear writes it, x @ w.T (whose transposed views the fusion's cost
// model follows to the weight's scales: Q2_K's, Q3_K's and the file
// layout of Q4_K's cost more than a load to recompute, and are computed
// once per sub-block, not stored).
func fusesIntoMatmul(t *testing.T, ctx *tensor.Context, typ quant.Type, w *tensor.Tensor, n, k int) {
	t.Helper()
	for _, c := range []struct {
		rows int
		dot  bool
	}{{1, false}, {128, false}, {1, true}, {128, true}} {
		rows := c.rows
		x := ctx.Full([]int{rows, k}, 1, ir.Float32)
		y := x.Reshape(rows, 1, k).Mul(w).Sum(false, -1)
		if c.dot {
			y = x.Dot(w.T())
		}
		s, err := fuse.Create([]*tensor.Node{y.Node()}, fuse.Options{})
		if err != nil {
			t.Fatal(err)
		}
		items := s.Items
		if rows > 1 && len(items) == 2 {
			deq := items[0]
			if deq.Out.Numel() != n*k || deq.Kernel.Kind() != "E" {
				t.Errorf("%s, %d rows: the weight is stored as %s, want its %d elements by one elementwise kernel:\n%s", typ, rows, deq.Out, n*k, s.Dump())
			}
			for _, a := range deq.Args[1:] {
				if a.Realized() == nil || a.Op != ir.OpBuffer || a.DType == ir.Float32 && typ != quant.F32 {
					t.Errorf("%s, %d rows: the dequantization reads %s, not the blocks", typ, rows, a)
				}
			}
			items = items[1:]
		}
		if len(items) != 1 {
			t.Errorf("%s, %d rows: %d kernels, want 1:\n%s", typ, rows, len(s.Items), s.Dump())
			continue
		}
		for _, a := range items[0].Args[1:] {
			if rows > 1 && len(s.Items) == 2 && a == s.Items[0].Out {
				continue
			}
			if a.Realized() == nil || a.Op != ir.OpBuffer {
				t.Errorf("%s: the matmul reads a computed buffer %s", typ, a)
			}
			if a.DType == ir.Float32 && a.Numel() >= n*k && typ != quant.F32 {
				t.Errorf("%s: the matmul reads a float32 weight %s", typ, a)
			}
		}
	}
}

// TestQ8MatvecBlockLoop: a Q8_0 matrix-vector row, as the CPU heuristic
// blocks it with AVX-512, sums its blocks in two accumulators (even and
// odd: the block axis unrolled by 2, ir's blockChains) and broadcasts each
// block's float16 scale as a vector conversion (tg_bh16). The results
// are TestDequantMatmul's.
func TestQ8MatvecBlockLoop(t *testing.T) {
	ctx := tensor.NewContext(nil)
	n, k := 64, 768
	w, err := dequant(ctx, quant.Q8_0, make([]byte, n*k/32*34), []int{n, k}, false)
	if err != nil {
		t.Fatal(err)
	}
	x := ctx.Full([]int{1, k}, 1, ir.Float32)
	s, err := fuse.Create([]*tensor.Node{x.Reshape(1, 1, k).Mul(w).Sum(false, -1).Node()}, fuse.Options{HoistReduces: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Items) != 1 {
		t.Fatalf("%d kernels, want 1:\n%s", len(s.Items), s.Dump())
	}
	target := ir.Target{Upcast: true, VecWidth: 16, VecRegs: 32, FMAWidth: 16}
	kern, err := ir.OptimizeFor(s.Items[0].Kernel, target, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := ir.FormatOpts(kern.Opts); !strings.Contains(got, "UNROLL(0,2)") {
		t.Errorf("opts %s: the block axis is not unrolled by 2", got)
	}
	src := render.Render(render.C, kern)
	if c := strings.Count(src, "tg_bh16(&"); c != 2 {
		t.Errorf("%d scales broadcast as tg_bh16, want 2 (one per accumulator):\n%s", c, src)
	}
}

// TestQuantRowsPrefetched: a matrix-vector product reading a quantized or
// float16 weight prefetches its rows at least 3 KiB and two rows ahead
// (the prefetch pass's narrow loads: rows of 768 weights are 1536 bytes
// in float16, 2 rows ahead; 816 in Q8_0, 4 ahead; 630 in Q6_K, 5; 384 or
// 432 in Q4_0 and Q4_K, 8), one prefetch for a line of each row's stream,
// up to the last row (not only within a launch's piece), where the target
// knows its L2; a product of 128 rows (each weight byte
// used 256 flops: a prompt's prefill) and a target without cache sizes
// prefetch nothing. TestDequantMatmul runs the kernels with their
// prefetches.
func TestQuantRowsPrefetched(t *testing.T) {
	ctx := tensor.NewContext(nil)
	xeon := ir.Target{Upcast: true, VecWidth: 16, VecRegs: 32, FMAWidth: 16, L1: 48 << 10, L2: 2 << 20, L3: 4 << 20}
	kernel := func(typ quant.Type, packed bool, rows int, target ir.Target) *ir.Kernel {
		n, k := 64, 768
		w, err := dequant(ctx, typ, make([]byte, n*k/typ.BlockSize()*typ.BlockBytes()), []int{n, k}, packed)
		if err != nil {
			t.Fatal(err)
		}
		x := ctx.Full([]int{rows, k}, 1, ir.Float32)
		s, err := fuse.Create([]*tensor.Node{x.Reshape(rows, 1, k).Mul(w).Sum(false, -1).Node()}, fuse.Options{HoistReduces: true})
		if err != nil {
			t.Fatal(err)
		}
		kern, err := ir.OptimizeFor(s.Items[len(s.Items)-1].Kernel, target, nil)
		if err != nil {
			t.Fatal(err)
		}
		return kern
	}
	for _, typ := range []quant.Type{quant.Q8_0, quant.Q4_0, quant.Q4_K, quant.Q6_K, quant.F16} {
		for _, packed := range layouts(typ) {
			k := kernel(typ, packed, 1, xeon)
			if k.Prefetch == nil || len(k.Prefetch.Loads) == 0 {
				t.Errorf("%s (packed %v): no prefetch:\n%s", typ, packed, k.Dump())
				continue
			}
			src := render.Render(render.C, k)
			for ld, at := range k.Prefetch.Loads {
				row := at.Dist * int64(ld.DType.Size())
				// rows of 1536 bytes (float16), 816 (Q8_0 blocks), 630 (Q6_K),
				// 432 (Q4_0, Q4_K blocks) and 384 (packed Q4_K nibbles)
				want := map[int64]int64{1536: 2, 816: 4, 630: 5, 432: 8, 384: 8}[row]
				if at.Ahead != want || at.Next != k.Global[0] || ld.DType.Size() > 2 {
					t.Errorf("%s (packed %v): prefetch of %s rows of %d bytes %d %s ahead, want a narrow load %d rows ahead", typ, packed, ld.DType, row, at.Ahead, at.Next.Name(), want)
				}
				// guarded by the split loop's whole trip, not the piece's end
				if !strings.Contains(src, fmt.Sprintf("gidx0 + %d < %d ?", at.Ahead, k.Global[0].Size)) {
					t.Errorf("%s: no prefetch %d rows ahead in the C source:\n%s", typ, at.Ahead, src)
				}
			}
			if n := strings.Count(src, "__builtin_prefetch(&in"); n != len(k.Prefetch.Loads) {
				t.Errorf("%s: %d prefetches in the C source for %d planned:\n%s", typ, n, len(k.Prefetch.Loads), src)
			}
		}
		if k := kernel(typ, false, 128, xeon); k.Prefetch != nil && len(k.Prefetch.Loads) > 0 {
			t.Errorf("%s, 128 rows: prefetches:\n%s", typ, k.Dump())
		}
		if k := kernel(typ, false, 1, ir.Target{Upcast: true, VecWidth: 16, VecRegs: 32}); k.Prefetch != nil {
			t.Errorf("%s without cache sizes: prefetches:\n%s", typ, k.Dump())
		}
	}
}

// TestDequantMatmul: a matmul reading quantized weights (its reduce split
// into the blocks, the dequantization in vector lanes on the CPU) equals
// a float64 product with pkg/quant's weights, for one row (a decode step)
// and several, on every device.
func TestDequantMatmul(t *testing.T) {
	for _, dev := range []string{"GO", "CPU", "CL", "CUDA"} {
		ctx, _, err := realize.NewContext(dev, realize.Options{})
		if err != nil {
			t.Logf("skipping %s: %v", dev, err)
			continue
		}
		for _, typ := range quant.SupportedTypes() {
			r := rand.New(rand.NewPCG(uint64(typ), 9))
			n, k := 24, 512
			data := randomBlocks(r, typ, n*k/typ.BlockSize())
			if typ == quant.BF16 { // finite weights (random bits overflow a float32 sum)
				f := make([]float32, n*k)
				for i := range f {
					f[i] = float32(r.NormFloat64())
				}
				data, _ = quant.Quantize(typ, f)
			}
			w := make([]float32, n*k)
			if err := quant.Dequantize(typ, w, data); err != nil {
				t.Fatal(err)
			}
			for _, packed := range layouts(typ) {
				wt, err := dequant(ctx, typ, data, []int{n, k}, packed)
				if err != nil {
					t.Fatal(err)
				}
				matmulMatches(t, ctx, r, dev, typ, packed, wt, w, n, k)
			}
		}
	}
}

// matmulMatches checks x·wtᵀ against float64 with w, for 1 and 3 rows of x.
func matmulMatches(t *testing.T, ctx *tensor.Context, r *rand.Rand, dev string, typ quant.Type, packed bool, wt *tensor.Tensor, w []float32, n, k int) {
	t.Helper()
	for _, rows := range []int{1, 3} {
		xs := make([]float64, rows*k)
		for i := range xs {
			xs[i] = r.NormFloat64()
		}
		x, _ := ctx.FromFloats(ir.Float32, []int{rows, k}, xs)
		got, err := x.Reshape(rows, 1, k).Mul(wt).Sum(false, -1).Floats()
		if err != nil {
			t.Fatalf("%s %s (packed %v): %v", dev, typ, packed, err)
		}
		for i := range rows {
			for j := range n {
				var want, scale float64
				for c := range k {
					p := float64(float32(xs[i*k+c])) * float64(w[j*k+c])
					want += p
					scale += math.Abs(p)
				}
				if g := got[i*n+j]; math.Abs(g-want) > 1e-5*scale || math.IsNaN(g) != math.IsNaN(want) {
					t.Fatalf("%s %s (packed %v), %d rows: out[%d,%d] = %v, want %v", dev, typ, packed, rows, i, j, g, want)
				}
			}
		}
	}
}

// TestNibbleFloats: int32 lanes that are a function of other lanes' low
// 4 bits (x & 15 for any x, negative ones too; a byte's high nibble b >>
// 4; Q4_0's nibble - 8; Q6_K's low nibble plus two high bits times 16,
// minus 32), summed along rows (exact in float32), are right on every
// device; on a 16-lane target the C kernel converts each with a permute
// of its 16 values (tg_perm16, which reads the index's low 4 bits: the
// masks, shifts and offsets are not computed), on an 8-lane one with a
// convert.
func TestNibbleFloats(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const rows, cols = 16, 256
	ints, bytes, ones := make([]float64, rows*cols), make([]float64, rows*cols), make([]float64, cols)
	for i := range ints {
		ints[i] = float64(int32(r.Uint32()))
		bytes[i] = float64(r.IntN(256))
	}
	for i := range ones {
		ones[i] = 1
	}
	ints[0], ints[1], ints[2] = math.MinInt32, -1, math.MaxInt32
	rowSums := func(v *tensor.Tensor) *tensor.Tensor {
		o, _ := v.Context().FromFloats(ir.Float32, []int{cols}, ones)
		return v.Cast(ir.Float32).Mul(o).Sum(false, 1)
	}
	cases := []struct {
		name string
		f    func(ctx *tensor.Context) *tensor.Tensor
		elem func(i int) int
	}{
		{"x & 15", func(ctx *tensor.Context) *tensor.Tensor {
			x, _ := ctx.FromFloats(ir.Int32, []int{rows, cols}, ints)
			return rowSums(x.And(x.Const(15, ir.Int32)))
		}, func(i int) int { return int(int32(ints[i]) & 15) }},
		{"b >> 4", func(ctx *tensor.Context) *tensor.Tensor {
			b, _ := ctx.FromFloats(ir.Uint8, []int{rows, cols}, bytes)
			x := b.Cast(ir.Int32)
			return rowSums(x.Shr(x.Const(4, ir.Int32)))
		}, func(i int) int { return int(bytes[i]) >> 4 }},
		{"(x & 15) - 8", func(ctx *tensor.Context) *tensor.Tensor {
			x, _ := ctx.FromFloats(ir.Int32, []int{rows, cols}, ints)
			return rowSums(x.And(x.Const(15, ir.Int32)).Sub(x.Const(8, ir.Int32)))
		}, func(i int) int { return int(int32(ints[i])&15) - 8 }},
		{"(x & 15) + ((b >> 2) & 3) * 16 - 32", func(ctx *tensor.Context) *tensor.Tensor {
			x, _ := ctx.FromFloats(ir.Int32, []int{rows, cols}, ints)
			b, _ := ctx.FromFloats(ir.Uint8, []int{rows, cols}, bytes)
			c := func(v int) *tensor.Tensor { return x.Const(float64(v), ir.Int32) }
			hi := b.Cast(ir.Int32).Shr(c(2)).And(c(3)).Mul(c(16))
			return rowSums(x.And(c(15)).Add(hi).Sub(c(32)))
		}, func(i int) int { return int(int32(ints[i])&15) + (int(bytes[i])>>2&3)*16 - 32 }},
	}
	for _, c := range cases {
		for _, w := range []int{8, 16} {
			s, err := fuse.Create([]*tensor.Node{c.f(tensor.NewContext(nil)).Node()}, fuse.Options{})
			if err != nil {
				t.Fatal(err)
			}
			k, err := ir.OptimizeFor(s.Items[len(s.Items)-1].Kernel, ir.Target{Upcast: true, VecWidth: w, VecRegs: 32}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if src := render.Render(render.C, k); strings.Contains(src, "tg_perm16(") != (w == 16) || w == 16 && strings.Contains(src, "&vbc") {
				t.Errorf("%s, %d lanes: want tg_perm16 (and no AND) at 16 lanes only:\n%s", c.name, w, src)
			}
		}
		for _, dev := range []string{"GO", "CPU", "CL", "CUDA"} {
			ctx, _, err := realize.NewContext(dev, realize.Options{})
			if err != nil {
				continue
			}
			got, err := c.f(ctx).Floats()
			if err != nil {
				t.Fatalf("%s on %s: %v", c.name, dev, err)
			}
			for i, g := range got {
				want := 0
				for j := range cols {
					want += c.elem(i*cols + j)
				}
				if g != float64(want) {
					t.Fatalf("%s on %s: row %d sums to %v, want %d", c.name, dev, i, g, want)
				}
			}
		}
	}
}

// TestScaledPermExact: a nibble's float (Q4_0's q - 8) times a scale
// broadcast over its row, summed along the row, is on a 16-lane target the
// permute of the scaled table ((table*d)[q], one multiply a row instead of
// one a vector: Q4_0's matrix-vector rows 41.6–42.2 → 37.7–38.9 µs), the
// same float multiply. Scales of a few bits keep the sums exact in any
// order, so every device gives the row sums worked out here.
func TestScaledPermExact(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const rows, cols = 16, 256
	nib, scale, ones := make([]float64, rows*cols), make([]float64, rows), make([]float64, cols)
	for i := range nib {
		nib[i] = float64(r.IntN(256))
	}
	for i := range scale {
		scale[i] = float64(i+1) / float64(int(1)<<(i%5))
	}
	for i := range ones {
		ones[i] = 1
	}
	f := func(ctx *tensor.Context) *tensor.Tensor {
		b, _ := ctx.FromFloats(ir.Uint8, []int{rows, cols}, nib)
		d, _ := ctx.FromFloats(ir.Float32, []int{rows, 1}, scale)
		o, _ := ctx.FromFloats(ir.Float32, []int{cols}, ones)
		x := b.Cast(ir.Int32)
		q := x.And(x.Const(15, ir.Int32)).Sub(x.Const(8, ir.Int32))
		return q.Cast(ir.Float32).Mul(d).Mul(o).Sum(false, 1)
	}
	s, err := fuse.Create([]*tensor.Node{f(tensor.NewContext(nil)).Node()}, fuse.Options{})
	if err != nil {
		t.Fatal(err)
	}
	k, err := ir.OptimizeFor(s.Items[len(s.Items)-1].Kernel, ir.Target{Upcast: true, VecWidth: 16, VecRegs: 32}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if src := render.Render(render.C, k); !strings.Contains(src, "tg_perm16((((tg_f16){-8,") || !strings.Contains(src, "})*") {
		t.Errorf("want the permute of the scaled table:\n%s", src)
	}
	for _, dev := range []string{"GO", "CPU", "CL", "CUDA"} {
		ctx, _, err := realize.NewContext(dev, realize.Options{})
		if err != nil {
			continue
		}
		got, err := f(ctx).Floats()
		if err != nil {
			t.Fatalf("%s: %v", dev, err)
		}
		for i, g := range got {
			want := 0.0
			for j := range cols {
				want += float64(int(nib[i*cols+j])&15-8) * scale[i]
			}
			if g != want {
				t.Fatalf("%s: row %d sums to %v, want %v", dev, i, g, want)
			}
		}
	}
}

// TestTiedIQ4StaysQuantized: a tied embedding in IQ4_XS, read by the
// embedding's one-hot gather and by the classifier's matrix-vector
// product, is dequantized inside both kernels, not stored as a float
// copy of the table first: its grid of 16 values is a chain of selects
// (nn's gridIQ4) that the fusion's cost model counts as a table lookup
// (fuse's tableEntry), not as 30 operations a weight that two kernels
// would recompute. (Stored, the copy was rewritten every decode step:
// 18 ms of a 26 ms step for the 110M shape.)
func TestTiedIQ4StaysQuantized(t *testing.T) {
	ctx := tensor.NewContext(nil)
	n, k := 64, 256
	r := rand.New(rand.NewPCG(4, 5))
	f := make([]float32, n*k)
	for i := range f {
		f[i] = float32(r.NormFloat64())
	}
	blocks, err := quant.Quantize(quant.IQ4_XS, f)
	if err != nil {
		t.Fatal(err)
	}
	w, err := dequant(ctx, quant.IQ4_XS, blocks, []int{n, k}, true)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := ctx.FromInts(ir.Int32, []int{1}, []int64{7})
	if err != nil {
		t.Fatal(err)
	}
	hit := tok.Reshape(1, 1, 1).Eq(ctx.Arange(0, float64(n), 1, ir.Int32).Reshape(n, 1))
	emb := hit.Where(w, ctx.Full([]int{1}, 0, ir.Float32)).Sum(false, -2) // (1, k): row 7
	logits := emb.Dot(w.T())
	s, err := fuse.Create([]*tensor.Node{logits.Node()}, fuse.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range s.Items {
		if it.Out.DType == ir.Float32 && it.Out.Numel() >= n*k {
			t.Errorf("the dequantized table is stored by %s:\n%s", it.Kernel.Name, s.Dump())
		}
	}
	if len(s.Items) != 2 {
		t.Errorf("%d kernels, want 2 (the row's gather, the product):\n%s", len(s.Items), s.Dump())
	}
}
