// Package render turns kernel IR into device source text. One core walks
// the linearized kernel; a Lang supplies what differs between C-like
// dialects (types, signature, math functions). Output is stable: the same
// kernel always renders to the same bytes.
package render

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"tgc/pkg/ir"
)

// Lang is a C-like dialect.
type Lang struct {
	Name  string // device name, e.g. "CPU"
	Ext   string // source file extension
	Types map[ir.DType]string
	// Prelude renders what precedes a kernel, given the ops it uses.
	Prelude func(ops map[ir.Op]bool) string
	// Signature renders the function header and the buffer declarations.
	Signature func(k *ir.Kernel) string
	// OuterLoop renders the loop over the outermost global axis, its
	// variable of type idx.
	OuterLoop func(a *ir.Axis, idx string) string
	// spell is the dialect's column of the op table (ir.OpInfo); the
	// columns left empty are C's.
	spell func(o *ir.OpInfo) string
	// Index spells ir.Index: a 32-bit int, and the 64-bit int of kernels
	// whose indices may leave the int32 range (ir.Kernel.WideIndex).
	Index [2]string
	// Unsigned spells the unsigned ints of 32 and 64 bits, in which integer
	// arithmetic that may wrap and helper functions compute (signed
	// overflow is undefined in every C dialect).
	Unsigned [2]string
	// FnQual qualifies the helper functions a kernel calls (tg_shl_int32,
	// tg_sat_int32...).
	FnQual string
	// LongSfx is the suffix of a 64-bit integer literal.
	LongSfx string
	// HalfRound, when set, defines tg_round_half(float): float16 values live in
	// float registers and a cast to float16 rounds through it.
	HalfRound string
	// Bits spells, for each float dtype, its register value as the
	// unsigned integer of its storage bits and back ([to, from], %s the
	// operand). A pattern may call functions of Helpers, whose definitions
	// are then emitted with the kernel.
	Bits    map[ir.DType][2]string
	Helpers map[string]string
	// NoFloat64: the language has no float64 (Metal); Float64Prelude
	// precedes kernels that use it (OpenCL's extension pragma).
	NoFloat64      bool
	Float64Prelude string
	FloatSfx       string // float literal suffix
	// SIMD prints a kernel's SIMD plan (ir.SIMD) as GCC vector
	// extensions (c_vec.go).
	SIMD bool

	// GPU dialects only (see gpu.go): the dialect's hooks, and the device
	// limits the launch geometry is chosen within.
	gpu    *gpuDialect
	Limits Limits
}

// Supports says whether lang can express every dtype k uses (Metal has no
// float64): an error names the dtype, before anything is rendered.
func (l *Lang) Supports(k *ir.Kernel) error {
	if !l.NoFloat64 {
		return nil
	}
	uses := false
	for _, b := range k.Bufs {
		uses = uses || b.DType == ir.Float64
	}
	ir.Walk(k.Stores, func(e *ir.Expr) { uses = uses || e.DType == ir.Float64 })
	if uses {
		return fmt.Errorf("%s: kernel %s uses float64, which %s does not have (cast to float32 first)", l.Name, k.Name, l.Name)
	}
	return nil
}

// Render renders one kernel in lang.
func Render(lang *Lang, k *ir.Kernel) string {
	r := &renderer{lang: lang, k: k, prog: ir.Linearize(k), names: map[*ir.Expr]string{}, wide: k.WideIndex()}
	r.idx = lang.Index[0]
	if r.wide {
		r.idx = lang.Index[1]
	}
	return r.kernel()
}

type renderer struct {
	lang   *Lang
	k      *ir.Kernel
	prog   *ir.Program
	names  map[*ir.Expr]string
	sb     strings.Builder
	indent int
	nalu   int
	nval   int
	nacc   int
	// epiloguePrefetched: the epilogue's prefetches are written (before the first reduce loop)
	epiloguePrefetched bool
	// group, when set, renders the top-level reduces of a GPU kernel split
	// across the lanes of a work-group (gpu.go).
	group func(e *ir.Expr)
	// vecLoad, when set, renders e if it is a lane of a vector load (all
	// lanes at once, gpu_vec.go) and says whether it was; vecStores maps
	// each store of a vector store to its lanes.
	vecLoad   func(e *ir.Expr) bool
	vecStores map[*ir.Expr][ir.Vec4Width]*ir.Expr
	// vec, when set, prints the kernel's SIMD plan (c_vec.go).
	vec *cVec
	// keep, when set, is the kernel's keep plan (ir.Keep): its reduce
	// stores the values its store reads back; dead lists the nodes only
	// the read-back value needed (not rendered).
	keep *ir.Keep
	dead map[*ir.Expr]bool
	// lag are the row's values a lagged column loop reads (ir.Stream.Lag),
	// each saved at the row's end into tg_lagN, N its index here.
	lag []*ir.Expr
	// pro, when set, is the kernel's prologue plan (ir.Prologue): its
	// value's occurrences read the scratch row tg_pro, and the nodes only
	// they read are dead too.
	pro *ir.Prologue
	// tabs, when set, is the kernel's tables plan (ir.Tables): each
	// value reads its table tg_tabN, filled before its reduce's loops
	// (tabling: the value being written there), and the nodes only the
	// values read are dead.
	tabs    *ir.Tables
	tabling *ir.Expr
	// held are the conditions the open loops have tested (skip plans'
	// `if (!c) continue;`): a load guarded by them alone reads plainly.
	held map[*ir.Expr]bool
	// rows are the row pointers declared for the open loop (ir.Rows): a
	// planned load reads its row at its offset, with no guard.
	rows map[*ir.Expr]string
	nrow int
	// wide: index arithmetic is 64-bit; idx spells its type.
	wide bool
	idx  string
	// helpers are the definitions of the helper functions the kernel calls,
	// in first-use order (helperNames dedupes them).
	helpers     []string
	helperNames map[string]bool
}

// need records a helper function's definition; it is emitted once, before
// the kernel, guarded (kernels share translation units).
func (r *renderer) need(name, def string) {
	if r.helperNames == nil {
		r.helperNames = map[string]bool{}
	}
	if r.helperNames[name] {
		return
	}
	r.helperNames[name] = true
	guard := strings.ToUpper(name)
	r.helpers = append(r.helpers, fmt.Sprintf("#ifndef %s\n#define %s\n%s\n#endif\n", guard, guard, def))
}

func (r *renderer) line(format string, args ...any) {
	r.sb.WriteString(strings.Repeat("  ", r.indent))
	fmt.Fprintf(&r.sb, format, args...)
	r.sb.WriteByte('\n')
}

func (r *renderer) kernel() string {
	if r.lang.gpu != nil {
		return r.gpuKernel()
	}
	ops := map[ir.Op]bool{}
	ir.Walk(r.k.Stores, func(e *ir.Expr) { ops[e.Op] = true })
	head := r.lang.Prelude(ops)
	vecPrelude := ""
	if r.lang.SIMD {
		if r.vec = newCVec(r.k); r.vec != nil {
			vecPrelude = cVecPrelude(r.k.SIMD.Width)
			if r.vec.narrow {
				vecPrelude += cNarrowPrelude(r.k.SIMD.Width)
			}
		}
	}
	if r.k.Keep != nil && r.lang.gpu == nil {
		r.keep = r.k.Keep
		r.dead = keptOnly(r.k)
	}
	if r.k.Pro != nil && r.lang.gpu == nil {
		r.pro = r.k.Pro
		r.dead = proOnly(r.k)
	}
	if r.k.Tabs != nil && r.lang.gpu == nil {
		r.tabs = r.k.Tabs
		if r.dead == nil {
			r.dead = map[*ir.Expr]bool{}
		}
		for e := range r.k.TabledOnly() {
			r.dead[e] = true
		}
	}
	r.sb.WriteString(r.lang.Signature(r.k))
	r.indent = 1
	lines := r.k.Stream != nil && r.k.Stream.Cols // the column loop in lines (ir.Stream.Cols)
	lagged := lines && r.k.Stream.Lag > 0         // in the next row's kept loop (ir.Stream.Lag)
	if r.keep != nil && r.keep.Scratch {
		// The row of kept values (ir.Keep.Scratch), one float a column;
		// two where a row's values wait for the next row's kept loop.
		if lagged {
			r.line("float tg_keep2[2][%d] __attribute__((aligned(64)));", r.k.Global[len(r.k.Global)-1].Size)
		} else {
			r.line("float tg_keep[%d] __attribute__((aligned(64)));", r.k.Global[len(r.k.Global)-1].Size)
		}
	}
	if lagged {
		r.declareLag()
	}
	if r.k.Rows != nil {
		// The row the row_guards plan's loads read where their guard fails.
		r.line("static const float tg_zeros[%d];", r.k.Rows.Zeros)
	}
	for i, a := range r.k.Global {
		// What does not use the loops still to open (ir.Program.Hoisted).
		if i == 0 && r.pro != nil {
			r.prologue()
		} else {
			if lagged && i == 1 && r.keep != nil { // this row's scratch row
				r.line("float *tg_keep = tg_keep2[%s & 1];", r.k.Global[0].Name())
			}
			r.block(r.prog.Hoisted[i])
		}
		switch {
		case i == 0:
			r.line("%s", r.lang.OuterLoop(a, r.idx))
		case lagged:
			// The column loop runs in the next row's kept loop: what it
			// reads of this row is saved for it.
			for j, e := range r.lag {
				r.line("tg_lag%d = %s;", j, r.expr(e))
			}
			continue
		case lines && i == len(r.k.Global)-1:
			// 16 columns at a time into a line, written around the
			// caches as one: gcc makes the inner loop one vector.
			r.line("for (%s %s_line = 0; %s_line < %s; %s_line += 16) {", r.idx, a.Name(), a.Name(), r.trip(a), a.Name())
			r.indent++
			r.openLine(a, a.Name()+"_line")
			continue
		default:
			if r.lang.gpu == nil && r.k.VecLoops.Has(a) {
				r.line("#pragma omp simd simdlen(%d)", r.k.VecLoops.Width)
			}
			r.line("for (%s %s = 0; %s < %s; %s++) {", r.idx, a.Name(), a.Name(), r.trip(a), a.Name())
		}
		r.indent++
	}
	if lagged {
		r.indent--
		r.line("}")
		r.lastLagRow()
		r.line("tg_sfence();")
		r.sb.WriteString("}\n")
		return head + strings.Join(r.helpers, "") + vecPrelude + r.sb.String()
	}
	r.block(r.prog.Innermost)
	for _, s := range r.prog.Stores {
		if lines && s == r.k.ColumnStore() {
			r.storeLine(s)
			continue
		}
		if run := r.vecStore(s); run != nil {
			if run[0] == s {
				store := "tg_store"
				if r.k.Streams(s) {
					r.need("tg_stream", cStreamDef)
					store = "tg_stream"
				}
				r.line("%s(&%s[%s], %s);", store, BufName(r.k, s.Arg.(int)), r.expr(s.Src[0]), r.vexpr(ir.LanesOf(run, 1)))
			}
			continue
		}
		r.line("%s[%s] = %s;", BufName(r.k, s.Arg.(int)), r.expr(s.Src[0]), r.storeExpr(s))
	}
	for i := range r.k.Global {
		if lines && i == 0 {
			r.closeLine()
		}
		r.indent--
		r.line("}")
	}
	if r.k.Stream != nil && (r.vec != nil || lines) {
		// Non-temporal stores are weakly ordered: they must reach memory
		// before the launch reports this range done.
		r.need("tg_stream", cStreamDef)
		r.line("tg_sfence();")
	}
	r.sb.WriteString("}\n")
	return head + strings.Join(r.helpers, "") + vecPrelude + r.sb.String()
}

// openLine opens a line of 16 columns of axis a from column lineStart
// (ir.Stream.Cols): the line's values gather in tg_line, gcc makes the
// loop over them one vector; storeLine puts store st's value in it and
// closeLine writes it around the caches.
func (r *renderer) openLine(a *ir.Axis, lineStart string) {
	r.line("float tg_line[16] __attribute__((aligned(64)));")
	r.line("float *tg_dst = 0;")
	r.line("for (int tg_l = 0; tg_l < 16; tg_l++) {")
	r.indent++
	r.line("%s %s = %s + tg_l;", r.idx, a.Name(), lineStart)
}

func (r *renderer) storeLine(st *ir.Expr) {
	r.line("tg_line[tg_l] = %s;", r.storeExpr(st))
	r.line("tg_dst = &%s[%s] - tg_l;", BufName(r.k, st.Arg.(int)), r.expr(st.Src[0]))
}

func (r *renderer) closeLine() {
	r.indent--
	r.line("}")
	r.need("tg_stream_line", cStreamLineDef)
	r.line("tg_stream_line(tg_dst, tg_line);")
}

// param is how the kernel reads vars[i].
func (r *renderer) param(i int) string {
	if r.lang.gpu != nil {
		return fmt.Sprintf("var%d", i)
	}
	return fmt.Sprintf("vars[%d]", i)
}

// trip is a loop's trip count: its size, or its symbolic bound read from
// the vars (a dimension that depends on a variable).
func (r *renderer) trip(a *ir.Axis) string {
	if a.Sym == nil {
		return fmt.Sprint(a.Size)
	}
	if a.Sym.Add == 0 {
		return r.param(a.Sym.Param)
	}
	return fmt.Sprintf("(%s%+d)", r.param(a.Sym.Param), a.Sym.Add)
}

// BufName is a buffer's parameter name: outputs are out0.., inputs in1...
func BufName(k *ir.Kernel, i int) string {
	if k.Bufs[i].Output {
		return fmt.Sprintf("out%d", i)
	}
	return fmt.Sprintf("in%d", i)
}

func (r *renderer) block(b *ir.Block) {
	for _, e := range b.Nodes {
		if !r.prog.Named(e) || (r.vec != nil && r.vec.skip[e]) || r.dead[e] {
			continue
		}
		if r.vecLoad != nil && e.Op == ir.OpLoad && r.vecLoad(e) {
			continue
		}
		if e.Op == ir.OpReduce {
			if r.group != nil && b == r.prog.Top {
				r.group(e)
			} else {
				r.reduce(e)
			}
			continue
		}
		var name string
		if e.Op == ir.OpLoad {
			name = fmt.Sprintf("val%d", r.nval)
			r.nval++
		} else {
			name = fmt.Sprintf("alu%d", r.nalu)
			r.nalu++
		}
		r.line("%s %s = %s;", r.typ(e.DType), name, r.expr(e))
		r.names[e] = name
		if e.Op == ir.OpLoad {
			r.prefetch(e)
		}
	}
}

// prefetch writes the prefetch the plan has for load e (ir.Prefetch): once
// a line along its reduce loop, the element it reads in the next iteration
// of its global loop (its own in the last one of the range).
func (r *renderer) prefetch(e *ir.Expr) {
	if r.k.Prefetch == nil {
		return
	}
	at, ok := r.k.Prefetch.Loads[e]
	if !ok {
		return
	}
	if at.At != nil {
		return // at the top of its loop (panelPrefetches)
	}
	// Along the split loop the guard is its whole trip, not the piece's
	// end: a core runs its range's pieces in order, and a prefetch that
	// stopped at each piece's end left the next piece's first rows to
	// demand misses (a decode's Q4_K 768x2048 product in 8 pieces a core:
	// 53.9-56.6 µs, 51.5-54.5 guarded by the trip, C harness, two cores).
	last := r.trip(at.Next)
	pf := fmt.Sprintf("__builtin_prefetch(&%s[%s + (%s + %d < %s ? %d : 0)]);", BufName(r.k, e.Arg.(int)), r.expr(e.Src[0]), at.Next.Name(), at.Ahead, last, at.Ahead*at.Dist)
	if at.Every > 1 {
		pf = fmt.Sprintf("if ((%s & %d) == 0) %s", at.Loop.Name(), at.Every-1, pf)
	}
	r.line("%s", pf)
}

// panelPrefetches writes, first in reduce loop a's body, the prefetches of
// next column panels (ir.Prefetch's At), in one test: between a load and
// the multiply-add that reads it, a test made gcc multiply and add apart.
func (r *renderer) panelPrefetches(a *ir.Axis) {
	p := r.k.Prefetch
	if p == nil || r.lang.gpu != nil {
		return
	}
	var pfs []string
	var at ir.PrefetchAt
	for ld, x := range p.Loads {
		if x.At != nil && x.Loop == a {
			at = x
			pfs = append(pfs, fmt.Sprintf("__builtin_prefetch(&%s[%s], 0, 2);", BufName(r.k, ld.Arg.(int)), r.inline(x.At)))
		}
	}
	if len(pfs) == 0 {
		return
	}
	slices.Sort(pfs)
	r.line("if ((%s & %d) == 0 && %s) {", a.Name(), at.Every-1, r.inline(at.If))
	for _, pf := range pfs {
		r.line("  %s", pf)
	}
	r.line("}")
}

// reduce renders a reduce's group: one accumulator per member, one loop
// nest, the shared body, then each member's update.
func (r *renderer) reduce(e *ir.Expr) {
	if _, done := r.names[e]; done {
		return // rendered with its group
	}
	leader := r.prog.Leader[e]
	members := r.prog.Members[leader]
	accs := make([]string, len(members))
	for i, m := range members {
		if l, ok := r.vecLane(m); ok {
			if l.lane == 0 {
				src := r.vec.src(l.run)
				r.vec.acc[l.run] = r.vec.fresh("vacc")
				init := "{0}"
				if m.Arg.(*ir.ReduceArg).Op == ir.OpMaxReduce {
					init = "{" + strings.Repeat("-INFINITY,", src.W-1) + "-INFINITY}"
				}
				r.line("%s %s = %s;", vtype(src), r.vec.acc[l.run], init)
			}
			continue
		}
		accs[i] = fmt.Sprintf("acc%d", r.nacc)
		r.nacc++
		typ := r.typ(m.DType)
		if wrapSum(m) { // an unsigned accumulator: the sum wraps, never overflows
			typ = r.unsigned(m.DType)
		}
		r.line("%s %s = %s;", typ, accs[i], r.constant(m.DType, ir.ReduceIdentity(m.Arg.(*ir.ReduceArg).Op, m.DType)))
	}
	axes := leader.Arg.(*ir.ReduceArg).Axes
	if p := r.k.Prefetch; p != nil && r.lang.gpu == nil && !r.epiloguePrefetched {
		// the epilogue's lines, while the reduce runs (ir.Prefetch.Epilogue)
		r.epiloguePrefetched = true
		for _, ld := range p.Epilogue {
			r.line("__builtin_prefetch(&%s[%s]);", BufName(r.k, ld.Arg.(int)), r.inline(ld.Src[0]))
		}
	}
	var skip []*ir.Expr
	if r.k.Skip != nil && r.lang.gpu == nil {
		skip = r.k.Skip.Conds[axes[0]]
	}
	if len(axes) == 1 && r.lang.gpu == nil && r.k.VecLoops.Has(axes[0]) {
		// ir.VecLoops: the compiler sums (and takes maxima) in lanes
		pragma := fmt.Sprintf("#pragma omp simd simdlen(%d)", r.k.VecLoops.Width)
		for i, m := range members {
			op := "+"
			if m.Arg.(*ir.ReduceArg).Op == ir.OpMaxReduce {
				op = "max"
			}
			pragma += fmt.Sprintf(" reduction(%s:%s)", op, accs[i])
		}
		r.line("%s", pragma)
	}
	r.tables(axes)
	for i, a := range axes {
		if i == len(axes)-1 {
			r.declareRows(a)
		}
		if r.lang.gpu == nil && r.k.ValueLoops.Has(a) { // ir.ValueLoops
			r.line("#pragma GCC unroll %d", a.Size)
		}
		r.line("for (%s %s = 0; %s < %s; %s++) {", r.idx, a.Name(), a.Name(), r.trip(a), a.Name())
		r.indent++
		// Iterations that only add zeros (ir.Skip: a padded border), as
		// soon as the loops a condition reads are open, in one test: the
		// C harness of the MNIST cnn's conv2 and conv4 input gradients
		// (one thread, CPU time) ran 0.92-0.95x and 0.82x of the unskipped
		// kernels with one test, 1.2-1.4x and 0.75-0.87x with a test per
		// condition (gcc unrolls the loop under them differently).
		var at []string
		for _, c := range skip {
			if ir.LastAxis(c, axes) == i {
				at = append(at, "("+r.expr(c)+")")
			}
		}
		if len(at) > 0 {
			r.line("if (!(%s)) continue;", strings.Join(at, " & "))
		}
	}
	for _, c := range skip {
		if r.held == nil {
			r.held = map[*ir.Expr]bool{}
		}
		r.held[c] = true
		defer delete(r.held, c)
	}
	r.panelPrefetches(axes[len(axes)-1])
	r.block(r.prog.Inner[leader])
	var mark int
	if r.vec != nil {
		mark = r.vec.scope()
	}
	for i, m := range members {
		if l, ok := r.vecLane(m); ok {
			src, acc := r.vec.src(l.run), r.vec.acc[l.run]
			if l.lane == 0 && m.Arg.(*ir.ReduceArg).Op == ir.OpMaxReduce {
				// The scalar form's (v>acc)?v:acc, lane by lane (a NaN never wins): tg_max.
				v := r.vec.fresh("vmax")
				r.line("%s %s = %s;", vtype(src), v, r.vexpr(src))
				w := src.W
				r.line("%s = tg_max(tg_i%d, tg_f%d, %s, %s);", acc, w, w, v, acc)
			} else if l.lane == 0 {
				v := r.vexpr(src)
				if idx := r.keptAt(m); idx != nil { // the lanes' indices are contiguous (Verify)
					r.prefetchNext(m)
					name := r.vec.fresh("vkeep")
					r.line("%s %s = %s;", vtype(src), name, v)
					r.line("tg_store(&%s, %s);", r.keptRef(m, idx), name)
					v = name
				}
				r.line("%s += %s;", acc, v)
			}
			continue
		}
		v := r.expr(m.Src[0])
		if idx := r.keptAt(m); idx != nil {
			name := fmt.Sprintf("alu%d", r.nalu)
			r.nalu++
			r.line("%s %s = %s;", r.typ(m.DType), name, v)
			r.line("%s = %s;", r.keptRef(m, idx), name)
			v = name
		}
		switch {
		case wrapSum(m):
			r.line("%s += (%s)%s;", accs[i], r.unsigned(m.DType), v)
		case m.Arg.(*ir.ReduceArg).Op == ir.OpSum:
			r.line("%s += %s;", accs[i], v)
		default:
			r.line("%s = ((%s>%s)?%s:%s);", accs[i], v, accs[i], v, accs[i])
		}
	}
	if r.vec != nil {
		r.vec.leave(mark)
	}
	if st := r.k.Stream; st != nil && st.Cols && st.Lag > 0 && axes[0] == st.Loop {
		r.laggedLines(axes)
	}
	for range axes {
		r.indent--
		r.line("}")
	}
	for e := range r.rows { // out of scope with the loops
		if rl, _ := r.k.RowOf(e); rl.Axis == axes[len(axes)-1] {
			delete(r.rows, e)
		}
	}
	for i, m := range members {
		r.names[m] = accs[i]
		if wrapSum(m) {
			r.names[m] = fmt.Sprintf("((%s)%s)", r.typ(m.DType), accs[i])
		}
		if l, ok := r.vecLane(m); ok {
			r.names[m] = fmt.Sprintf("%s[%d]", r.vec.acc[l.run], l.lane)
		}
	}
	r.sumGroups(leader)
}

func (r *renderer) vecLane(m *ir.Expr) (vlane, bool) {
	if r.vec == nil {
		return vlane{}, false
	}
	return r.vec.lane(m)
}

// vecStore is the run of a store written as a vector (nil: scalar).
func (r *renderer) vecStore(s *ir.Expr) []*ir.Expr {
	if r.vec == nil {
		return nil
	}
	return r.vec.storeRun(s)
}

func (r *renderer) typ(dt ir.DType) string {
	if dt == ir.Index {
		return r.idx
	}
	return r.lang.Types[dt]
}

// unsigned spells the unsigned type integer arithmetic of dt wraps in.
func (r *renderer) unsigned(dt ir.DType) string {
	if dt.Size() > 4 {
		return r.lang.Unsigned[1]
	}
	return r.lang.Unsigned[0]
}

// accumulate renders acc += v for a sum reduce m whose accumulator has
// m's type; an integer sum that may overflow adds in unsigned arithmetic,
// so it wraps instead of being undefined.
func (r *renderer) accumulate(m *ir.Expr, acc, v string) string {
	if !wrapSum(m) {
		return fmt.Sprintf("%s += %s;", acc, v)
	}
	u := r.unsigned(m.DType)
	return fmt.Sprintf("%s = (%s)((%s)%s+(%s)%s);", acc, r.typ(m.DType), u, acc, u, v)
}

// wrapSum: m is an integer sum whose count times its value's bounds can
// leave the dtype's range. (The CPU renders its accumulator unsigned: GCC
// 12 with AVX-512 miscompiled the cast-per-add form of the same sum.)
func wrapSum(m *ir.Expr) bool {
	if m.Arg.(*ir.ReduceArg).Op != ir.OpSum || !m.DType.IsInt() || m.DType == ir.Index {
		return false
	}
	n := int64(1)
	for _, a := range m.Arg.(*ir.ReduceArg).Axes {
		n *= a.Size
		if n > 1<<40 {
			return true
		}
	}
	lo, hi := m.DType.Range()
	v := m.Src[0]
	return float64(v.Min)*float64(n) < float64(lo) || float64(v.Max)*float64(n) > float64(hi)
}

func (r *renderer) constant(dt ir.DType, v float64) string {
	if !dt.IsFloat() {
		return r.intLit(tensorInt(dt, v))
	}
	switch {
	case math.IsInf(v, 1):
		return "INFINITY"
	case math.IsInf(v, -1):
		return "-INFINITY"
	case math.IsNaN(v):
		return "NAN"
	}
	if dt == ir.Float64 {
		s := strconv.FormatFloat(v, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eE") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(v, 'g', -1, 32)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return s + r.lang.FloatSfx
}

// keptAt is where a reduce member stores the value it accumulates (the
// keep plan; nil: nowhere).
func (r *renderer) keptAt(m *ir.Expr) *ir.Expr {
	if r.keep == nil {
		return nil
	}
	return r.keep.Index[m]
}

// keptRef is the element member m keeps its value in: the output at idx,
// or the scratch row at m's column (ir.Keep.Scratch).
func (r *renderer) keptRef(m, idx *ir.Expr) string {
	if r.keep.Scratch {
		return fmt.Sprintf("tg_keep[%s]", r.expr(r.keep.Col[m]))
	}
	return fmt.Sprintf("%s[%s]", BufName(r.k, r.keep.Store.Arg.(int)), r.expr(idx))
}

// prefetchNext prefetches, for the loads of a kept vector's first lane,
// the same element of the next row (ir.Keep.Next); the last row of a
// chunk prefetches its own.
func (r *renderer) prefetchNext(m *ir.Expr) {
	row := r.k.Global[0].Name()
	for _, e := range ir.KeptLoads(m) {
		if s, ok := r.keep.Next[e]; ok {
			r.line("__builtin_prefetch(&%s[%s + (%s + 1 < end ? %d : 0)]);", BufName(r.k, e.Arg.(int)), r.expr(e.Src[0]), row, s)
			if f := r.keep.Far; f > 0 { // rows further on, into L2 alone
				r.line("__builtin_prefetch(&%s[%s + (%s + %d < end ? %d : 0)], 0, 1);", BufName(r.k, e.Arg.(int)), r.expr(e.Src[0]), row, f, f*s)
			}
		}
	}
}

// keptOnly lists the nodes of k that only the keep plan's read-back value
// reads: the column loop no longer computes them.
func keptOnly(k *ir.Kernel) map[*ir.Expr]bool {
	var idx []*ir.Expr
	for _, e := range k.Keep.Index {
		idx = append(idx, e)
	}
	return ir.OnlyUnder(k, []*ir.Expr{k.Keep.Value}, idx...)
}

// prologue renders what is computed before the row loop with the
// prologue plan (ir.Prologue): the values the plan's value reads, the
// scratch row, then the rest (which may read the row: Q4_K's sums of x).
func (r *renderer) prologue() {
	need := map[*ir.Expr]bool{}
	ir.Walk([]*ir.Expr{r.pro.Value}, func(e *ir.Expr) { need[e] = true })
	var first, rest ir.Block
	for _, e := range r.prog.Hoisted[0].Nodes {
		if need[e] {
			first.Nodes = append(first.Nodes, e)
		} else {
			rest.Nodes = append(rest.Nodes, e)
		}
	}
	r.block(&first)
	p := r.pro.Axis
	r.line("float tg_pro[%d] __attribute__((aligned(64)));", p.Size)
	r.line("for (%s %s = 0; %s < %d; %s++) tg_pro[%s] = %s;", r.idx, p.Name(), p.Name(), p.Size, p.Name(), p.Name(), r.expr(r.pro.Value))
	r.block(&rest)
}

// tables writes the tables of a reduce's loops (ir.Tables): each value
// for every iteration of the loops it reads, in those loops, before the
// reduce runs them.
func (r *renderer) tables(axes []*ir.Axis) {
	if r.tabs == nil {
		return
	}
	for i, t := range r.tabs.Tabs {
		if !slices.Contains(axes, t.Reduce()) {
			continue
		}
		r.line("float tg_tab%d[%d] __attribute__((aligned(64)));", i, t.Size())
		// a vector a step of the last loop, or the last loops whole
		fill := t.Fill.W > 0 && r.vec != nil
		loops := t.Axes
		if fill {
			loops = t.Axes[:len(t.Axes)-t.FillAxes]
		}
		for j, a := range loops {
			step := "++"
			if fill && t.FillAxes == 0 && j == len(t.Axes)-1 {
				step = fmt.Sprintf(" += %d", t.Fill.W)
			}
			r.line("for (%s %s = 0; %s < %d; %s%s) {", r.idx, a.Name(), a.Name(), a.Size, a.Name(), step)
			r.indent++
		}
		r.tabling = t.Value
		if fill {
			mark := r.vec.scope()
			r.line("tg_store(&tg_tab%d[%s], %s);", i, r.expr(t.FillCol), r.vexpr(t.Fill))
			r.vec.leave(mark)
		} else {
			r.line("tg_tab%d[%s] = %s;", i, r.expr(t.Col), r.expr(t.Value))
		}
		r.tabling = nil
		for range loops {
			r.indent--
			r.line("}")
		}
	}
}

// proOnly lists the nodes of k that only the prologue plan's occurrences
// read: the rows read the scratch row instead.
func proOnly(k *ir.Kernel) map[*ir.Expr]bool {
	occ, roots := []*ir.Expr{}, []*ir.Expr{k.Pro.Value}
	for e, c := range k.Pro.Col {
		occ, roots = append(occ, e), append(roots, c)
	}
	return ir.OnlyUnder(k, occ, roots...)
}

// expr renders an expression: a name if it has one, else inline.
func (r *renderer) expr(e *ir.Expr) string {
	if n, ok := r.names[e]; ok {
		return n
	}
	if r.pro != nil {
		if c, ok := r.pro.Col[e]; ok { // computed by the prologue (ir.Prologue)
			return fmt.Sprintf("tg_pro[%s]", r.expr(c))
		}
	}
	if i, col, ok := r.tabs.Of(e); ok && e != r.tabling { // tabulated before its reduce (ir.Tables)
		return fmt.Sprintf("tg_tab%d[%s]", i, r.expr(col))
	}
	if r.vec != nil {
		if vecs, ok := r.vec.hsum[e]; ok {
			return r.hsum(vecs)
		}
	}
	if r.keep != nil && e == r.keep.Value && r.keep.Scratch { // kept in scratch by the reduce (ir.Keep)
		return fmt.Sprintf("tg_keep[%s]", r.k.Global[len(r.k.Global)-1].Name())
	}
	if r.keep != nil && e == r.keep.Value { // stored by the reduce (ir.Keep)
		st := r.keep.Store
		return fmt.Sprintf("%s[%s]", BufName(r.k, st.Arg.(int)), r.expr(st.Src[0]))
	}
	s := e.Src
	switch e.Op {
	case ir.OpConst:
		if e.DType.IsFloat() {
			return r.constant(e.DType, e.Arg.(float64))
		}
		return r.intLit(e.Arg.(int64))
	case ir.OpVar:
		return e.Arg.(*ir.Axis).Name()
	case ir.OpParam:
		return r.param(e.ParamIndex())
	case ir.OpLoad:
		if row, off, ok := r.rowOf(e); ok {
			return fmt.Sprintf("%s[%s]", row, off)
		}
		ld := fmt.Sprintf("%s[%s]", BufName(r.k, e.Arg.(int)), r.expr(s[0]))
		if g := r.lang.gpu; g != nil && g.load != nil {
			ld = g.load(e.DType, BufName(r.k, e.Arg.(int)), r.expr(s[0]))
		}
		if e.DType == ir.BFloat16 { // buffers hold the bits
			ld = r.fromBits(ir.BFloat16, ld)
		}
		if len(s) > 1 && !r.guardHeld(s[1]) {
			return fmt.Sprintf("(%s?%s:%s)", r.expr(s[1]), ld, r.constant(e.DType, 0))
		}
		return ld
	case ir.OpRand:
		return fmt.Sprintf("tg_rand(%s, %s, %s)", r.expr(s[1]), r.expr(s[2]), r.expr(s[0]))
	case ir.OpCast:
		return r.cast(e.DType, s[0].DType, r.expr(s[0]))
	case ir.OpBitcast:
		return r.bitcast(e.DType, s[0].DType, r.expr(s[0]))
	}
	// The dtype rules ahead of the op table: integer arithmetic that may
	// leave its dtype's range wraps, integer division never traps.
	switch {
	case e.MayWrap() && e.Op != ir.OpDiv:
		return r.wrapping(e)
	case (e.Op == ir.OpDiv || e.Op == ir.OpMod) && !e.DType.IsFloat():
		return r.intDivMod(e)
	case e.Op == ir.OpAdd && !e.DType.IsFloat():
		// x + y*(-c) reads better as x - y*c
		if m := s[1]; m.Op == ir.OpMul && m.Src[1].IsConst() {
			if c, _ := m.Src[1].ConstInt(); c < 0 {
				if c == -1 {
					return fmt.Sprintf("(%s-%s)", r.expr(s[0]), r.expr(m.Src[0]))
				}
				return fmt.Sprintf("(%s-(%s*%d))", r.expr(s[0]), r.expr(m.Src[0]), -c)
			}
		}
		if c, ok := s[1].ConstInt(); ok && c < 0 {
			return fmt.Sprintf("(%s-%d)", r.expr(s[0]), -c)
		}
	}
	args := make([]string, len(s))
	for i, x := range s {
		args[i] = r.expr(x)
	}
	return r.spellOp(e, args)
}

// spellOp writes an ALU op in the dialect from the op table, its operands
// already rendered.
// The operands' dtype picks the integer or float64 column where the op
// has one.
func (r *renderer) spellOp(e *ir.Expr, args []string) string {
	info := e.Op.Info()
	var t string
	switch dt := e.Src[0].DType; {
	case dt.IsInt() && info.Ints != "":
		t = info.Ints
	case dt == ir.Float64 && info.F64 != "":
		t = info.F64
	default:
		if t = r.lang.spell(info); t == "" {
			t = info.C
		}
	}
	if t == "" {
		panic(fmt.Sprintf("render: no rendering for %s", e.Op))
	}
	if e.Op == ir.OpShr && plainShift(e) {
		return "(" + args[0] + ">>" + args[1] + ")"
	}
	fn := ""
	if info.Helper != "" {
		dt := e.Src[0].DType
		fn = "tg_" + strings.ToLower(info.Name) + "_" + dt.String()
		u := r.lang.Unsigned[0]
		if dt.Size() > 4 {
			u = r.lang.Unsigned[1]
		}
		typ := r.typ(dt)
		body := expand(info.Helper, nil, map[byte]string{'T': typ, 'U': u, 'W': strconv.Itoa(dt.Bits())})
		r.need(fn, fmt.Sprintf("%s %s %s(%s a, %s b) { return %s; }", r.lang.FnQual, typ, fn, typ, typ, body))
	}
	return expand(t, args, map[byte]string{'F': fn})
}

// plainShift says whether a right shift needs none of its helper's
// cases: a value that is never negative shifted by a count in [0, bits),
// for which every dialect's >> is defined and the same (a quantized
// block's byte shifted to its scale's nibble). The helper's branches kept
// gcc from vectorizing the loops that fill a Q2_K row's table of scales.
func plainShift(e *ir.Expr) bool {
	x, n := e.Src[0], e.Src[1]
	return x.Min >= 0 && n.Min >= 0 && n.Max < int64(x.DType.Bits())
}

// infixChars end the infix operators of the op table's templates.
const infixChars = "+-*/%<=&|^"

// expand fills in a template of the op table: $0 $1 $2 are args, $X the
// variable X.
func expand(t string, args []string, vars map[byte]string) string {
	var sb strings.Builder
	for i := 0; i < len(t); i++ {
		c := t[i]
		if c != '$' || i+1 == len(t) {
			sb.WriteByte(c)
			continue
		}
		i++
		switch n := t[i]; {
		case n >= '0' && n <= '9' && int(n-'0') < len(args):
			a := args[n-'0']
			// A negative operand after an infix operator keeps its own
			// parentheses: x - -0.5f would read as a decrement (x--0.5f).
			if strings.HasPrefix(a, "-") && i >= 2 && strings.IndexByte(infixChars, t[i-2]) >= 0 {
				a = "(" + a + ")"
			}
			sb.WriteString(a)
		default:
			v, ok := vars[n]
			if !ok {
				panic(fmt.Sprintf("render: template %q uses $%c", t, n))
			}
			sb.WriteString(v)
		}
	}
	return sb.String()
}

// wrapping renders an integer op whose value may leave its dtype's range
// (ir.Expr.MayWrap): the op table's spelling over the operands converted
// to unsigned, where overflow wraps, narrowed back to the dtype.
func (r *renderer) wrapping(e *ir.Expr) string {
	u := r.unsigned(e.DType)
	args := make([]string, len(e.Src))
	for i, x := range e.Src {
		args[i] = "(" + u + ")" + r.expr(x)
	}
	return fmt.Sprintf("((%s)%s)", r.typ(e.DType), r.spellOp(e, args))
}

// intDivMod renders an integer division or remainder without a trap (C
// traps, or is undefined, on x/0 and on MIN/-1): x/0 and x%0 are 0, MIN/-1
// wraps to MIN and MIN%-1 is 0 (docs/language.md). Guards are written only
// where the operands' bounds allow the case.
func (r *renderer) intDivMod(e *ir.Expr) string {
	dt, s := e.DType, e.Src
	a, b := r.expr(s[0]), r.expr(s[1])
	res := r.spellOp(e, []string{a, b})
	lo, _ := dt.Range()
	zero := s[1].Min <= 0 && s[1].Max >= 0
	minusOne := lo < 0 && s[0].Min == lo && s[1].Min <= -1 && s[1].Max >= -1
	if minusOne {
		switch {
		case dt.Size() < 4: // computed in int: -MIN fits, narrowing wraps it
			if e.Op == ir.OpDiv {
				res = fmt.Sprintf("((%s)%s)", r.typ(dt), res)
			}
		case e.Op == ir.OpDiv:
			res = fmt.Sprintf("((%s==-1)?((%s)(-(%s)%s)):%s)", b, r.typ(dt), r.unsigned(dt), a, res)
		default:
			res = fmt.Sprintf("((%s==-1)?0:%s)", b, res)
		}
	}
	if zero {
		res = fmt.Sprintf("((%s==0)?0:%s)", b, res)
	}
	return res
}

// cast renders a conversion. Float to integer truncates and saturates,
// NaN giving 0 (a helper function: a C cast of an out-of-range float is
// undefined); float16 is rounded explicitly where the dialect keeps it in
// float registers.
func (r *renderer) cast(to, from ir.DType, x string) string {
	if from == ir.Float64 && (to == ir.Float16 || to == ir.BFloat16) {
		x = "((float)" + x + ")" // rounded through float32, as on every device
	}
	if g := r.lang.gpu; g != nil && g.cast != nil {
		if c := g.cast(to, from, x); c != "" {
			return c
		}
	}
	switch {
	case to == ir.Float16 && r.lang.HalfRound != "":
		r.need("tg_round_half", r.lang.HalfRound)
		return fmt.Sprintf("tg_round_half(%s)", x)
	case to == ir.BFloat16:
		r.needBFloat16()
		return fmt.Sprintf("tg_round_bf16(%s)", x)
	case from.IsFloat() && to.IsInt():
		return r.satCast(to, from, x)
	}
	return fmt.Sprintf("((%s)%s)", r.typ(to), x)
}

// satCast is a float-to-integer conversion through a helper function
// tg_sat_DTYPE: NaN gives 0, values beyond the range its end.
func (r *renderer) satCast(to, from ir.DType, x string) string {
	lo, hi := to.Range()
	flo, fhi := to.ValueRange()
	if to == ir.Uint64 {
		lo, hi = 0, -1 // 2^64-1 as a bit pattern
	}
	name := "tg_sat_" + to.String()
	if to == ir.Index {
		lo, hi, name = math.MinInt32, math.MaxInt32, "tg_sat_index32"
		if r.wide {
			lo, hi, name = math.MinInt64, math.MaxInt64, "tg_sat_index64"
		}
		flo, fhi = float64(lo), float64(hi)
	}
	if from != ir.Float64 { // half registers (OpenCL, Metal) convert through float
		from, x = ir.Float32, "((float)"+x+")"
	} else {
		name = strings.Replace(name, "tg_sat_", "tg_satd_", 1)
	}
	ft, sfx := r.typ(from), r.lang.FloatSfx
	if from == ir.Float64 {
		sfx = ""
	}
	// both limits are powers of two (or 0), exact in any float type
	loF := strconv.FormatFloat(flo, 'f', 1, 64) + sfx
	hiF := strconv.FormatFloat(fhi+1, 'f', 1, 64) + sfx
	t := r.typ(to)
	def := fmt.Sprintf("%s %s %s(%s x) { return x != x ? 0 : x <= %s ? %s : x >= %s ? (%s)%s : (%s)x; }",
		r.lang.FnQual, t, name, ft, loF, r.intLit(lo), hiF, t, r.intLit(hi), t)
	r.need(name, def)
	return fmt.Sprintf("%s(%s)", name, x)
}

// intLit spells an integer constant valid in every C dialect.
func (r *renderer) intLit(v int64) string {
	switch {
	case v == math.MinInt64:
		return "(-" + strconv.FormatInt(math.MaxInt64, 10) + r.lang.LongSfx + "-1)"
	case v == math.MinInt32:
		return "(-2147483647-1)"
	case v > math.MaxInt32 || v < math.MinInt32:
		return strconv.FormatInt(v, 10) + r.lang.LongSfx
	}
	return strconv.FormatInt(v, 10)
}

// callHelpers records the definitions of the helper functions a rendered
// expression calls (patterns of Lang.Bits name them).
func (r *renderer) callHelpers(s string) string {
	for _, name := range sortedHelperNames(r.lang.Helpers) {
		if strings.Contains(s, name+"(") {
			r.need(name, r.lang.Helpers[name])
		}
	}
	return s
}

func sortedHelperNames(m map[string]string) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// toBits renders a float register value of dtype dt as its storage bits,
// an unsigned integer of dt's size; fromBits the reverse.
func (r *renderer) toBits(dt ir.DType, x string) string {
	if dt == ir.BFloat16 {
		r.needBFloat16()
		return fmt.Sprintf("tg_f32_to_bf16(%s)", x)
	}
	return r.callHelpers(fmt.Sprintf(r.lang.Bits[dt][0], x))
}

func (r *renderer) fromBits(dt ir.DType, u string) string {
	if dt == ir.BFloat16 {
		r.needBFloat16()
		return fmt.Sprintf("tg_bf16_to_f32(%s)", u)
	}
	return r.callHelpers(fmt.Sprintf(r.lang.Bits[dt][1], u))
}

// needBFloat16 defines the bfloat16 conversions from the dialect's float32
// bit casts: widening is a shift, narrowing rounds to nearest even (a NaN
// stays a NaN, quieted), without a branch so that loops vectorize.
func (r *renderer) needBFloat16() {
	q, u32, u16 := r.lang.FnQual, r.lang.Unsigned[0], r.typ(ir.Uint16)
	as := r.callHelpers(fmt.Sprintf(r.lang.Bits[ir.Float32][1], "(("+u32+")h) << 16"))
	bits := r.callHelpers(fmt.Sprintf(r.lang.Bits[ir.Float32][0], "f"))
	r.need("tg_bf16_to_f32", fmt.Sprintf("%s float tg_bf16_to_f32(%s h) { return %s; }", q, u16, as))
	r.need("tg_f32_to_bf16", fmt.Sprintf("%s %s tg_f32_to_bf16(float f) {\n  %s u = %s;\n  %s r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;\n  return (%s)(f != f ? ((u >> 16) | 0x40u) : r);\n}", q, u16, u32, bits, u32, u16))
	r.need("tg_round_bf16", fmt.Sprintf("%s float tg_round_bf16(float f) { return tg_bf16_to_f32(tg_f32_to_bf16(f)); }", q))
}

// bitcast renders x (of dtype from) read as dtype to, of the same size.
// Integers of one size convert as two's complement; a float goes through
// its storage bits.
func (r *renderer) bitcast(to, from ir.DType, x string) string {
	if from.IsFloat() {
		x = r.toBits(from, x)
	}
	if to.IsFloat() {
		u := r.typ(ir.Uint16)
		switch to.Size() {
		case 4:
			u = r.lang.Unsigned[0]
		case 8:
			u = r.lang.Unsigned[1]
		}
		return r.fromBits(to, fmt.Sprintf("((%s)%s)", u, x))
	}
	return fmt.Sprintf("((%s)%s)", r.typ(to), x)
}

// tensorInt is an integer constant of dt given as a float64 (a reduce's
// identity): its two's complement value.
func tensorInt(dt ir.DType, v float64) int64 {
	if v >= 1<<63 {
		return int64(uint64(v))
	}
	return int64(v)
}

// storeExpr renders the value a store writes: bfloat16 as its bits (a
// cast to bfloat16 from float32 rounds right there).
func (r *renderer) storeExpr(s *ir.Expr) string {
	v := s.Src[1]
	if s.DType != ir.BFloat16 {
		return r.expr(v)
	}
	if _, named := r.names[v]; !named && v.Op == ir.OpCast && v.Src[0].DType == ir.Float32 {
		return r.toBits(ir.BFloat16, r.expr(v.Src[0]))
	}
	return r.toBits(ir.BFloat16, r.expr(v))
}

// guardHeld says whether every conjunct of a load's guard is a condition
// the open loops have already tested.
func (r *renderer) guardHeld(g *ir.Expr) bool {
	if g.Op == ir.OpAnd && g.DType == ir.Bool {
		return r.guardHeld(g.Src[0]) && r.guardHeld(g.Src[1])
	}
	return r.held[g]
}

// declareRows declares, before the innermost loop a of a reduce group, the
// row pointers of the loads the row_guards pass planned along it (ir.Rows):
// the buffer at the load's row where its guard holds, the kernel's row of
// zeros where not. The guard and the row are written out in full (the
// names of their parts may be declared inside the loop).
func (r *renderer) declareRows(a *ir.Axis) {
	if r.k.Rows == nil || r.lang.gpu != nil {
		return
	}
	for _, rl := range r.k.Rows.Loads {
		if rl.Axis != a {
			continue
		}
		if r.rows == nil {
			r.rows = map[*ir.Expr]string{}
		}
		name := fmt.Sprintf("row%d", r.nrow)
		r.nrow++
		ld := rl.Load
		r.line("const float *%s = (%s) ? &%s[%s] : tg_zeros;", name, r.inline(ld.Src[1]), BufName(r.k, ld.Arg.(int)), r.inline(rl.Base))
		r.rows[ld] = name
	}
}

// rowOf is a planned load's row pointer and offset, while its loop is open.
func (r *renderer) rowOf(e *ir.Expr) (row, off string, ok bool) {
	row, ok = r.rows[e]
	if !ok {
		return "", "", false
	}
	rl, _ := r.k.RowOf(e)
	return row, r.inline(rl.Off), true
}

// inline renders index arithmetic in full, without the names of its parts.
func (r *renderer) inline(e *ir.Expr) string {
	names := r.names
	r.names = map[*ir.Expr]string{}
	defer func() { r.names = names }()
	return r.expr(e)
}

// proCol is e's column in the prologue's scratch row, if e is an
// occurrence of its value (ir.Prologue).
func (r *renderer) proCol(e *ir.Expr) (*ir.Expr, bool) {
	if r.pro == nil {
		return nil, false
	}
	c, ok := r.pro.Col[e]
	return c, ok
}
