package ir

import (
	"fmt"
	"slices"
)

// Prefetch is the prefetch pass's plan (CPU): loads inside a reduce loop
// that stream a buffer from memory along that loop, one
// element an iteration (a 1x1 convolution's input rows, broadcast into a
// register block), and move by a constant stride from one iteration of a
// global loop to the next (the next block of rows). The C renderer writes,
// after each such load, a prefetch of the element the same load reads in
// the next iteration of that global loop, once every 16 iterations of the
// reduce loop (a 64-byte line of float32): the next block's rows arrive
// while this block computes. The hardware prefetcher alone left a
// ResNet-50 b8 conv reading its 25.7 MB input from DRAM at 166 GFLOP/s on
// one core against 211 with the input in cache; with the prefetches, 211
// either way (C harness, CPU time, Zen 5). A prefetch is a hint: no value
// depends on it, and it only names elements the kernel reads.
type Prefetch struct {
	Loads map[*Expr]PrefetchAt
	// Epilogue: loads after the kernel's reduce (a conv's residual, read
	// once per output), one per cache line, that the C renderer prefetches
	// before the reduce's loop (the prefetch_epilogue pass).
	Epilogue []*Expr
}

// PrefetchAt says how a load is prefetched.
type PrefetchAt struct {
	Loop *Axis // the innermost reduce loop it reads along
	// Next is the global loop whose next iteration it prefetches, or Loop
	// itself: a streaming reduce's row further along (streamPrefetchable).
	Next *Axis
	Dist int64 // the load's stride along Next, in elements
	// Every is the iterations of Loop from one prefetch to the next (a
	// power of two): as many as read one 64-byte line (16 for a float32
	// read one element an iteration; 4 for bytes read 16 an iteration).
	Every int64
	// Ahead is the iterations of Next the prefetch runs ahead (at least
	// 1): the element Ahead*Dist further on.
	Ahead int64
	// At, when set, is the index of the element prefetched instead (a
	// column panel's, see panelPrefetchable), over the kernel's loops,
	// and If the condition of the prefetch (there is a next panel); Next
	// is then nil.
	At, If *Expr
}

// prefetchFLOPs is the most flops per byte of the loaded buffer (its
// elements' reuse) at which its loads are prefetched: 48, a 1x1
// convolution's input with up to 96 output channels (each element feeds N
// multiply-adds, 2N/4 flops per byte). At N = 64 (ResNet-50 b8's stage-1
// reduce convs, 25.7 MB inputs from memory) 2.44-2.64 -> 2.13-2.29 ms on
// two cores; at N = 128 (12.8 and 25.7 MB inputs) -5 % to +5 %.
const prefetchFLOPs = 48

// PrefetchLine is the float32 elements of a 64-byte cache line.
const PrefetchLine = 16

// PlanPrefetch plans the prefetches (see Prefetch): unguarded float32
// loads of a buffer larger than the target's L2 and than a quarter of its
// L3 (a buffer stream_stores writes around the caches, so its reader
// finds it in memory; a smaller one stays in L3, whose latency the
// hardware prefetcher hides: prefetching a 6.4 MB input there made its
// 64-long sums 4-5 % slower), whose index moves by one
// element along the innermost reduce loop it reads and by a constant
// stride of at least a line along the innermost global loop it reads (the
// next iteration of that loop, not the one after a lane block: a guard of
// `next < trip` keeps the prefetch inside the loop, across the launch
// pieces a core runs one after the other). Not with a
// keep plan (which prefetches its own next row), nor where the L2 is
// unknown, nor for a buffer whose elements the kernel reuses more than
// prefetchFLOPs flops per byte.
func PlanPrefetch(k *Kernel, t Target) (*Kernel, error) {
	if t.L2 <= 0 || k.Keep != nil || len(k.Global) == 0 {
		return k, nil
	}
	loops := map[*Axis]*Expr{} // reduce axis → its reduce
	var order []*Axis          // reduce axes, outer to inner within each reduce
	Walk(k.Stores, func(e *Expr) {
		if e.Op == OpReduce {
			for _, a := range e.Arg.(*ReduceArg).Axes {
				if _, ok := loops[a]; !ok {
					loops[a] = e
					order = append(order, a)
				}
			}
		}
	})
	flops, _ := k.Cost()
	tabled := k.TabledOnly() // read in the tables' loops, before the rows' (ir.Tables)
	// A row kernel's passes over its rows: one prefetches the next row,
	// the others nothing (rowPassPrefetches).
	aroundOf := globalsAroundOf(k)
	plan, passes := rowPassPrefetches(k, t, order, flops, tabled, aroundOf)
	loads := func(visit func(*Expr)) {
		Walk(k.Stores, func(e *Expr) {
			if !tabled[e] && !passes[e] {
				visit(e)
			}
		})
	}
	narrow := map[*Expr]PrefetchAt{}
	var narrowLoads []*Expr // in walk order: lineLeaders keeps the first of equal loads
	loads(func(e *Expr) {
		if at, ok := prefetchable(k, t, e, order, flops); ok {
			plan[e] = at
		}
		if at, ok := narrowPrefetchable(k, e, order, flops); ok {
			narrow[e] = at
			narrowLoads = append(narrowLoads, e)
		}
	})
	for _, e := range lineLeaders(narrowLoads) {
		plan[e] = narrow[e]
	}
	// The rules that prefetch a load per line a step reads (lineStarts),
	// for the loads the rules above left.
	lines := func(rule func(*Kernel, Target, *Expr, []*Axis, int64) (PrefetchAt, bool)) {
		found := map[*Expr]PrefetchAt{}
		var lds []*Expr
		loads(func(e *Expr) {
			if _, planned := plan[e]; planned {
				return
			}
			if at, ok := rule(k, t, e, order, flops); ok {
				found[e] = at
				lds = append(lds, e)
			}
		})
		for _, e := range lineStarts(lds) {
			plan[e] = found[e]
		}
	}
	lines(rowSlicePrefetchable)
	lines(func(k *Kernel, t Target, e *Expr, raxes []*Axis, flops int64) (PrefetchAt, bool) {
		return panelPrefetchable(k, t, e, raxes, flops, aroundOf)
	})
	lines(streamPrefetchable)
	if len(plan) == 0 {
		return k, nil
	}
	nk := *k
	nk.Prefetch = &Prefetch{Loads: plan}
	return &nk, nil
}

// rowPassPrefetches plans the prefetches of a row kernel's passes over
// its rows (its sums hoisted out of the columns' loop, once per row:
// log_softmax, layernorm, RMSNorm, softmax without a keep plan): a row of
// a buffer from memory (as prefetchable's), read along a sum that covers
// the row, where the L1 holds two rows. The first pass reads the row
// from memory, the later ones and the column loop from L1, so one pass
// prefetches the next row, a line a load, and the others nothing (passes
// lists the loads of all of them, which the other rules leave): a pass
// that computes exponentials, else the first where the column loop lags
// into it (rowLagLoop), else the last.
// Before, each pass streamed 512 bytes ahead along its own row
// (streamPrefetchable): the first pass of every row waited for memory and
// the others prefetched lines in L1. log_softmax_4096's kernel in a C
// harness (Zen 5 guest, two threads, rows from memory, alternated run by
// run, medians of 15): 3.28-3.59 ms, 2.83-3.00 with the next row's
// prefetches (softmax_4096's kernel 2.79-2.92 in the same runs).
func rowPassPrefetches(k *Kernel, t Target, order []*Axis, flops int64, tabled map[*Expr]bool, aroundOf func(*Axis) []*Axis) (map[*Expr]PrefetchAt, map[*Expr]bool) {
	plan, passes := map[*Expr]PrefetchAt{}, map[*Expr]bool{}
	if t.L1 <= 0 {
		return plan, passes
	}
	type row struct {
		buf  int
		next *Axis // the rows' loop
	}
	type read struct {
		at  PrefetchAt
		lds []*Expr
	}
	reads := map[row]map[*Axis]*read{} // a row's loads by the sum they are in
	single := map[*Axis]bool{}         // loops of sums over that loop alone
	Walk(k.Stores, func(e *Expr) {
		if e.Op == OpReduce && len(e.Arg.(*ReduceArg).Axes) == 1 {
			single[e.Arg.(*ReduceArg).Axes[0]] = true
		}
	})
	Walk(k.Stores, func(e *Expr) {
		if tabled[e] || e.Op != OpLoad || len(e.Src) != 1 || e.DType != Float32 {
			return
		}
		bytes := k.Bufs[e.Arg.(int)].Size * 4
		if bytes <= max(t.L2, t.L3/4) || bytes*prefetchFLOPs < flops {
			return
		}
		idx := e.Src[0]
		loop := innermostRead(idx, order)
		if loop == nil || loop.Sym != nil || !single[loop] {
			return
		}
		around := aroundOf(loop)
		if len(around) == 0 || len(around) == len(k.Global) {
			return // not hoisted out of a columns' loop
		}
		g, d, ok := rowStride(k, idx)
		s, lin := AxisStride(idx, loop)
		if !ok || g != around[len(around)-1] || !lin || s < 1 || s*loop.Size != d || 2*d*4 > t.L1 {
			return
		}
		every := int64(1)
		for 2*every*s <= PrefetchLine {
			every *= 2
		}
		r := row{e.Arg.(int), g}
		if reads[r] == nil {
			reads[r] = map[*Axis]*read{}
		}
		if reads[r][loop] == nil {
			reads[r][loop] = &read{at: PrefetchAt{Loop: loop, Next: g, Dist: d, Every: every, Ahead: 1}}
		}
		reads[r][loop].lds = append(reads[r][loop].lds, e)
	})
	if len(reads) == 0 {
		return plan, passes
	}
	lag := rowLagLoop(k, t)
	exps := map[*Axis]bool{} // loops of sums that compute exponentials (not in sums they read)
	Walk(k.Stores, func(e *Expr) {
		if e.Op != OpReduce || !single[e.Arg.(*ReduceArg).Axes[0]] {
			return
		}
		a := e.Arg.(*ReduceArg).Axes[0]
		walkPruned(e.Src, func(x *Expr) bool { return x.Op == OpReduce }, func(x *Expr) {
			exps[a] = exps[a] || x.Op == OpExp2
		})
	})
	for _, sums := range reads {
		var pass, last, exp *Axis // the chosen; the last to run (order: a sum after those it reads); the last with exponentials
		for _, a := range order {
			if sums[a] != nil {
				last = a
				if exps[a] {
					exp = a
				}
			}
		}
		switch {
		case exp != nil:
			// a pass of exponentials runs long enough for the next row
			// to arrive in it (log_softmax: its max pass is a tenth of
			// it; C harness, lagged into the max pass, prefetching there
			// 3.01-3.10 ms, in the exponentials' pass 2.75-2.96)
			pass = exp
		case sums[lag] != nil:
			// the pass the previous row's stores run in (Stream.Lag): its
			// loads are in L1 too, and the stores and the next row's
			// reads then share the bus all along the row (layernorm:
			// 1.76-2.27 ms, 2.09-2.60 prefetching in its second pass)
			pass = lag
		default:
			pass = last
		}
		for a, rd := range sums {
			for _, e := range rd.lds {
				passes[e] = true
			}
			if a == pass {
				for _, e := range lineStarts(rd.lds) {
					plan[e] = rd.at
				}
			}
		}
	}
	return plan, passes
}

// prefetchable says whether load e is one the plan prefetches, and how.
func prefetchable(k *Kernel, t Target, e *Expr, raxes []*Axis, flops int64) (PrefetchAt, bool) {
	if e.Op != OpLoad || len(e.Src) != 1 || e.DType != Float32 {
		return PrefetchAt{}, false
	}
	bytes := k.Bufs[e.Arg.(int)].Size * 4
	if bytes <= max(t.L2, t.L3/4) || bytes*prefetchFLOPs < flops {
		return PrefetchAt{}, false // in cache, or each element reused enough for the hardware prefetcher
	}
	idx := e.Src[0]
	loop := innermostRead(idx, raxes)
	if loop == nil {
		return PrefetchAt{}, false
	}
	if s, ok := AxisStride(idx, loop); !ok || s != 1 {
		return PrefetchAt{}, false
	}
	g, d, ok := rowStride(k, idx)
	if !ok || d < PrefetchLine {
		return PrefetchAt{}, false
	}
	return PrefetchAt{Loop: loop, Next: g, Dist: d, Every: PrefetchLine, Ahead: 1}, true
}

// streamAheadBytes is how far along its own reduce loop a streaming
// reduce's load is prefetched (streamPrefetchable).
const streamAheadBytes = 512

// streamPrefetchable says whether e is a float32 load of a streaming
// reduce: a buffer at least the target's L3 (read from memory), each
// element used for at most prefetchFLOPs flops per byte, read along the
// innermost reduce loop it reads in whole lines that the loads of its row
// cover without a gap from one iteration to the next (streamOpts' rows
// side by side, each a contiguous stream). It is prefetched
// streamAheadBytes ahead along that loop, a line each: the lines are
// asked for before the loads reach them. sum_16M's kernel on the Xeon
// guest (C harness, both cores, eight 64 MiB inputs cycling): 1.88-1.94
// ms without, 1.73-1.77 with (256 bytes ahead: 1.78-1.90; 1024 the same
// as 512; 2048 slower).
func streamPrefetchable(k *Kernel, t Target, e *Expr, raxes []*Axis, flops int64) (PrefetchAt, bool) {
	if e.Op != OpLoad || len(e.Src) != 1 || e.DType != Float32 {
		return PrefetchAt{}, false
	}
	bytes := k.Bufs[e.Arg.(int)].Size * 4
	if t.L3 <= 0 || bytes < max(t.L2, t.L3) || bytes*prefetchFLOPs < flops {
		return PrefetchAt{}, false
	}
	idx := e.Src[0]
	loop := innermostRead(idx, raxes)
	if loop == nil || loop.Sym != nil {
		return PrefetchAt{}, false
	}
	s, ok := AxisStride(idx, loop)
	if !ok || s < PrefetchLine || s%PrefetchLine != 0 || !wholeRow(k, e, s) {
		return PrefetchAt{}, false
	}
	ahead := max(1, streamAheadBytes/(4*s))
	if ahead >= loop.Size {
		return PrefetchAt{}, false
	}
	return PrefetchAt{Loop: loop, Next: loop, Dist: s, Every: 1, Ahead: ahead}, true
}

// wholeRow says whether the loads of e's buffer at constant distances
// from e within s elements read every line of a window of s: one
// iteration's whole stretch of a row whose loop moves s along it.
func wholeRow(k *Kernel, e *Expr, s int64) bool {
	var ds []int64
	Walk(k.Stores, func(o *Expr) {
		if o.Op != OpLoad || o.Arg != e.Arg || len(o.Src) != 1 {
			return
		}
		ts, c := normalize(addTerms(addTerms(nil, o.Src[0], 1), e.Src[0], -1))
		if len(ts) == 0 && -s < c && c < s {
			ds = append(ds, c)
		}
	})
	lo := slices.Min(ds) // e's own 0 is among them
	lines := map[int64]bool{}
	for _, d := range ds {
		if d-lo >= s {
			return false
		}
		lines[(d-lo)/PrefetchLine] = true
	}
	return int64(len(lines)) == s/PrefetchLine
}

// innermostRead is the last of raxes (reduce loops, outer to inner) that
// idx reads, or nil.
func innermostRead(idx *Expr, raxes []*Axis) *Axis {
	for i := len(raxes) - 1; i >= 0; i-- {
		if usesVar(idx, raxes[i]) {
			return raxes[i]
		}
	}
	return nil
}

// rowStride is the innermost global loop idx reads along and its
// constant stride there (ok false where idx reads none, or that loop is
// symbolic or its stride not constant).
func rowStride(k *Kernel, idx *Expr) (*Axis, int64, bool) {
	for i := len(k.Global) - 1; i >= 0; i-- {
		g := k.Global[i]
		if !usesVar(idx, g) {
			continue
		}
		d, ok := AxisStride(idx, g)
		return g, d, ok && g.Sym == nil
	}
	return nil, 0, false
}

// narrowPrefetchable says whether e is a load of elements narrower than
// float32 (a quantized or float16 weight's bytes) that streams rows: read
// at a constant stride along its innermost reduce loop (a line every
// Every iterations, or every iteration where one reads a line or more),
// and by at least a line along a global loop (the next row), each
// element used for at most prefetchFLOPs flops per byte. Such a weight is
// read once per call, so whatever its size its rows come from memory
// when the model is larger than the caches (a decode step reads every
// matrix once): the loads are prefetched narrowAhead rows ahead, or
// narrowAheadBytes where rows are short, a line an iteration. On the Xeon guest a C harness of a Q8_0 product (768
// rows of 2176 bytes) streaming from memory on one core: 7.6 GB/s, 13.2
// with the prefetches; the bench's decode step 9.0-9.2 -> 5.6-6.0 ms
// for Q8_0 and 10.5-10.9 -> 5.5-6.0 for Q4_K in the same minutes.
func narrowPrefetchable(k *Kernel, e *Expr, raxes []*Axis, flops int64) (PrefetchAt, bool) {
	if e.Op != OpLoad || len(e.Src) != 1 || e.DType.Size() > 2 || e.DType == Bool {
		return PrefetchAt{}, false
	}
	esz := int64(e.DType.Size())
	if k.Bufs[e.Arg.(int)].Size*esz*prefetchFLOPs < flops {
		return PrefetchAt{}, false
	}
	idx := e.Src[0]
	var loop *Axis // the reduce loop it reads along at the smallest stride
	s := int64(0)
	for _, a := range raxes {
		if !usesVar(idx, a) {
			continue
		}
		d, ok := AxisStride(idx, a)
		if !ok || d < 1 {
			return PrefetchAt{}, false
		}
		if loop == nil || d < s {
			loop, s = a, d
		}
	}
	if loop == nil {
		return PrefetchAt{}, false
	}
	every := int64(1) // a line or more an iteration: every iteration (lineLeaders: a load per line)
	for 2*every*s*esz <= 4*PrefetchLine {
		every *= 2
	}
	g, d, ok := rowStride(k, idx)
	if !ok || d*esz < 4*PrefetchLine {
		return PrefetchAt{}, false
	}
	ahead := max(narrowAhead, (narrowAheadBytes+d*esz-1)/(d*esz))
	if ahead >= g.Size {
		// never in the loop's range, its guard always false: slices of
		// rows (a float16 KV cache's heads, 128 bytes a step of a loop
		// of 12) prefetched their own lines
		return PrefetchAt{}, false
	}
	return PrefetchAt{Loop: loop, Next: g, Dist: d, Every: every, Ahead: ahead}, true
}

// rowSlicePrefetchable says whether e is a float load that reads a row
// of a buffer in memory (prefetchable's size rule) per iteration of the
// launch's split loop (Global[0], a stride of rowSliceMin to rowSliceMax
// bytes), in slices along inner global loops: a decode step's attention
// scores, q·K[p] for every cached position p, each head's 64 floats of
// row p a slice, a 64-long sum each. The hardware prefetcher follows a
// slice but not the rows across their pages, so each slice's lines are
// prefetched in the row rowSliceAheadBytes ahead (a line an iteration of
// its reduce loop). On the Xeon guest a C harness of the 110M model's
// scores (495 positions of 3 KB, one core, the 12 layers' caches read
// after a 64 MiB flush) streamed 12-15 GB/s without and 24-25 with the
// prefetches one row ahead (two rows: 19-23). A 16-bit float cache
// (--kv-cache f16) is prefetched whatever its size: a layer's at 1024
// positions is 1.5 MB, within L2 by the size rule, but a decode step
// reads it once, cold, after the other layers' weights (the 110M model at
// 920 positions, DEBUG=2 medians in the step, four alternated pairs: the
// scores 49-76 µs a layer without, 36-41 with).
func rowSlicePrefetchable(k *Kernel, t Target, e *Expr, raxes []*Axis, flops int64) (PrefetchAt, bool) {
	if e.Op != OpLoad || len(e.Src) != 1 || e.DType != Float32 && e.DType != Float16 && e.DType != BFloat16 || len(k.Global) < 2 {
		return PrefetchAt{}, false
	}
	esz := int64(e.DType.Size())
	bytes := k.Bufs[e.Arg.(int)].Size * esz
	if esz == 4 && bytes <= max(t.L2, t.L3/4) || bytes*prefetchFLOPs < flops {
		return PrefetchAt{}, false
	}
	idx := e.Src[0]
	g := k.Global[0]
	d, ok := AxisStride(idx, g)
	if !ok || d*esz < rowSliceMin || d*esz > rowSliceMax {
		return PrefetchAt{}, false
	}
	sliced := false
	for _, a := range k.Global[1:] {
		sliced = sliced || usesVar(idx, a)
	}
	var loop *Axis
	for i := len(raxes) - 1; i >= 0 && loop == nil; i-- {
		if usesVar(idx, raxes[i]) {
			loop = raxes[i]
		}
	}
	if !sliced || loop == nil {
		return PrefetchAt{}, false
	}
	s, ok := AxisStride(idx, loop)
	if !ok || s < 1 {
		return PrefetchAt{}, false
	}
	every := int64(1)
	for 2*every*s*esz <= 4*PrefetchLine {
		every *= 2
	}
	return PrefetchAt{Loop: loop, Next: g, Dist: d, Every: every, Ahead: max(1, (rowSliceAheadBytes+d*esz-1)/(d*esz))}, true
}

// rowSliceMin and rowSliceMax bound the rows rowSlicePrefetchable
// prefetches, in bytes (a longer one is no row of slices but a block of
// them: a pooled image's 51 KB, whose next one is out of L1's reach by
// the time it is read); rowSliceAheadBytes is how far ahead at least, in
// whole rows.
const (
	rowSliceMin        = 1024
	rowSliceMax        = 8192
	rowSliceAheadBytes = 3072
)

// panelPrefetchable says whether e is a load of a column panel that
// blocks of rows share (a matmul's right operand, read in vectors along
// the columns, with the row blocks inside the panels' loop: OUTER, or the
// two loops merged by merge_outer), larger than half of L2 and used by at
// most panelFLOPs flops per byte (few rows), and plans its
// prefetch: each row block prefetches its share of the next panel, so
// that the panel is in cache when its first block starts. Otherwise the
// first block of every panel waits for the whole panel from memory (a
// model's weights, read once per call, are in no cache): the block
// computes 1/n of the panel's work while the panel streams in. Row block
// j of n, at step r of the sum over L, prefetches the next panel's
// element at step (j*L + r)/n, every E steps, E the largest power of two
// up to n (so no step is left out; up to n*16/s where a step moves s < 16
// elements, so no line is), one prefetch per line of a step (the step's
// first load, and each a whole line after it: a 32-column panel's two
// vectors). The operand may be the left one too: a 1x1 conv's block of
// 8 input rows, which the output channels' 8 panels share (the rows'
// loop outermost). Measured in a C harness on the Xeon guest, two
// threads, the weights cycling through
// 120 MB (a BERT-base encoder's FFN and attention products, 128 rows,
// blocks of 8x32): 128x3072 by 3072x768 2.30-2.44 -> 2.14-2.24 ms,
// 128x768 by 768x3072 2.33 -> 1.95-2.05, 128x768 by 768x768 0.60-0.65 ->
// 0.52-0.56.
func panelPrefetchable(k *Kernel, t Target, e *Expr, raxes []*Axis, flops int64, aroundOf func(*Axis) []*Axis) (PrefetchAt, bool) {
	if e.Op != OpLoad || len(e.Src) != 1 || e.DType != Float32 {
		return PrefetchAt{}, false
	}
	if bytes := k.Bufs[e.Arg.(int)].Size * 4; bytes <= t.L2/2 || bytes*panelFLOPs < flops {
		return PrefetchAt{}, false
	}
	idx := e.Src[0]
	var loop *Axis // the one sum it reads along
	for _, a := range raxes {
		if usesVar(idx, a) {
			if loop != nil {
				return PrefetchAt{}, false
			}
			loop = a
		}
	}
	if loop == nil || loop.Sym != nil {
		return PrefetchAt{}, false
	}
	s, ok := AxisStride(idx, loop)
	if !ok || s < 1 {
		return PrefetchAt{}, false
	}
	for _, a := range k.Global {
		if a.Sym != nil {
			return PrefetchAt{}, false
		}
	}
	if len(aroundOf(loop)) < len(k.Global) {
		// a sum that runs outside the row blocks' loop (a layernorm's,
		// once per row before its columns: Program.Hoisted) has no block
		// to share the next panel with
		return PrefetchAt{}, false
	}
	// The panels' loops and the row blocks': the innermost global loop
	// is the blocks' (idx does not read it) inside the panels' (a column
	// panel, and with KBLOCK its slices of the sum, in the order they
	// run), or one merged loop g, read as g / n and g % n.
	b := k.B
	g, inner := k.Global[0], k.Global[len(k.Global)-1]
	var slice, block *Expr // the slice's number in the order they run; the block's within it
	var nslices, n int64
	var next func(*Expr) *Expr // idx at the next slice
	switch len(k.Global) {
	case 1:
		n = panelQuotient(idx, g)
		if n < 2 || g.Size%n != 0 {
			return PrefetchAt{}, false
		}
		q := b.Div(b.Var(g), b.Int(n))
		p := &Axis{ID: -1, Size: g.Size / n, Kind: AxisGlobal}
		if sub := substExpr(b, idx, q, b.Var(p)); usesVar(sub, g) {
			return PrefetchAt{}, false // g read otherwise than through its panel
		}
		slice, block, nslices = q, b.Mod(b.Var(g), b.Int(n)), g.Size/n
		next = func(x *Expr) *Expr { return substExpr(b, x, q, b.Add(q, b.Int(1))) }
	case 2, 3:
		if usesVar(idx, inner) {
			return PrefetchAt{}, false
		}
		outer := k.Global[:len(k.Global)-1]
		slice, nslices = b.Int(0), 1
		for _, a := range outer {
			slice, nslices = b.Add(b.Mul(slice, b.Int(a.Size)), b.Var(a)), nslices*a.Size
		}
		block, n = b.Var(inner), inner.Size
		next = func(x *Expr) *Expr {
			nx := b.Add(slice, b.Int(1))
			for i := len(outer) - 1; i >= 0; i-- { // the loops' values at slice+1, innermost first
				a, at := outer[i], nx
				if i > 0 {
					at = b.Mod(nx, b.Int(a.Size))
				}
				x = substVar(b, x, a, at)
				nx = b.Div(nx, b.Int(a.Size))
			}
			return x
		}
	default:
		return PrefetchAt{}, false
	}
	if n < 2 || nslices < 2 {
		return PrefetchAt{}, false
	}
	at := substVar(b, next(idx), loop, b.Div(b.Add(b.Mul(block, b.Int(loop.Size)), b.Var(loop)), b.Int(n)))
	// Once per step of the prefetched element (each of a step's lines has
	// its load: lineStarts), or per line where a step is less than one.
	per := n * max(1, PrefetchLine/s)
	every := int64(1)
	for 2*every <= per {
		every *= 2
	}
	return PrefetchAt{Loop: loop, Every: every, At: at, If: b.Lt(b.Add(slice, b.Int(1)), b.Int(nslices))}, true
}

// globalsAround is the global loops reduce loop a runs inside: those up
// to the innermost one that a reduce over a reads (the reduces over a
// share its loops: all run as deep as the deepest), as Linearize hoists
// it out of the others (Program.Hoisted; not out of loops of one
// iteration in all).
func globalsAround(k *Kernel, a *Axis) []*Axis {
	depth := 0
	Walk(k.Stores, func(e *Expr) {
		if e.Op != OpReduce || !slices.Contains(e.Arg.(*ReduceArg).Axes, a) {
			return
		}
		for i := len(k.Global) - 1; i >= depth; i-- {
			if usesVar(e, k.Global[i]) {
				depth = i + 1
				break
			}
		}
	})
	inner := int64(1)
	for _, g := range k.Global[depth:] {
		inner *= g.Size
	}
	if inner <= 1 {
		return k.Global
	}
	return k.Global[:depth]
}

// globalsAroundOf is globalsAround for k's loops, each answered once: a
// kernel's loads ask for the few loops of its sums, and each answer walks
// the whole kernel (a batch-8 conv's prefetch plan asked once a load: a
// third of the time a script spent scheduling it).
func globalsAroundOf(k *Kernel) func(a *Axis) []*Axis {
	memo := map[*Axis][]*Axis{}
	return func(a *Axis) []*Axis {
		around, ok := memo[a]
		if !ok {
			around = globalsAround(k, a)
			memo[a] = around
		}
		return around
	}
}

// indexOf says whether e is index arithmetic over the given loops alone
// (no load, no other loop).
func indexOf(e *Expr, axes []*Axis) bool {
	ok := true
	Walk([]*Expr{e}, func(x *Expr) {
		switch {
		case x.Op == OpVar:
			ok = ok && slices.Contains(axes, x.Arg.(*Axis))
		case x.Op == OpConst:
		case !x.Op.IsALU():
			ok = false
		}
	})
	return ok
}

// panelFLOPs is the most flops per byte of a panel's operand (half its
// rows: each element feeds one multiply-add per row) at which its panels
// are prefetched. A panel's first block waits for the panel from memory
// for about as long as it takes to compute bytes/4 x rows x 2 flops at
// ~36/rows of that rate (180 GFLOP/s a core, 10 GB/s from memory): a
// quarter of the time for BERT's 128 rows, 2 % for matmul_2048, whose
// 2048x2048 product ran 3 % slower with the prefetches (per-kernel
// times, 47.6-49.7 -> 49.3-53.9 ms: its left operand streams from
// memory for every panel, and the prefetches compete with it).
const panelFLOPs = 256

// panelQuotient is the c of the g / c through which idx reads a merged
// loop g (0 where it reads none).
func panelQuotient(idx *Expr, g *Axis) int64 {
	c := int64(0)
	Walk([]*Expr{idx}, func(x *Expr) {
		if x.Op == OpDiv && x.Src[0].Op == OpVar && x.Src[0].Arg.(*Axis) == g && x.Src[1].IsConst() {
			c = x.Src[1].Arg.(int64)
		}
	})
	return c
}

// substExpr is e with node x replaced by y, rebuilt by b.
func substExpr(b *Builder, e, x, y *Expr) *Expr {
	return b.Rebuild(e, func(z *Expr) *Expr {
		if z == x {
			return y
		}
		return nil
	}, map[*Expr]*Expr{})
}

// narrowAhead is the rows a narrow weight's prefetch runs ahead: on the
// Xeon guest the C harness streamed 9.8 GB/s one row (2176 bytes) ahead
// and 13.2 two rows ahead (12.7 four), and the decode step of the bench's
// Q8_0 model took 5.6-6.0 ms two rows ahead against 6.3-6.4 one ahead
// (three rounds alternated).
const narrowAhead = 2

// narrowAheadBytes is the distance a narrow weight's prefetch runs ahead
// at least, in bytes, in whole rows: two rows of 768 Q8_0 weights (816
// bytes each) ahead left the bus idle between rows; four (3.3 KB) made
// the bench's Q8_0 decode step 4.38-4.46 ms against 4.77-5.06 (three
// rounds alternated, Xeon guest), with Q4_K (384-byte rows of nibbles: 8
// ahead) 4.60-4.70 against 4.55-5.13. Rows of 1.5 KB or more (float16 at
// 768, Q8_0 at 2048 weights) stay 2 ahead.
const narrowAheadBytes = 3072

// lineLeaders keeps, of loads of one buffer whose indices differ by a
// constant of less than a line (a vector's lanes, a row's next block), the
// first: one prefetch covers them.
func lineLeaders(lds []*Expr) []*Expr {
	var out []*Expr
	for i, e := range lds {
		esz := int64(e.DType.Size())
		leader := true
		for j, o := range lds {
			if o == e || o.Arg != e.Arg {
				continue
			}
			ts, c := normalize(addTerms(addTerms(nil, e.Src[0], 1), o.Src[0], -1))
			if len(ts) == 0 && (c > 0 || c == 0 && j < i) && c*esz < 4*PrefetchLine {
				leader = false // o reads c elements before e (or e's element, listed first), less than a line before
				break
			}
		}
		if leader {
			out = append(out, e)
		}
	}
	return out
}

// lineStarts keeps, of loads of one buffer whose indices differ by
// constants (a vector's lanes), the first and those a whole number of
// lines after it (16 float32s, 32 halves): one prefetch for each line
// they read.
func lineStarts(lds []*Expr) []*Expr {
	var out []*Expr
	for _, e := range lds {
		first := int64(0) // how far before e the first of them reads
		for _, o := range lds {
			if o == e || o.Arg != e.Arg {
				continue
			}
			ts, c := normalize(addTerms(addTerms(nil, e.Src[0], 1), o.Src[0], -1))
			if len(ts) == 0 && c == 0 && o.id < e.id {
				first = -1 // e's element, read by o too
				break
			}
			if len(ts) == 0 && c > first {
				first = c
			}
		}
		if line := PrefetchLine * 4 / int64(e.DType.Size()); first >= 0 && first%line == 0 { // a line's elements: 16 float32s, 32 halves
			out = append(out, e)
		}
	}
	return out
}

// epiloguePrefetchMin is the fewest iterations of the reduce loop that
// the epilogue's prefetches run ahead of (a 1x1 conv's sum over 64 input
// channels, ~500 cycles of multiply-adds: a line from memory in that
// time).
const epiloguePrefetchMin = 64

// epiloguePrefetchMax bounds the prefetches a global iteration issues
// (a register block of 8 rows x 32 float32 columns reads 16 lines).
const epiloguePrefetchMax = 32

// PlanEpiloguePrefetch plans the epilogue's prefetches (Prefetch.Epilogue):
// in a kernel with one reduce (every reduce expression over the same
// loops, a register block's lanes), the unguarded float32 loads outside
// it of a buffer larger than the L2 (a residual added to a conv's
// output), at an index of the global loops alone that is a whole line
// (16 elements) from the buffer's start: the C renderer prefetches each
// before the reduce's loop, so the lines arrive while the block sums.
// Without them, those loads (one per output element, in lines no cache
// holds) stalled each block's epilogue: ResNet-50 b8's stage-3 expand
// convs with the residual, r_1568_1024_256 x6 (K = 256, 16 lines of the
// residual per block of 8 rows x 32 columns), 16.1 -> 14.7-14.8 ms of CPU
// time per core (Zen 5, two threads). Not with a keep plan, nor where the
// L2 is unknown, nor over fewer than epiloguePrefetchMin iterations, nor
// for more than epiloguePrefetchMax lines.
func PlanEpiloguePrefetch(k *Kernel, t Target) (*Kernel, error) {
	if t.L2 <= 0 || k.Keep != nil || len(k.Global) == 0 {
		return k, nil
	}
	var axes []*Axis
	one := true
	Walk(k.Stores, func(e *Expr) {
		if e.Op != OpReduce {
			return
		}
		ax := e.Arg.(*ReduceArg).Axes
		if axes == nil {
			axes = ax
		} else if !slices.Equal(axes, ax) {
			one = false
		}
	})
	if !one || len(axes) == 0 || len(globalsAround(k, axes[0])) < len(k.Global) {
		return k, nil // (a sum hoisted out of a global loop: the epilogue's loads are not in scope before it)
	}
	trip := int64(1)
	for _, a := range axes {
		if a.Sym != nil {
			return k, nil
		}
		trip *= a.Size
	}
	if trip < epiloguePrefetchMin {
		return k, nil
	}
	inside := map[*Expr]bool{} // nodes a reduce reads
	Walk(k.Stores, func(e *Expr) {
		if e.Op == OpReduce {
			Walk(e.Src, func(x *Expr) { inside[x] = true })
		}
	})
	var lds []*Expr
	type at struct {
		buf int
		idx *Expr
	}
	seen := map[at]bool{}
	ok := true
	Walk(k.Stores, func(e *Expr) {
		if !ok || inside[e] || !epilogueLoad(k, t, e) {
			return
		}
		key := at{e.Arg.(int), e.Src[0]}
		if seen[key] {
			return
		}
		seen[key] = true
		lds = append(lds, e)
		if len(lds) > epiloguePrefetchMax {
			ok = false
		}
	})
	if !ok || len(lds) == 0 {
		return k, nil
	}
	nk := *k
	p := Prefetch{Loads: map[*Expr]PrefetchAt{}}
	if k.Prefetch != nil {
		p = *k.Prefetch
	}
	p.Epilogue = lds
	nk.Prefetch = &p
	return &nk, nil
}

// epilogueLoad says whether e is a load Prefetch.Epilogue may name: an
// unguarded float32 load of a buffer larger than the L2 (when t is
// known), at an index of global loops alone, a whole line from the start.
func epilogueLoad(k *Kernel, t Target, e *Expr) bool {
	if e.Op != OpLoad || len(e.Src) != 1 || e.DType != Float32 {
		return false
	}
	if t.L2 > 0 && k.Bufs[e.Arg.(int)].Size*4 <= t.L2 {
		return false
	}
	global := true
	Walk(e.Src, func(x *Expr) {
		if x.Op == OpVar && x.Arg.(*Axis).Kind != AxisGlobal {
			global = false
		}
	})
	return global && alignedTo(e.Src[0], PrefetchLine)
}

// verify re-derives each prefetch: a load of the kernel, unguarded, at
// stride 1 along its reduce loop and Dist along its global loop.
func (p *Prefetch) verify(k *Kernel, in map[*Expr]bool) error {
	for _, ld := range p.Epilogue {
		if !in[ld] || !epilogueLoad(k, Target{}, ld) {
			return fmt.Errorf("prefetch: %s is not an unguarded float32 load of the kernel at a line of the global loops", ld)
		}
	}
	panelAt := map[*Axis]*PrefetchAt{} // a reduce loop's first panel prefetch
	aroundOf := globalsAroundOf(k)
	for ld, at := range p.Loads {
		if !in[ld] || ld.Op != OpLoad || len(ld.Src) != 1 {
			return fmt.Errorf("prefetch: %s is not an unguarded load of the kernel", ld)
		}
		if at.At != nil { // a panel's: any element of the buffer, under one test per loop
			if first := panelAt[at.Loop]; first == nil {
				panelAt[at.Loop] = &at
			} else if first.Every != at.Every || first.If != at.If {
				return fmt.Errorf("prefetches of panels along %s every %d and %d, or under two conditions (the renderer writes one test)", at.Loop.Name(), first.Every, at.Every)
			}
			// over the loops the prefetch is written in: its sum's loop
			// and the global loops around it
			around := aroundOf(at.Loop)
			axes := append(slices.Clone(around), at.Loop)
			if !indexOf(at.At, axes) || at.If == nil || at.If.DType != Bool || !indexOf(at.If, around) || at.Loop == nil || at.Loop.Kind != AxisReduce || at.Every < 1 || at.Every&(at.Every-1) != 0 {
				return fmt.Errorf("prefetch of %s at %v if %v every %d: not indices of its loops", ld, at.At, at.If, at.Every)
			}
			continue
		}
		if at.Loop == nil || at.Loop.Kind != AxisReduce || !slices.Contains(k.Global, at.Next) && (at.Next != at.Loop || at.Loop.Sym != nil) {
			return fmt.Errorf("prefetch of %s: %v is neither a global loop of the kernel nor its own loop, or %v is not a reduce loop", ld, at.Next, at.Loop)
		}
		s, ok := AxisStride(ld.Src[0], at.Loop)
		if esz := int64(ld.DType.Size()); !ok || s < 1 || at.Every < 1 || at.Every&(at.Every-1) != 0 || at.Every > 1 && s*esz*at.Every > 4*PrefetchLine {
			return fmt.Errorf("prefetch of %s every %d of %s: it does not read a line in as many iterations", ld, at.Every, at.Loop.Name())
		}
		if at.Ahead < 1 || at.Next.Sym == nil && at.Ahead >= at.Next.Size {
			return fmt.Errorf("prefetch of %s %d iterations of %s ahead (of %d)", ld, at.Ahead, at.Next.Name(), at.Next.Size)
		}
		if s, ok := AxisStride(ld.Src[0], at.Next); !ok || s != at.Dist {
			return fmt.Errorf("prefetch of %s one %s (%d) ahead, but it reads %s at stride %d", ld, at.Next.Name(), at.Dist, at.Next.Name(), s)
		}
	}
	return nil
}

func (p *Prefetch) dump(names map[*Expr]string) string {
	var lds []*Expr
	for ld := range p.Loads {
		lds = append(lds, ld)
	}
	slices.SortFunc(lds, func(a, b *Expr) int { return compareNames(names[a], names[b]) })
	s := ""
	for _, ld := range lds {
		at := p.Loads[ld]
		if at.At != nil {
			s += fmt.Sprintf("  prefetch %s's next panel, every %d of %s\n", names[ld], at.Every, at.Loop.Name())
			continue
		}
		s += fmt.Sprintf("  prefetch %s %d %s (%d) ahead, every %d of %s\n", names[ld], at.Ahead, at.Next.Name(), at.Dist, at.Every, at.Loop.Name())
	}
	for _, ld := range p.Epilogue {
		s += fmt.Sprintf("  prefetch %s before the reduce\n", names[ld])
	}
	return s
}

// compareNames orders dump names (%12 before %100).
func compareNames(a, b string) int {
	if len(a) != len(b) {
		return len(a) - len(b)
	}
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
