package ir

import (
	"fmt"
	"slices"
)

// Stream is the stream_stores pass's plan (CPU): the SIMD store runs the C
// renderer writes with non-temporal stores, around the caches.
//
// A plain store to a line that is in no cache first reads the line from
// memory (a read for ownership), then writes it back when it is evicted:
// an output written once and far larger than the caches costs its bytes
// twice in reads and once in writes. A non-temporal store of a whole line
// writes it without reading it. Its reader (the next kernel) then reads it
// from memory, which it does anyway when the output has left the last
// level cache before the reader runs. Measured on the Zen 4 host (32 MiB
// L3), ResNet-50 at batch 8, one thread, per-kernel minima: the 1x1 convs
// with a 25.7 MB output 7.9-10.2 ms instead of 9.8-14.2, those with 12.8
// MB 8.5-8.7 ms instead of 9.1-9.5, their readers unchanged.
//
// Only runs of a whole cache line (16 float32 lanes, 64 bytes) at an index
// that is a multiple of 16 are streamed: with the buffer's base aligned
// to 64 bytes (Target.BufAlign) the store is aligned, as the instruction
// requires, and no line is written in parts (a partly written line costs
// a read at the memory controller).
type Stream struct {
	Runs []int // indices of SIMD.Stores, ascending
	// Cols: the column loop of a kernel whose keep plan keeps its values
	// in scratch (Keep.Scratch) runs in lines of 16 columns, and its
	// store, the kernel's only one to that buffer, is one streamed line
	// each (lineCols: float32, at stride 1 along the columns, aligned
	// at column 0, the row a whole number of lines).
	Cols bool
	// Lag: with Cols, each row's column loop runs inside the next row's
	// kept loop (Keep.Leader's), Lag lines an iteration, and the last
	// row's after the rows (0: after the row's own reduces). The row's
	// values sit in one of two scratch rows while the next row is
	// computed. After its reduces a row had only its column loop left, a
	// burst of streamed stores that stalled the core on the bus (softmax
	// 4096, Zen 5 guest, TSC cycles a row: max pass ~355, exp-and-sum
	// ~1150, column loop ~1090); inside the next row's exp loop the
	// stores drain while it computes. The C harness of softmax_4096's
	// kernel (two threads, huge pages, rows from memory, alternated run by
	// run, medians of 25-30): 2.14-2.16 against 2.29-2.37 ms, 2.50-2.53
	// against 2.62-2.63, and 3.34 against 3.82 at a busy minute.
	Lag int64
	// Loop is, with Lag, the loop the lagged lines run in: the keep plan's
	// (Keep.Leader's first axis), or, in a row kernel without one, its
	// first sum over the row (rowLagLoop), whose loads also prefetch the
	// next row (rowPassPrefetches).
	Loop *Axis
}

// streamLine is the bytes of a cache line; a streamed run writes one.
const streamLine = 64

// PlanStream picks the SIMD store runs to stream: runs of one cache line
// at an aligned index, into an output buffer of at least a quarter of the
// last level cache (Target.L3) that the kernel does not read (a KBLOCK
// kernel's partial sums are read back from the output).
func PlanStream(k *Kernel, t Target) (*Kernel, error) {
	if t.L3 <= 0 || t.BufAlign < streamLine || t.BufAlign%streamLine != 0 {
		return k, nil
	}
	read := readBufs(k)
	var runs []int
	if k.SIMD != nil {
		for i, ss := range k.SIMD.Stores {
			b := ss[0].Arg.(int)
			if streamOutput(k, t, b, read) && streamable(k, ss) {
				runs = append(runs, i)
			}
		}
	}
	// The keep pass chose scratch only where this holds (keepScratch).
	cols := k.Keep != nil && k.Keep.Scratch && streamOutput(k, t, k.Keep.Store.Arg.(int), read) && lineCols(k, k.Keep.Store)
	rowLoop := rowLagLoop(k, t)
	if len(runs) == 0 && !cols && rowLoop == nil {
		return k, nil
	}
	nk := *k
	nk.Stream = &Stream{Runs: runs, Cols: cols}
	switch {
	case cols:
		if nk.Stream.Lag = lagLines(&nk, t); nk.Stream.Lag > 0 {
			nk.Stream.Loop = k.Keep.Leader.Arg.(*ReduceArg).Axes[0]
		}
	case rowLoop != nil:
		nk.Stream.Cols, nk.Stream.Loop = true, rowLoop
		nk.Stream.Lag = k.Global[1].Size / int64(streamLine/Float32.Size()) / rowLoop.Size
	}
	return &nk, nil
}

// rowLagLoop is, for a row kernel without a keep plan (log_softmax,
// layernorm, RMSNorm: its sums hoisted out of the columns' loop, the
// column loop recomputing its values from the row), the loop its column
// loop lags into (Stream.Lag), or nil: where the shape allows it
// (rowLagShape), the output is one to stream and the L1 holds three rows
// (the previous one, which the lagged lines read, this one and the next,
// which this one prefetches). Streamed after the row's sums, the
// column loop's stores came in a burst that stalled the core, and were
// slower than plain stores; lagged, they drain while the next row is
// summed. A C harness of layernorm_4096's kernel (Zen 5 guest, two
// threads, rows from memory, alternated run by run, medians of 15):
// 2.04-2.52 ms with plain stores after the sums, 1.69-2.27 lagged.
func rowLagLoop(k *Kernel, t Target) *Axis {
	loop := rowLagShape(k)
	if loop == nil || t.L1 <= 0 || 3*k.Global[1].Size*int64(Float32.Size()) > t.L1 ||
		!streamOutput(k, t, k.Stores[0].Arg.(int), readBufs(k)) {
		return nil
	}
	return loop
}

// rowLagShape is the first sum's loop of a row kernel without a keep plan
// whose column loop can run lagged in it, or nil: rows and columns alone
// (two global axes, one store, written in whole lines: lineCols, not by
// the simd pass's store runs, no other plan the row loop renders), every
// sum over one loop of its own, hoisted out of the columns' loop, none
// inside another's loop, and the first sum's iterations a divisor of the
// row's lines.
func rowLagShape(k *Kernel) *Axis {
	if k.Keep != nil || len(k.Global) != 2 || len(k.Stores) != 1 || k.Global[0].Sym != nil || !lineCols(k, k.Stores[0]) ||
		k.SIMD != nil && len(k.SIMD.Stores) > 0 || k.Pro != nil || k.Rows != nil || k.Skip != nil || k.Tabs != nil || k.ValueLoops != nil || k.VecLoops != nil {
		return nil
	}
	var first *Axis
	ok := true
	Walk(k.Stores, func(e *Expr) { // sources first: a sum after those it reads
		if e.Op != OpReduce {
			return
		}
		axes := e.Arg.(*ReduceArg).Axes
		if len(axes) != 1 || axes[0].Sym != nil || usesVar(e, k.Global[1]) {
			ok = false
			return
		}
		Walk(e.Src, func(x *Expr) {
			ok = ok && (x.Op != OpReduce || !usesVar(x, axes[0])) // a sum in this one's loop
		})
		if first == nil {
			first = axes[0]
		}
	})
	lines := k.Global[1].Size / int64(streamLine/Float32.Size())
	if !ok || first == nil || first.Size > lines || lines%first.Size != 0 {
		return nil
	}
	return first
}

// ColumnStore is the store a streamed column loop writes in lines
// (Stream.Cols): the keep plan's, or a row kernel's only one.
func (k *Kernel) ColumnStore() *Expr {
	if k.Keep != nil {
		return k.Keep.Store
	}
	return k.Stores[0]
}

// lagLines is the lines of a row's column loop that the next row's kept
// loop writes an iteration (Stream.Lag), 0 where the kernel does not
// take that form: it needs rows and columns alone (two global axes), the
// column loop's store its only one and its values the keep plan's in
// scratch (Cols), no other plan that the row loop renders (a prologue,
// row guards, skipped blocks, tables), the kept loop's iterations a
// constant that divides the lines, and the row's input beside its two
// scratch rows in L1.
func lagLines(k *Kernel, t Target) int64 {
	if k.Keep == nil || !k.Keep.Scratch || !lagShape(k) {
		return 0
	}
	col := k.Global[1]
	if t.L1 <= 0 || 3*col.Size*int64(Float32.Size()) > t.L1 {
		return 0
	}
	trips, ok := keptTrips(k)
	lines := col.Size / int64(streamLine/Float32.Size())
	if !ok || lines%trips != 0 {
		return 0
	}
	return lines / trips
}

// lagShape says whether k is rows and columns alone, as a lagged column
// loop needs: two global axes, the keep plan's store the only one, and no
// plan that the row loop renders besides the keep plan's.
func lagShape(k *Kernel) bool {
	return len(k.Global) == 2 && len(k.Stores) == 1 && k.Stores[0] == k.Keep.Store &&
		k.Pro == nil && k.Rows == nil && k.Skip == nil && k.Tabs == nil && k.ValueLoops == nil && k.VecLoops == nil
}

// keptTrips is the iterations of the keep plan's loop: the product of the
// leader's reduce axes (false where one is symbolic).
func keptTrips(k *Kernel) (int64, bool) {
	n := int64(1)
	for _, a := range k.Keep.Leader.Arg.(*ReduceArg).Axes {
		if a.Sym != nil || a.Size <= 0 {
			return 0, false
		}
		n *= a.Size
	}
	return n, true
}

// lineCols says whether the column loop of k can write store st in whole
// aligned lines: st is a float32 store, its buffer's only one, at stride 1
// along the innermost global axis (the columns), aligned to a line at
// column 0 for every value of the other variables, and the columns are a
// whole number of lines. With 64-byte aligned buffers each line of 16
// columns is then one aligned 64-byte line of the output.
func lineCols(k *Kernel, st *Expr) bool {
	lanes := int64(streamLine / Float32.Size())
	col := k.Global[len(k.Global)-1]
	if !keepStore(k, st) || col.Size%lanes != 0 || col.Sym != nil {
		return false
	}
	if s, ok := AxisStride(st.Src[0], col); !ok || s != 1 {
		return false
	}
	b := NewBuilder()
	return alignedTo(substVar(b, st.Src[0], col, b.Int(0)), lanes)
}

// streamOutput says whether buffer b of k is an output stream_stores may
// write around the caches: float32, at least a quarter of the last level
// cache, not read by the kernel (read is readBufs(k)), on a target whose
// buffers are line-aligned.
func streamOutput(k *Kernel, t Target, b int, read map[int]bool) bool {
	return t.L3 > 0 && t.BufAlign >= streamLine && t.BufAlign%streamLine == 0 && !read[b] &&
		k.Bufs[b].DType == Float32 && k.Bufs[b].Size*int64(k.Bufs[b].DType.Size()) >= t.L3/4
}

// streamLines says whether an elementwise kernel's output b is one to
// block in lines and stream (Target.streamedLines, planStreamedStores):
// one stream_stores writes around the caches, and at least the whole L3.
// Such an output is read by the next kernel, which finds it in the L3
// where it fits: streamed, it reads it from memory. On the Zen 5 host the
// cnn training step's elementwise kernels with outputs of 8-26 MB gained
// nothing streamed (per-kernel minima at load 6).
func streamLines(k *Kernel, t Target, b int, read map[int]bool) bool {
	return streamOutput(k, t, b, read) && k.Bufs[b].Size*int64(k.Bufs[b].DType.Size()) >= t.L3
}

// streamable says whether a SIMD store run writes one whole aligned line
// of float32s.
func streamable(k *Kernel, ss []*Expr) bool {
	lanes := int64(streamLine / Float32.Size())
	return int64(len(ss)) == lanes && k.Bufs[ss[0].Arg.(int)].DType == Float32 && alignedTo(ss[0].Src[0], lanes)
}

// readBufs lists the buffers a kernel loads from.
func readBufs(k *Kernel) map[int]bool {
	read := map[int]bool{}
	Walk(k.Stores, func(e *Expr) {
		if e.Op == OpLoad {
			read[e.Arg.(int)] = true
		}
	})
	return read
}

// alignedTo proves that an integer index is a multiple of n for every
// value of its variables: the constant and every coefficient divide by n.
func alignedTo(e *Expr, n int64) bool {
	ts, c := normalize(addTerms(nil, e, 1))
	if c%n != 0 {
		return false
	}
	for _, t := range ts {
		if t.k%n != 0 {
			return false
		}
	}
	return true
}

// verify checks a Stream plan against its kernel: every run is a SIMD
// store run, once, of a whole aligned line, into a buffer the kernel does
// not read.
func (s *Stream) verify(k *Kernel) error {
	if s.Cols {
		if k.Keep != nil && !k.Keep.Scratch || k.Keep == nil && (s.Lag == 0 || s.Loop != rowLagShape(k)) {
			return fmt.Errorf("stream: columns in lines without a keep plan in scratch, or lagged into the first sum of a row kernel")
		}
		if st := k.ColumnStore(); !lineCols(k, st) || readBufs(k)[st.Arg.(int)] {
			return fmt.Errorf("stream: the column loop's store to buf%d is not in whole aligned lines of an output the kernel does not read", st.Arg)
		}
	}
	if s.Lag != 0 {
		if !s.Cols || k.Keep != nil && (!lagShape(k) || s.Loop != k.Keep.Leader.Arg.(*ReduceArg).Axes[0]) {
			return fmt.Errorf("stream: a lagged column loop (%d lines an iteration) in a kernel that is not rows and streamed columns alone", s.Lag)
		}
		trips, ok := int64(0), false
		if k.Keep != nil {
			trips, ok = keptTrips(k)
		} else if s.Loop != nil {
			trips, ok = s.Loop.Size, true
		}
		if lines := k.Global[1].Size / int64(streamLine/Float32.Size()); s.Lag < 0 || !ok || trips*s.Lag != lines {
			return fmt.Errorf("stream: %d lines an iteration of the lagged loop do not write the row's %d lines", s.Lag, lines)
		}
	}
	if len(s.Runs) == 0 {
		return nil
	}
	if k.SIMD == nil {
		return fmt.Errorf("stream: no SIMD store runs")
	}
	read := readBufs(k)
	prev := -1
	for _, i := range s.Runs {
		if i <= prev || i >= len(k.SIMD.Stores) {
			return fmt.Errorf("stream: run %d is not a SIMD store run (of %d), in order", i, len(k.SIMD.Stores))
		}
		prev = i
		ss := k.SIMD.Stores[i]
		if !streamable(k, ss) {
			return fmt.Errorf("stream: store run to buf%d at %s is not one aligned line of float32s", ss[0].Arg, ss[0].Src[0])
		}
		if read[ss[0].Arg.(int)] {
			return fmt.Errorf("stream: buf%d is read by the kernel that streams it", ss[0].Arg)
		}
	}
	return nil
}

// Streams says whether a store is lane 0 of a streamed run.
func (k *Kernel) Streams(st *Expr) bool {
	if k.Stream == nil || k.SIMD == nil {
		return false
	}
	run, lane, ok := k.SIMD.Lane(st)
	return ok && lane == 0 && slices.Contains(k.Stream.Runs, run)
}
