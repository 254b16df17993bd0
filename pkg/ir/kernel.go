package ir

import (
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// BufParam is one buffer argument of a kernel.
type BufParam struct {
	DType  DType
	Size   int64 // elements
	Output bool
}

// Kernel is one unit of device work: nested loops over Global axes (the
// outermost split across cores or mapped to the grid) around a DAG of
// scalar expressions ending in Stores. Reduce loops belong to the OpReduce
// expressions that own them.
type Kernel struct {
	Name      string
	Bufs      []BufParam // outputs first, then inputs, in argument order
	Global    []*Axis
	Stores    []*Expr
	NumParams int // runtime integer parameters (vars), e.g. RNG counters
	B         *Builder
	Opts      []Opt // the optimization decisions applied (for DEBUG and plans)
	// InPlace: the output is written over an input's memory (an assign
	// into its destination), so no element may be stored twice (PADTO).
	InPlace bool
	// How the renderer is to write the kernel, decided by passes (see
	// gpu.go, simd.go); the scalar expressions stay its meaning.
	Group int64 // grid devices: lanes of a work-group sharing each top-level reduce (GROUP)
	SIMD  *SIMD // C: runs of lanes written as vectors (the simd pass)
	Vec4  *Vec4 // grid devices: 4-wide vector loads and stores (the vec4 pass)
	Keep  *Keep // C: a reduce's values stored for the column loop to read back (the keep pass)
	Skip  *Skip // C: iterations of a SUM group that only add zeros (the skip_zeros pass)
	// Stream: C, SIMD store runs written around the caches (stream_stores)
	Stream *Stream
	// Rows: C, guarded loads read through a row pointer chosen before the
	// innermost loop (row_guards)
	Rows *Rows
	// Prefetch: C, streamed loads prefetched one iteration of a global
	// loop ahead (the prefetch pass)
	Prefetch *Prefetch
	// Pro: C, a vector computed once per launch piece into a scratch row
	// that the rows read (the prologue pass)
	Pro *Prologue
	// VecLoops: C, loops of symbolic length the C compiler vectorizes
	// (the vec_loops pass)
	VecLoops *VecLoops
	// Tabs: C, block values of a reduce computed for the whole row into
	// tables before its loops (the tables pass)
	Tabs *Tables
	// ValueLoops: C, a quantized row's short loops the C compiler unrolls
	// whole (the value_loops pass)
	ValueLoops *ValueLoops
}

// Kind is "E" for elementwise kernels and "r" for kernels with a reduce.
func (k *Kernel) Kind() string {
	kind := "E"
	Walk(k.Stores, func(e *Expr) {
		if e.Op == OpReduce {
			kind = "r"
		}
	})
	return kind
}

// BaseName is tinygrad-style: kind, global sizes, then reduce sizes.
func (k *Kernel) BaseName() string {
	parts := []string{k.Kind()}
	for _, a := range k.Global {
		if a.Size > 1 { // the placeholder loop of a scalar result
			parts = append(parts, fmt.Sprint(a.Size))
		}
	}
	for _, a := range k.ReduceAxes() {
		parts = append(parts, fmt.Sprint(a.Size))
	}
	return strings.Join(parts, "_")
}

// ReduceAxes lists the reduce loops of all reduces, in first-use order.
func (k *Kernel) ReduceAxes() []*Axis {
	var axes []*Axis
	Walk(k.Stores, func(e *Expr) {
		if e.Op == OpReduce {
			axes = append(axes, e.Arg.(*ReduceArg).Axes...)
		}
	})
	return axes
}

// HasSym reports whether a loop of the kernel has a symbolic trip count.
func (k *Kernel) HasSym() bool {
	for _, a := range k.Global {
		if a.Sym != nil {
			return true
		}
	}
	for _, a := range k.ReduceAxes() {
		if a.Sym != nil {
			return true
		}
	}
	return false
}

// GlobalSize is the number of iterations of the global loops.
func (k *Kernel) GlobalSize() int64 {
	n := int64(1)
	for _, a := range k.Global {
		n = satMul(n, a.Size)
	}
	return n
}

// Cost estimates the float operations and the bytes of buffer traffic of
// one launch, for DEBUG's GFLOP/s and GB/s columns. An expression counts
// once per iteration of the loops it sits in: the global loops (outer to
// inner) and the loops of the reduces it is part of, down to the
// innermost loop whose variable it reads, as the rendered C computes it
// (gcc moves what a loop does not change out of it). So a softmax row's
// max and sum count once per row, not once per element of the row (4096
// times its work at 4096 columns).
func (k *Kernel) Cost() (flops, bytes int64) {
	count := map[*Expr]int64{} // evaluations of e in one launch (and visited)
	roots := k.Stores
	if k.Pro != nil {
		roots = append(slices.Clip(roots), k.Pro.Value)
	}
	fv := freeVars(roots)
	var rec func(e *Expr, loops []*Axis)
	rec = func(e *Expr, loops []*Axis) {
		if _, seen := count[e]; seen {
			return
		}
		if k.Pro != nil && k.Pro.Col[e] != nil {
			count[e] = 0 // read from the prologue's scratch row (below)
			return
		}
		in := 0 // e sits in loops[:in]
		for i, a := range loops {
			if slices.Contains(fv[e], a) {
				in = i + 1
			}
		}
		at := loops[:in:in]
		if e.Op == OpReduce {
			// a reduce accumulates once per iteration of its loops (a
			// multiply-add is two flops, as a peak's FMA counts them)
			at = append(at, e.Arg.(*ReduceArg).Axes...)
		}
		n := int64(1)
		for _, a := range at {
			n = satMul(n, a.Size)
		}
		count[e] = n
		for _, s := range e.Src {
			rec(s, at)
		}
	}
	for _, s := range k.Stores {
		rec(s, k.Global)
	}
	if k.Pro != nil {
		// the prologue computes its value once per element of its row,
		// from values computed before the row loop
		rec(k.Pro.Value, []*Axis{k.Pro.Axis})
	}
	for e, n := range count {
		if e.Op.IsALU() && e.Op != OpCast && e.DType.IsFloat() || e.Op == OpReduce || (e.Op.IsALU() && len(e.Src) > 0 && e.Src[0].DType.IsFloat() && e.Op.IsCompare()) {
			flops = satAdd(flops, n)
		}
	}
	for _, b := range k.Bufs {
		bytes += b.Size * int64(b.DType.Size())
	}
	return flops, bytes
}

// Dump prints the kernel IR: axes, then one line per expression in
// topological order.
func (k *Kernel) Dump() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "kernel %s\n", k.Name)
	for i, b := range k.Bufs {
		role := "in"
		if b.Output {
			role = "out"
		}
		fmt.Fprintf(&sb, "  buf%d %s %s[%d]\n", i, role, b.DType, b.Size)
	}
	if k.InPlace {
		sb.WriteString("  in place\n")
	}
	for _, a := range k.Global {
		fmt.Fprintf(&sb, "  loop %s < %s\n", a.Name(), a.Bound())
	}
	names := map[*Expr]string{}
	Walk(k.Stores, func(e *Expr) {
		name := fmt.Sprintf("%%%d", len(names))
		names[e] = name
		var args []string
		for _, s := range e.Src {
			args = append(args, names[s])
		}
		arg := ""
		switch a := e.Arg.(type) {
		case *Axis:
			arg = a.Name()
		case *ReduceArg:
			var ax []string
			for _, x := range a.Axes {
				ax = append(ax, fmt.Sprintf("%s<%s", x.Name(), x.Bound()))
			}
			arg = a.Op.String() + " over " + strings.Join(ax, ",")
		case ParamArg:
			arg = fmt.Sprintf("vars[%d]", a.Index)
			if a.Name != "" {
				arg += " " + a.Name
			}
		case int:
			arg = fmt.Sprintf("buf%d", a)
		case nil:
		default:
			arg = fmt.Sprint(a)
		}
		bnd := ""
		if !e.DType.IsFloat() && e.Op != OpStore {
			bnd = fmt.Sprintf("  [%d..%d]", e.Min, e.Max)
		}
		fmt.Fprintf(&sb, "  %-5s = %-10s %-7s %s %s%s\n", name, e.Op, e.DType, strings.Join(args, " "), arg, bnd)
	})
	lanes := func(es ...*Expr) string {
		s := make([]string, len(es))
		for i, e := range es {
			s[i] = names[e]
		}
		return strings.Join(s, " ")
	}
	if k.Group > 0 {
		fmt.Fprintf(&sb, "  group %d lanes\n", k.Group)
	}
	if k.SIMD != nil {
		for _, r := range k.SIMD.Accs {
			fmt.Fprintf(&sb, "  simd acc   x%-2d %s\n", len(r), lanes(r...))
		}
		for _, r := range k.SIMD.Stores {
			fmt.Fprintf(&sb, "  simd store x%-2d %s\n", len(r), lanes(r...))
		}
		for _, h := range k.SIMD.HSums {
			var ls []*Expr
			for _, t := range h.Vecs {
				ls = append(ls, t.L[:t.W]...)
			}
			fmt.Fprintf(&sb, "  simd hsum  %dx%-2d %s = %s\n", len(h.Vecs), h.Vecs[0].W, names[h.Root], lanes(ls...))
		}
	}
	if k.Keep != nil {
		sb.WriteString(k.Keep.dump(names))
	}
	if k.Pro != nil {
		sb.WriteString(k.Pro.dump(names))
	}
	if k.Tabs != nil {
		sb.WriteString(k.Tabs.dump(names))
	}
	if k.Skip != nil {
		for _, a := range k.Skip.axes() {
			fmt.Fprintf(&sb, "  skip %s unless %s\n", a.Name(), lanes(k.Skip.Conds[a]...))
		}
	}
	if k.Rows != nil {
		for _, rl := range k.Rows.Loads {
			fmt.Fprintf(&sb, "  row %s: %s = (%s) ? buf%d[%s] : zeros, then [%s]\n", rl.Axis.Name(), names[rl.Load], names[rl.Load.Src[1]], rl.Load.Arg, rl.Base, rl.Off)
		}
	}
	if k.Prefetch != nil {
		sb.WriteString(k.Prefetch.dump(names))
	}
	if k.VecLoops != nil {
		for _, a := range k.VecLoops.Axes {
			fmt.Fprintf(&sb, "  vec loop   %s in %d lanes (omp simd)\n", a.Name(), k.VecLoops.Width)
		}
	}
	if k.ValueLoops != nil {
		for _, a := range k.ValueLoops.Axes {
			fmt.Fprintf(&sb, "  unrolled   %s whole (gcc: a shift by its variable)\n", a.Name())
		}
	}
	if k.Stream != nil {
		for _, r := range k.Stream.Runs {
			fmt.Fprintf(&sb, "  stream     %s\n", lanes(k.SIMD.Stores[r]...))
		}
		if k.Stream.Cols {
			fmt.Fprintf(&sb, "  stream     %s in lines of the column loop\n", names[k.ColumnStore()])
			if k.Stream.Lag > 0 {
				fmt.Fprintf(&sb, "  lag        the column loop in the next row's loop over %s, %d lines an iteration\n", k.Stream.Loop.Name(), k.Stream.Lag)
			}
		}
	}
	if k.Vec4 != nil {
		for _, g := range k.Vec4.Loads {
			fmt.Fprintf(&sb, "  vec4 load  %s\n", lanes(g[:]...))
		}
		for _, g := range k.Vec4.Stores {
			fmt.Fprintf(&sb, "  vec4 store %s\n", lanes(g[:]...))
		}
	}
	return sb.String()
}

// Verify checks the kernel IR invariants; passes must preserve them.
func (k *Kernel) Verify() error {
	if err := k.verifyExprs(); err != nil {
		return err
	}
	return k.verifyPlans(nil)
}

// verifyExprs checks the expressions: loops, buffers, indices, dtypes, and
// where hoisted reduces are evaluated.
func (k *Kernel) verifyExprs() error {
	bound := map[*Axis]bool{}
	for _, a := range k.Global {
		if a.Size <= 0 {
			return fmt.Errorf("%s: global axis %s has size %d", k.Name, a.Name(), a.Size)
		}
		if a.Sym != nil && (a.Sym.Param < 0 || a.Sym.Param >= k.NumParams) {
			return fmt.Errorf("%s: axis %s is bounded by vars[%d], the kernel has %d", k.Name, a.Name(), a.Sym.Param, k.NumParams)
		}
		bound[a] = true
	}
	var err error
	var check func(e *Expr, scope map[*Axis]bool)
	seen := map[*Expr]bool{}
	groupAxes := map[*Axis][]*Axis{}
	check = func(e *Expr, scope map[*Axis]bool) {
		if err != nil || seen[e] {
			return
		}
		switch e.Op {
		case OpVar:
			if !scope[e.Arg.(*Axis)] {
				err = fmt.Errorf("%s: %s used outside its loop", k.Name, e.Arg.(*Axis).Name())
			}
		case OpLoad, OpStore:
			if i := e.Arg.(int); i < 0 || i >= len(k.Bufs) {
				err = fmt.Errorf("%s: buffer %d out of range", k.Name, i)
			} else if e.Op == OpStore && !k.Bufs[i].Output {
				err = fmt.Errorf("%s: store to input buffer %d", k.Name, i)
			} else if e.Src[0].DType.IsFloat() {
				err = fmt.Errorf("%s: float index", k.Name)
			} else {
				err = k.checkIndex(e)
			}
		case OpParam:
			if i := e.ParamIndex(); i < 0 || i >= k.NumParams {
				err = fmt.Errorf("%s: vars[%d] out of range (the kernel has %d)", k.Name, i, k.NumParams)
			}
		case OpWhere:
			if e.Src[0].DType != Bool {
				err = fmt.Errorf("%s: WHERE condition is %s", k.Name, e.Src[0].DType)
			}
		case OpReduce:
			// Linearize renders the reduces of a first axis as one group,
			// one loop nest: the members must loop over the same axes.
			axes := e.Arg.(*ReduceArg).Axes
			if len(axes) == 0 {
				err = fmt.Errorf("%s: a reduce over no axes", k.Name)
				return
			}
			if other, ok := groupAxes[axes[0]]; !ok {
				groupAxes[axes[0]] = axes
			} else if !slices.Equal(other, axes) {
				err = fmt.Errorf("%s: reduces over %s and %s share their first loop", k.Name, axisNames(other), axisNames(axes))
			}
			inner := map[*Axis]bool{}
			for a := range scope {
				inner[a] = true
			}
			for _, a := range axes {
				inner[a] = true
				if a.Sym != nil && (a.Sym.Param < 0 || a.Sym.Param >= k.NumParams) {
					err = fmt.Errorf("%s: axis %s is bounded by vars[%d], the kernel has %d", k.Name, a.Name(), a.Sym.Param, k.NumParams)
				}
			}
			scope = inner
		default:
			if e.Op.IsBinary() && !e.Op.IsCompare() && e.Src[0].DType != e.Src[1].DType {
				err = fmt.Errorf("%s: %s mixes %s and %s", k.Name, e.Op, e.Src[0].DType, e.Src[1].DType)
			} else if e.Op.IsALU() {
				// The op table's dtype rule (ADD, SUB, MUL and NEG take no
				// bool: the tensor layer writes OR, AND and NOT).
				for _, s := range e.Src {
					if info := e.Op.Info(); !info.Types.Has(s.DType) && err == nil {
						err = fmt.Errorf("%s: %s on %s (it takes %s operands)", k.Name, e.Op, s.DType, info.Types)
					}
				}
			}
		}
		if e.DType == Index && e.Op != OpParam && (e.Min <= -satLimit || e.Max >= satLimit) {
			err = fmt.Errorf("%s: index arithmetic may overflow int64 (%s)", k.Name, e)
		}
		if e.Op != OpReduce {
			seen[e] = true // reduce bodies are checked with their own scope each time
		}
		for _, s := range e.Src {
			check(s, scope)
		}
	}
	for _, s := range k.Stores {
		check(s, bound)
	}
	if err == nil && mayHoist(k) {
		// Where the renderers evaluate it: reduces hoisted out of inner
		// global loops read only the loops around them.
		err = Linearize(k).checkHoisted(k)
	}
	return err
}

// verifyPlans checks the renderers' plans (SIMD, Vec4, Keep, Skip, Group)
// against the expressions. prev, if not nil, is a kernel with the same
// expressions whose plans were verified: its prologue, if k has the very
// same, is not proved again (its proof reads the expressions and itself
// alone, and linearizes the kernel: most of a decode step's compile).
func (k *Kernel) verifyPlans(prev *Kernel) error {
	if k.SIMD == nil && k.Vec4 == nil && k.Keep == nil && k.Skip == nil && k.Stream == nil && k.Rows == nil && k.Prefetch == nil && k.Pro == nil && k.VecLoops == nil && k.Tabs == nil && k.ValueLoops == nil && k.Group == 0 {
		return nil
	}
	if k.Group > 0 && (k.Group&(k.Group-1) != 0 || !hasReduce(k)) {
		return fmt.Errorf("%s: group of %d lanes", k.Name, k.Group)
	}
	in := map[*Expr]bool{}
	Walk(k.Stores, func(e *Expr) { in[e] = true })
	if k.SIMD != nil {
		if err := k.SIMD.verify(k, in); err != nil {
			return fmt.Errorf("%s: %w", k.Name, err)
		}
	}
	if k.Vec4 != nil {
		if err := k.Vec4.verify(k, in); err != nil {
			return fmt.Errorf("%s: %w", k.Name, err)
		}
	}
	if k.Keep != nil {
		if err := k.Keep.verify(k, in); err != nil {
			return fmt.Errorf("%s: %w", k.Name, err)
		}
	}
	if k.Pro != nil && (prev == nil || prev.Pro != k.Pro) {
		if err := k.Pro.verify(k, in); err != nil {
			return fmt.Errorf("%s: %w", k.Name, err)
		}
	}
	if k.Skip != nil {
		if err := k.Skip.verify(k, in); err != nil {
			return fmt.Errorf("%s: %w", k.Name, err)
		}
	}
	if k.Stream != nil {
		if err := k.Stream.verify(k); err != nil {
			return fmt.Errorf("%s: %w", k.Name, err)
		}
	}
	if k.Rows != nil {
		if err := k.Rows.verify(k, in); err != nil {
			return fmt.Errorf("%s: %w", k.Name, err)
		}
	}
	if k.Prefetch != nil {
		if err := k.Prefetch.verify(k, in); err != nil {
			return fmt.Errorf("%s: %w", k.Name, err)
		}
	}
	if k.Tabs != nil {
		if err := k.Tabs.verify(k, in); err != nil {
			return fmt.Errorf("%s: %w", k.Name, err)
		}
	}
	if k.VecLoops != nil && (prev == nil || prev.VecLoops != k.VecLoops) {
		if err := k.VecLoops.verify(k); err != nil {
			return fmt.Errorf("%s: %w", k.Name, err)
		}
	}
	if k.ValueLoops != nil {
		if err := k.ValueLoops.verify(k); err != nil {
			return fmt.Errorf("%s: %w", k.Name, err)
		}
	}
	return nil
}

// checkIndex proves that a load or store stays inside its buffer: the
// index's bounds, for a guarded load its bounds where the guard holds
// (the load reads nothing elsewhere), lie in [0, size).
func (k *Kernel) checkIndex(e *Expr) error {
	idx := e.Src[0]
	lo, hi := idx.Min, idx.Max
	if lo <= -satLimit || hi >= satLimit { // saturated bounds prove nothing
		return fmt.Errorf("%s: index arithmetic may overflow int64 (%s)", k.Name, idx)
	}
	i := e.Arg.(int)
	n := k.Bufs[i].Size
	if e.Op == OpLoad && len(e.Src) > 1 {
		var never bool
		if lo, hi, never = NewBuilder().boundsGiven(idx, e.Src[1], false); never {
			return nil
		}
		if lo < 0 || hi >= n { // the guard may bound the index's digits
			dlo, dhi, dnever := NewBuilder().boundsGiven(idx, e.Src[1], true)
			if dnever {
				return nil
			}
			lo, hi = max(lo, dlo), min(hi, dhi)
		}
	}
	if lo < 0 || hi >= n { // a small loop space: at every point
		var valid *Expr
		if e.Op == OpLoad && len(e.Src) > 1 {
			valid = e.Src[1]
		}
		if elo, ehi, never, ok := enumerateBounds(idx, valid); ok {
			if never {
				return nil
			}
			lo, hi = elo, ehi
		}
	}
	if lo < 0 || hi >= n {
		what := "load from"
		if e.Op == OpStore {
			what = "store to"
		}
		at := idx.String()
		if len(e.Src) > 1 {
			at += " where " + e.Src[1].String()
		}
		if len(at) > 300 {
			at = at[:300] + "..."
		}
		return fmt.Errorf("%s: %s buf%d at index [%d..%d] outside its %d elements: %s", k.Name, what, i, lo, hi, n, at)
	}
	return nil
}

// WideIndex says whether the kernel's index arithmetic needs 64 bits: some
// index expression (an offset, a product of strides) can leave the int32
// range, or a loop counter must reach 2^31 to end its loop (a GPU's
// flattened reduce loops count to their product). Renderers write Index as
// a 32-bit int otherwise.
func (k *Kernel) WideIndex() bool {
	wide := false
	for _, a := range k.Global {
		wide = wide || a.Size > math.MaxInt32
	}
	Walk(k.Stores, func(e *Expr) {
		if e.DType == Index && e.Op != OpParam && (e.Min < math.MinInt32 || e.Max > math.MaxInt32) {
			wide = true
		}
		if e.Op == OpReduce {
			n := int64(1)
			for _, a := range e.Arg.(*ReduceArg).Axes {
				n = satMul(n, a.Size)
			}
			wide = wide || n > math.MaxInt32
		}
	})
	return wide
}

// Pass is one kernel-to-kernel transformation of the pass table. When is
// nil for passes every target runs.
type Pass struct {
	Name string
	Run  func(*Kernel, Target) (*Kernel, error)
	When func(Target) bool
}

// Target says which optional passes suit the device a kernel is for.
type Target struct {
	Upcast bool // register blocking with scalar lanes (C compilers vectorize them)
	// VecWidth is the float32 lanes of the device's vector registers (8:
	// AVX2, 16: AVX-512; 0 means DefaultVecWidth). The heuristic sizes its
	// register blocks in vectors of this width, and the simd pass makes
	// vectors of it.
	VecWidth int
	// VecRegs is the number of vector registers (0: 16, as AVX2 has; 32
	// with AVX-512, at any vector width). It sets the accumulator budget
	// of a register block (Accs).
	VecRegs int
	// FMAWidth is the float32 lanes of the widest vector FMA the cores
	// run at full rate (0: unknown). Where it reaches VecWidth (Zen 5 and
	// AVX-512 Xeons: two 512-bit FMA units, 16), an FMA on a narrower
	// vector leaves lanes of its unit idle, so the heuristic blocks a
	// contiguous output axis into as many full vectors as it can (see
	// fullVectors); where it is half of it (Zen 4, whose 512-bit FMAs are
	// two 256-bit halves: 8) narrower vectors cost nothing.
	FMAWidth int
	// L1 and L2 are the data cache sizes of one core in bytes (0:
	// unknown, no cache blocking): the heuristic blocks long reduces to
	// keep a register block's slice of an operand in L1 (KBLOCK).
	L1, L2 int64
	// FarPrefetch is how far ahead, in bytes, a row kernel's rows are
	// also prefetched into L2 alone (Keep.Far; 0: not). Set where the
	// host's software prefetch to L2 fills L2 without L1 (Intel's
	// prefetcht2), so that it adds reads in flight beside the next row's
	// prefetch into L1.
	FarPrefetch int64
	// L3 is the last cache that keeps a kernel's output for the next
	// kernel, in bytes (0: unknown; the CPU backend's HostCPU.OutputCache:
	// the L3, or the L2s where the L3 reads back at memory's speed), and
	// what the heuristic compares a buffer with to tell "in cache" from
	// "in memory"; BufAlign the
	// alignment in bytes the device gives every buffer's base (0:
	// unknown): stream_stores writes outputs of at least L3/4 around
	// the caches, with stores that need 64-byte alignment.
	L3, BufAlign int64
	// Choose, if set, picks the opts of each kernel instead of the
	// heuristic (BEAM search); it sees the kernel the opts apply to.
	Choose func(*Kernel) []Opt
	// GPU, when set, is a grid device: its opts (GROUP, UPCAST for vector
	// accesses) are chosen within these limits, and the vec4 pass runs.
	GPU *GPU
}

// Accs is the number of vector accumulators a register block may use: 12
// of 16 registers (a 6x2-vector matmul block; 8x2 spills), 16 of 32 (an
// 8x2-vector block). Measured on a Zen 4 with both register files, matmul
// 1536: 6x2 1.04x OpenBLAS and 8x2 0.58x with 16 registers; 8x2 1.03x and
// 4x2 0.69x with 32.
func (t Target) Accs() int64 {
	if t.VecRegs >= 32 {
		return 16
	}
	return 12
}

// CPUTarget is what emitting for the CPU uses, and the CPU device on a
// host without AVX-512 (the device sets VecWidth from the host's flags).
var CPUTarget = Target{Upcast: true, VecWidth: DefaultVecWidth}

// DefaultVecWidth is the vector width assumed when a target does not say:
// 8 float32 lanes (256-bit AVX2), valid on every x86-64 CPU tgc targets
// and the width golden tests render with.
const DefaultVecWidth = 8

// Width is t's vector width (DefaultVecWidth when unset).
func (t Target) Width() int64 {
	if t.VecWidth <= 0 {
		return DefaultVecWidth
	}
	return int64(t.VecWidth)
}

// Passes is the optimization pipeline, in order (a new table each call).
// DEBUG=5 prints the kernel after each one.
func Passes() []Pass {
	return []Pass{
		{Name: "simplify", Run: plain(Simplify)},
		{Name: "split_reduces", Run: plain(SplitReduces)},
		{Name: "merge_axes", Run: plain(MergeAxes)},
		{Name: "split_globals", Run: plain(SplitGlobals), When: func(t Target) bool { return t.GPU == nil }},
		{Name: "reverse_reduces", Run: plain(ReverseReduces)},
		{Name: "split_tails", Run: SplitTails, When: func(t Target) bool { return t.Upcast && t.GPU == nil }},
		{Name: "opts", Run: applyChosenOpts, When: func(t Target) bool { return t.Upcast || t.GPU != nil }},
		{Name: "factor_reduces", Run: plain(FactorReduces), When: func(t Target) bool { return t.Upcast }},
		{Name: "hoist_reduces", Run: plain(HoistInvariantReduces), When: func(t Target) bool { return t.Upcast && t.GPU == nil }},
		{Name: "merge_outer", Run: plain(MergeOuter), When: func(t Target) bool { return t.Upcast && t.GPU == nil }},
		{Name: "keep", Run: PlanKeep, When: func(t Target) bool { return t.Upcast && t.GPU == nil }},
		{Name: "prologue", Run: PlanPrologue, When: func(t Target) bool { return t.Upcast && t.GPU == nil }},
		{Name: "skip_zeros", Run: PlanSkip, When: func(t Target) bool { return t.Upcast && t.GPU == nil }},
		{Name: "row_guards", Run: PlanRows, When: func(t Target) bool { return t.Upcast && t.GPU == nil }},
		{Name: "simd", Run: PlanSIMD, When: func(t Target) bool { return t.Upcast }},
		{Name: "tables", Run: PlanTables, When: func(t Target) bool { return t.Upcast && t.GPU == nil }},
		{Name: "value_loops", Run: PlanValueLoops, When: func(t Target) bool { return t.Upcast && t.GPU == nil }},
		{Name: "prefetch", Run: PlanPrefetch, When: func(t Target) bool { return t.Upcast && t.GPU == nil }},
		{Name: "prefetch_epilogue", Run: PlanEpiloguePrefetch, When: func(t Target) bool { return t.Upcast && t.GPU == nil }},
		{Name: "stream_stores", Run: PlanStream, When: func(t Target) bool { return t.Upcast && t.GPU == nil }},
		{Name: "vec_loops", Run: PlanVecLoops, When: func(t Target) bool { return t.Upcast && t.GPU == nil }},
		{Name: "vec4", Run: PlanVec4, When: func(t Target) bool { return t.GPU != nil && t.GPU.Vec4 }},
	}
}

func plain(f func(*Kernel) *Kernel) func(*Kernel, Target) (*Kernel, error) {
	return func(k *Kernel, _ Target) (*Kernel, error) { return f(k), nil }
}

// applyChosenOpts applies the target's choice of opts, or the heuristic's.
func applyChosenOpts(k *Kernel, t Target) (*Kernel, error) {
	var opts []Opt
	if t.Choose != nil {
		opts = t.Choose(k)
	} else {
		opts = t.HeuristicOpts(k)
	}
	return t.ApplyOpts(k, opts)
}

// Apply applies opts to k, a kernel as the opts pass sees it (after the
// passes before it), and runs the passes after it for t: the kernel the
// device runs with those decisions (what BEAM compiles and times).
func (t Target) Apply(k *Kernel, opts []Opt) (*Kernel, error) {
	k, err := t.ApplyOpts(k, opts)
	if err == nil {
		err = k.Verify()
	}
	if err != nil {
		return nil, fmt.Errorf("opts %s: %w", FormatOpts(opts), err)
	}
	return t.afterOpts(k, "")
}

// afterOpts runs the table's passes after opts on k, through the pass
// named last ("": to the end).
func (t Target) afterOpts(k *Kernel, last string) (*Kernel, error) {
	passes := Passes()
	i := slices.IndexFunc(passes, func(p Pass) bool { return p.Name == "opts" })
	for _, p := range passes[i+1:] {
		var err error
		if k, err = runPass(k, t, p, nil); err != nil {
			return nil, err
		}
		if p.Name == last {
			break
		}
	}
	return k, nil
}

// Optimize runs the passes every target runs; see OptimizeFor.
func Optimize(k *Kernel, dump func(pass string, k *Kernel)) (*Kernel, error) {
	return OptimizeFor(k, Target{}, dump)
}

// OptimizeFor runs the pass table for a target, verifying invariants after
// every pass; dump, if not nil, sees the kernel after each pass.
func OptimizeFor(k *Kernel, t Target, dump func(pass string, k *Kernel)) (*Kernel, error) {
	return runPasses(k, t, Passes(), dump)
}

// runPasses runs a pass table; an error names the pass whose result broke
// an invariant.
func runPasses(k *Kernel, t Target, passes []Pass, dump func(pass string, k *Kernel)) (*Kernel, error) {
	if dump != nil {
		dump("lowered", k)
	}
	if err := k.Verify(); err != nil {
		return nil, fmt.Errorf("lowered: %w", err)
	}
	for _, p := range passes {
		var err error
		if k, err = runPass(k, t, p, dump); err != nil {
			return nil, err
		}
	}
	return k, nil
}

// guarded runs f, a panic in it returned as an error: a bug in a pass or
// in Verify fails the kernel's compilation with the pass named (and where
// it failed), not the process (the passes run on every core).
func guarded(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("internal error (%v) at %s", r, panicSite())
		}
	}()
	return f()
}

// panicSite is the function and line where the panic being recovered was
// raised: the first frame below the recovering one outside the runtime.
func panicSite() string {
	pcs := make([]uintptr, 32)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs)])
	for {
		f, more := frames.Next()
		if !strings.HasPrefix(f.Function, "runtime.") {
			return fmt.Sprintf("%s (%s:%d)", f.Function[strings.LastIndexByte(f.Function, '/')+1:], filepath.Base(f.File), f.Line)
		}
		if !more {
			return "an unknown site"
		}
	}
}

// runPass runs one pass if the target wants it, and verifies its result.
func runPass(k *Kernel, t Target, p Pass, dump func(pass string, k *Kernel)) (*Kernel, error) {
	if p.When != nil && !p.When(t) {
		return k, nil
	}
	var nk *Kernel
	if err := guarded(func() (err error) { nk, err = p.Run(k, t); return err }); err != nil {
		return nil, fmt.Errorf("pass %s: %w", p.Name, err)
	}
	if nk == k {
		// the very kernel the pass before returned, verified then
		if dump != nil {
			dump(p.Name, nk)
		}
		return nk, nil
	}
	verify := nk.Verify
	if sameExprs(k, nk) {
		// A pass that only plans (keep, skip_zeros, simd) or changes
		// nothing: the expressions were verified after the pass before
		// (Linearize's hoisting check is most of the passes' garbage).
		verify = func() error { return nk.verifyPlans(k) }
	}
	if err := guarded(verify); err != nil {
		return nil, fmt.Errorf("after pass %s: %w", p.Name, err)
	}
	if dump != nil {
		dump(p.Name, nk)
	}
	return nk, nil
}

// Simplify rebuilds every expression through a fresh builder, which applies
// all rewrite rules to a fixed point bottom-up.
func Simplify(k *Kernel) *Kernel {
	return k.rewrite(func(*Builder, *Expr) *Expr { return nil })
}

// rewrite rebuilds the kernel's stores through a fresh builder, applying f
// to every expression first (nil: rebuild it from its rebuilt sources).
// Every pass that changes expressions makes its new kernel this way.
func (k *Kernel) rewrite(f func(b *Builder, e *Expr) *Expr) *Kernel {
	return k.rewriteLanes(1, func(b *Builder, _ int, e *Expr) *Expr { return f(b, e) })
}

// rewriteLanes is rewrite done n times, once per lane, each with its own
// memo: the stores are repeated lane by lane (all of lane 0's first), as
// register blocking needs. Expressions equal in several lanes are shared
// by the builder's interning.
func (k *Kernel) rewriteLanes(n int, f func(b *Builder, lane int, e *Expr) *Expr) *Kernel {
	nk := *k
	nk.B = NewBuilder()
	nk.SIMD, nk.Vec4, nk.Keep, nk.Skip, nk.Stream, nk.Rows, nk.Prefetch, nk.Pro, nk.Tabs = nil, nil, nil, nil, nil, nil, nil, nil, nil // plans name the old expressions
	nk.Stores = make([]*Expr, 0, n*len(k.Stores))
	for lane := 0; lane < n; lane++ {
		memo := map[*Expr]*Expr{}
		g := func(e *Expr) *Expr { return f(nk.B, lane, e) }
		for _, s := range k.Stores {
			nk.Stores = append(nk.Stores, nk.B.Rebuild(s, g, memo))
		}
	}
	return &nk
}

// countDivMod counts the integer divisions and modulos in a kernel.
func (k *Kernel) countDivMod() int {
	n := 0
	Walk(k.Stores, func(e *Expr) {
		if (e.Op == OpDiv || e.Op == OpMod) && !e.DType.IsFloat() {
			n++
		}
	})
	return n
}

// MergeAxes fuses adjacent global loops into one when that costs no extra
// index math (contiguous access), giving one long outer loop to split
// across cores and a simple inner loop for the C compiler to vectorize.
func MergeAxes(k *Kernel) *Kernel {
	for i := 0; i+1 < len(k.Global); {
		outer, inner := k.Global[i], k.Global[i+1]
		if outer.Sym != nil || inner.Sym != nil {
			i++ // the valid merged indices would not be a prefix
			continue
		}
		merged := &Axis{ID: outer.ID, Size: outer.Size * inner.Size, Kind: AxisGlobal}
		before := k.countDivMod()
		nk := k.rewrite(func(b *Builder, e *Expr) *Expr {
			if e.Op != OpVar {
				return nil
			}
			switch e.Arg.(*Axis) {
			case outer:
				return b.Div(b.Var(merged), b.Int(inner.Size))
			case inner:
				return b.Mod(b.Var(merged), b.Int(inner.Size))
			}
			return nil
		})
		if nk.countDivMod() > before {
			i++
			continue
		}
		nk.Global = append(append(append([]*Axis{}, k.Global[:i]...), merged), k.Global[i+2:]...)
		k = nk
	}
	return k
}

// ReduceIdentity is the start value of a reduction's accumulator.
func ReduceIdentity(op Op, dt DType) float64 {
	if op == OpSum {
		return 0
	}
	if dt.IsFloat() {
		return math.Inf(-1)
	}
	lo, _ := dt.ValueRange()
	return lo
}

// sameExprs says whether b has a's very expressions, loops, buffers and
// vars (the same slices, not equal copies): what verifyExprs checks.
func sameExprs(a, b *Kernel) bool {
	same := func(x, y []*Expr) bool { return len(x) == len(y) && (len(x) == 0 || &x[0] == &y[0]) }
	return a == b || same(a.Stores, b.Stores) && slices.Equal(a.Global, b.Global) &&
		slices.Equal(a.Bufs, b.Bufs) && a.NumParams == b.NumParams
}

// axisNames is "(ridx0, ridx1)" for axes ridx0 and ridx1.
func axisNames(axes []*Axis) string {
	names := make([]string, len(axes))
	for i, a := range axes {
		names[i] = a.Name()
	}
	return "(" + strings.Join(names, ", ") + ")"
}
