package ir

import (
	"errors"
	"fmt"
	"slices"
)

// KBLOCK is cache blocking of a long sum, GotoBLAS's kc: the reduce over
// r becomes an outer loop over blocks of kc (a global loop placed right
// inside the outermost one, which is split across cores, so it runs in
// order within each core's share) around a reduce over one block. The
// partial sums accumulate in the output: block 0 stores its sum, later
// blocks add theirs to what is stored, the last one applies the epilogue
// (bias, relu). A matmul blocked so, with its column panels outermost
// (OUTER), keeps one panel's kc x lanes slice of the right operand in L1
// while every row block of the left one streams past it:
//
//	for panel: for kb: for rows: acc = sum over kc; out = (kb ? out : 0) + acc
//
// instead of streaming the whole panel (K x lanes) from L2 for every row
// block. The order of a float sum does not change: block after block, in
// order, as the plain loop adds.

// kblockable says whether reduce axis r of k can be blocked: every reduce
// is a float SUM over r (the members of one register block), nothing
// reduces inside them, and every store writes, in the reduce's own dtype,
// a value with exactly one of them in it (partial sums are stored exactly
// between blocks).
func kblockable(k *Kernel, r *Axis) error {
	if len(k.Global) == 0 {
		return errors.New("no global loop")
	}
	var err error
	Walk(k.Stores, func(e *Expr) {
		if e.Op != OpReduce || err != nil {
			return
		}
		arg := e.Arg.(*ReduceArg)
		has := false
		for _, a := range arg.Axes {
			has = has || a == r
		}
		switch {
		case arg.Op != OpSum || !e.DType.IsFloat():
			err = fmt.Errorf("a %s %s reduce", e.DType, arg.Op)
		case !has:
			err = errors.New("a reduce over other axes")
		case nestedReduce(e.Src[0]):
			err = errors.New("a reduce inside a reduce")
		}
	})
	if err != nil {
		return err
	}
	for _, s := range k.Stores {
		red := storeReduces(s.Src[1])
		switch {
		case len(red) != 1:
			return fmt.Errorf("a store of %d reduces", len(red))
		case k.Bufs[s.Arg.(int)].DType != red[0].DType:
			return fmt.Errorf("partial sums of %s stored as %s", red[0].DType, k.Bufs[s.Arg.(int)].DType)
		case nestedReduce(s.Src[0]):
			return errors.New("a reduce in a store's index")
		}
	}
	return nil
}

func nestedReduce(e *Expr) bool {
	found := false
	Walk([]*Expr{e}, func(x *Expr) { found = found || x.Op == OpReduce })
	return found
}

// storeReduces lists the distinct reduces a stored value reads.
func storeReduces(v *Expr) []*Expr {
	var out []*Expr
	WalkPre([]*Expr{v}, func(e *Expr) bool {
		if e.Op == OpReduce {
			out = append(out, e)
			return false
		}
		return true
	})
	return out
}

// KBlock blocks reduce axis r of k into a global loop over r.Size/kc
// blocks at position 1 and a reduce over kc (see kblockable, which must
// hold, and kc must divide r.Size).
func KBlock(k *Kernel, r *Axis, kc int64) *Kernel {
	id := 0
	for _, a := range k.Global {
		id = max(id, a.ID+1)
	}
	kb := &Axis{ID: id, Size: r.Size / kc, Kind: AxisGlobal}
	kk := &Axis{ID: r.ID, Size: kc, Kind: AxisReduce}
	args := map[*ReduceArg]*ReduceArg{} // members of a group keep sharing their axes
	var split func(b *Builder, e *Expr) *Expr
	split = func(b *Builder, e *Expr) *Expr {
		switch e.Op {
		case OpVar:
			if e.Arg.(*Axis) == r {
				return b.Add(b.Mul(b.Var(kb), b.Int(kc)), b.Var(kk))
			}
		case OpReduce:
			arg := e.Arg.(*ReduceArg)
			na, ok := args[arg]
			if !ok {
				na = &ReduceArg{Op: arg.Op}
				for _, a := range arg.Axes {
					if a == r {
						a = kk
					}
					na.Axes = append(na.Axes, a)
				}
				args[arg] = na
			}
			return b.Reduce(na, b.Rebuild(e.Src[0], func(x *Expr) *Expr { return split(b, x) }, map[*Expr]*Expr{}))
		case OpStore:
			// out = (first block ? 0 : out) + this block's sum; the
			// epilogue, once the sum is complete.
			rebuild := func(x *Expr, f func(*Expr) *Expr) *Expr { return b.Rebuild(x, f, map[*Expr]*Expr{}) }
			mine := func(x *Expr) *Expr { return split(b, x) }
			buf, red := e.Arg.(int), storeReduces(e.Src[1])[0]
			idx := rebuild(e.Src[0], mine)
			first := b.Alu(OpCmpEq, b.Var(kb), b.Int(0))
			prev := b.Load(buf, red.DType, idx, nil)
			acc := b.Add(b.Where(first, b.Const(red.DType, 0), prev), rebuild(red, mine))
			if e.Src[1] == red {
				return b.Store(buf, idx, acc)
			}
			epi := rebuild(e.Src[1], func(x *Expr) *Expr {
				if x == red {
					return acc
				}
				return split(b, x)
			})
			last := b.Alu(OpCmpEq, b.Var(kb), b.Int(kb.Size-1))
			return b.Store(buf, idx, b.Where(last, epi, acc))
		}
		return nil
	}
	nk := k.rewrite(split)
	nk.Global = append([]*Axis{k.Global[0], kb}, k.Global[1:]...)
	return nk
}

// blockOpts is the heuristic's cache blocking of a register-blocked
// reduce (a matmul's rows x 2W columns), from the cache sizes: when the
// operand read in vectors (K x N) does not fit in half of L2, the loop
// over its column panels goes outermost (OUTER), so one panel (K x lanes)
// stays in L2 while every row block streams past it; when a panel alone
// does not fit, the reduce is blocked too (KBLOCK), into pieces of a
// quarter of L2. Measured on a Zen 4 (1 MiB L2), 8x32 blocks against
// OpenBLAS: panels outermost 1.23x/1.03x/1.10x at 1024/2048/4096, rows
// outermost 1.18x/0.95x/0.75x; KBLOCK inside an L2-sized panel
// 0.79-0.92x at 4096 (it pays only when the panel itself is too big).
//
// An operand of up to twice the L2 whose rows are wider than the sum
// (N > K) keeps the rows outermost when the other operand (M x K) is past
// the L2 too: the panels outermost would write each output row in pieces
// of a panel's width, and read all of the other operand again, from L3,
// for every panel (with few rows, M x K in cache, the rows outermost
// would read the weights again for every row block instead). ResNet-50 b8
// on the Zen 5 (1 MiB L2), two threads, CPU time per core relative to the
// stage-3 3x3 convs of the same run: the stage-3 expand convs with the
// residual (r_1568_1024_256 x6, 1 MiB of weights) 14.9-15.2 -> 13.3-13.5
// ms, the stride-2 shortcut r_1568_1024_512 (2 MiB) -10 %; with N <= K
// little or no gain (r_1568_256_1024 -3 %, r_1568_512_1024 -1.5 %,
// matmul_512 within the noise) and at 4 MiB none (r_392_2048_512,
// r_392_512_2048), so those keep their panels.
//
// A sum over several axes (a 3x3 conv's kernel rows and kw·Cin, read
// through windows) gets the panels outermost only where its weights pass
// the L2 and half of the output cache (Target.L3), so that with the rows
// outermost every row block would read them from memory: ResNet-50 b8's
// stage-4 3x3 convs (r_392_512_4608, 9.4 MB) 9.0-9.1 -> 5.4-5.5 ms and
// the stage-3 ones (r_1568_256_2304, 2.4 MB) 6.6-7.1 -> 5.1-5.2 ms on the
// Xeon guest (L3 = its two 2 MiB L2s), the whole b8 1.28-1.32x -> 1.21-
// 1.23x of onnxruntime. With a 32 MiB L3 (Zen 4, Zen 5) they keep the
// rows outermost, as measured there.
//
// When the other operand (rows x K) does not fit in half of L2 either,
// every panel would stream all of it from L3 or memory: then the rows are
// grouped too (TILE) and the reduce blocked (KBLOCK), the full GotoBLAS
// scheme (see matmulBlocks).
func (t Target) blockOpts(k *Kernel, inner, outer *Axis, innerAmt, outerAmt int64, unrolled bool) []Opt {
	raxes := k.ReduceAxes()
	if t.L2 <= 0 || inner == nil || innerAmt < t.Width() || outerAmt < 2 || unrolled || len(raxes) == 0 {
		return nil
	}
	r := raxes[0]
	rest := int64(1) // the inner reduce axes' iterations per step of r
	for _, a := range raxes[1:] {
		rest *= a.Size
	}
	kn := r.Size * rest * inner.Size * 4
	if kn <= t.L2/2 || kn <= 2*t.L2 && inner.Size > r.Size*rest && outer != nil && outer.Size*r.Size*rest*4 > t.L2 {
		return nil // in L2, or rows outermost (wider outputs than sums, see above)
	}
	kc := int64(0)
	if r.Size*rest*innerAmt*4 > t.L2/2 && kblockable(k, r) == nil {
		// A weight gradient's reduce (batch x image rows x columns) is
		// blocked along the batch: every output block then reads a block
		// of images from L2 instead of all of them from memory.
		for c := int64(2); c < r.Size && c*rest*innerAmt*4 <= t.L2/4; c *= 2 {
			if r.Size%c == 0 && c*rest >= 64 {
				kc = c
			}
		}
	}
	if len(raxes) > 1 && kc == 0 && !(t.L3 > 0 && kn > max(t.L2, t.L3/2)) {
		return nil // several reduce axes: only a weight gradient's batch blocking
	}
	var opts []Opt
	if i := axisIndex(k, inner); i > 0 && inner.Size/innerAmt >= 2 {
		opts = append(opts, Opt{Kind: OptOuter, Axis: i})
	}
	if len(raxes) == 1 && kc == 0 && outer != nil && kblockable(k, r) == nil {
		if mc, kb := t.matmulBlocks(outer.Size, r.Size, outerAmt, innerAmt); mc > 0 {
			opts = append(opts, Opt{Kind: OptTile, Axis: axisIndex(k, outer), Amt: mc})
			kc = kb
		}
	}
	if kc > 0 {
		opts = append(opts, Opt{Kind: OptKBlock, Axis: 0, Amt: kc})
	}
	return opts
}

// matmulBlocks sizes GotoBLAS's blocks for an m x k left operand read in
// register blocks of mr rows against column panels of nr lanes: kc, the
// reduce's block, keeps a panel's kc x nr slice in half of L1 (reused by
// every row block of a group); mc, the row group, keeps the left
// operand's mc x kc block in a quarter of L2 (reused by every panel).
// Zero when the left operand fits in half of L2 as it is (the panels
// then read it from L2 anyway), when the sizes do not divide, and when
// the panels are two cache lines wide or more: streaming the left
// operand costs 8/nr bytes per FMA, 25 GB/s at 200 GFLOP/s with 16-lane
// panels (about DRAM's bandwidth on the Zen 4 host), half of that with
// 32. Measured there, the blocked loops against streaming the left
// operand, matmul 2048 / 4096: 8-lane vectors (16-lane panels) 86-102 /
// 690-840 ms against 100-124 / 775-1021; 16-lane vectors (32-lane
// panels) 93-101 / 706-818 against 80 / 649.
func (t Target) matmulBlocks(m, k, mr, nr int64) (mc, kc int64) {
	if t.L1 <= 0 || t.L2 <= 0 || m*k*4 <= t.L2/2 || nr*4 > 64 {
		return 0, 0
	}
	for c := int64(64); c < k && c*nr*4 <= t.L1/2; c *= 2 {
		if k%c == 0 {
			kc = c
		}
	}
	if kc == 0 {
		return 0, 0
	}
	if mc = rowGroup(m, mr, kc, t.L2/4); mc < 2*mr {
		return 0, 0
	}
	return mc, kc
}

// MatmulRowPanel is the height of the row panels a matmul's left operand
// (m x k, times k x n) is best packed in on this target (the register
// block's rows, interleaved: the product's row groups then read their
// block of it contiguously, where rows at a power-of-two stride would
// share a few cache sets), or 0 where the heuristic does not group the
// rows (matmulBlocks).
func (t Target) MatmulRowPanel(m, k, n int64) int64 {
	nr := 2 * t.Width()
	// the heuristic's rows for a matmul's one-FMA body: the largest of
	// its candidates that fits the accumulators and divides m
	var cands []int64
	for _, c := range []int64{16, 8, 6, 4, 2} {
		if c*nr <= min(t.Accs()*t.Width(), MaxLanes) {
			cands = append(cands, c)
		}
	}
	mr := largestDivisor(m, cands...)
	if !t.Upcast || t.GPU != nil || mr < 2 || n%nr != 0 || k*n*4 <= t.L2/2 {
		return 0
	}
	if mc, _ := t.matmulBlocks(m, k, mr, nr); mc == 0 {
		return 0
	}
	return mr
}

// BlockSeeds are GotoBLAS's blocks on top of a list whose column panels
// run outermost with no blocks (the heuristic's streaming of the left
// operand past every panel): a row group (TILE) with a reduce block
// (KBLOCK) sized so the group's block of the left operand fills half of
// L2, for reduce blocks of 128, 256 and 512. BEAM times them in its first
// round: each of the pair alone is slower than streaming, so a search
// adding one opt a round never keeps the first half. Measured on the Zen 5
// guest, matmul 4096 (a 64 MiB left operand, past its 32 MiB L3), 32-lane
// panels: 342-381 ms against 398-422 streaming.
func (t Target) BlockSeeds(k *Kernel, opts []Opt) [][]Opt {
	raxes := k.ReduceAxes()
	if t.GPU != nil || t.L2 <= 0 || len(raxes) != 1 || kblockable(k, raxes[0]) != nil {
		return nil
	}
	outer := -1
	for _, o := range opts {
		switch o.Kind {
		case OptOuter:
			outer = o.Axis
		case OptTile, OptKBlock, OptPad, OptGroup:
			return nil
		}
	}
	if outer < 0 {
		return nil
	}
	r := raxes[0]
	var seeds [][]Opt
	for i, a := range k.Global {
		if i == outer || a.Sym != nil || a.Size*r.Size*4 <= t.L2/2 {
			continue
		}
		mr := upcastLanes(opts, i)
		for _, kc := range []int64{128, 256, 512} {
			if kc >= r.Size || r.Size%kc != 0 {
				continue
			}
			if mc := rowGroup(a.Size, mr, kc, t.L2/2); mc >= 2*mr {
				seeds = append(seeds, append(slices.Clone(opts), Opt{Kind: OptTile, Axis: i, Amt: mc}, Opt{Kind: OptKBlock, Axis: 0, Amt: kc}))
			}
		}
	}
	return seeds
}

// rowGroup is GotoBLAS's mc: the most rows, a multiple of mr dividing m
// and at most half of them, whose block of kc floats a row fits in bytes
// (0 if none).
func rowGroup(m, mr, kc, bytes int64) int64 {
	mc := int64(0)
	for c := mr; c <= m/2 && c*kc*4 <= bytes; c += mr {
		if m%c == 0 {
			mc = c
		}
	}
	return mc
}
