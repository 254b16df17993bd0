package ir

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// The tables pass (C targets). A quantized weight's block scale is a
// scalar of the block loops that factor_reduces pulled out of each
// block's sum: Q4_K's d·sc per 32 weights. Computed in the loop, it costs every block a byte load, an int-to-float convert, a
// multiply and a broadcast into a vector before its one multiply-add: on
// AVX-512 (two vector ports) five of the thirteen vector instructions of
// 32 weights, so the loop ran at 6.8 cycles per 32. The plan has the C
// renderer compute the scale for every block of the row first, in a loop
// nest of its own that the compiler vectorizes (8 or 16 blocks an
// instruction), into a small table, and read it back in the block loop,
// where the multiply-add takes it as a broadcast memory operand. The
// table's values are the loop's own (the same float operations), so the
// results are bit for bit unchanged. A decode's Q4_K rows of 2048 (C
// harness on the Xeon guest): 93-96 µs a launch, 75-78 µs so.

// MaxTable is the most floats a table holds (4 KiB: in L1 beside the
// row's weights).
const MaxTable = 1024

// Tables is the tables pass's plan.
type Tables struct {
	Tabs []Table
}

// Table is one value tabulated over the loops of its reduce it reads.
type Table struct {
	// Value is a float32 value in the body of a top-level reduce (not
	// inside a reduce of its own); it reads Axes, global axes and values
	// computed before the reduce, and is computed for every iteration of
	// Axes before the reduce's loops, into element Col.
	Value *Expr
	Axes  []*Axis // the reduce's loops Value reads, in the reduce's order
	Col   *Expr   // the element: Axes' variables flattened, the last fastest
	// Family, when not nil, makes the table hold several values of the
	// kernel (Value is then their common form, not a node of the kernel,
	// and Col is unused): see Family.
	Family *Family
	// Fill, where its W is not zero, is Value at W consecutive elements
	// of the table, which the C renderer fills a vector at a time (see
	// fillLanes): with FillAxes 0 along the last loop, which it steps by
	// W, lane l the value at that loop's variable plus l; otherwise the
	// vector covers the last FillAxes loops whole (Q4_K's 4x2 scales of a
	// super-block), which it does not write, lane l the value at the
	// element l of their row-major order. FillCol is lane 0's element.
	Fill     Lanes
	FillAxes int
	FillCol  *Expr
}

// Family is a table of values that are one value at several constant
// offsets of their loads: Q6_K's scales d·sc[j] and d·sc[j+1] where the
// simd pass unrolled two sub-blocks side by side, so that no single value
// is read by every member of the reduce. Their loads read contiguous
// bytes over Inner's loops and the members, so the table's last loop
// (Axis) runs over all of them at once: 16 scale bytes of a super-block,
// which the C compiler converts as one vector (vpmovsxbd, vcvtdq2ps, a
// multiply by d), where the loop converted each scale alone and broadcast
// it. A decode's Q6_K 768x2048 product (Xeon guest, DEBUG=2 medians over
// 400 launches): 83 -> 71 µs; 768x768 36 -> 31.
type Family struct {
	Members []*Expr // the kernel's values, member i at Inner's offsets + i
	Cols    []*Expr // member i's element of the table
	// Inner are the reduce's loops the loads read contiguously, Axis the
	// table's last loop, over Inner's iterations times the members (the
	// members fastest). Value reads Axis where the members read Inner's
	// variables and their own offsets.
	Inner []*Axis
	Axis  *Axis
}

// Size is the number of elements of t.
func (t Table) Size() int64 {
	n := int64(1)
	for _, a := range t.Axes {
		n *= a.Size
	}
	return n
}

// Of is the table that holds value e and e's element in it (false:
// none).
func (p *Tables) Of(e *Expr) (int, *Expr, bool) {
	if p == nil {
		return 0, nil, false
	}
	for i, t := range p.Tabs {
		if t.Family == nil && t.Value == e {
			return i, t.Col, true
		}
		if t.Family != nil {
			if m := slices.Index(t.Family.Members, e); m >= 0 {
				return i, t.Family.Cols[m], true
			}
		}
	}
	return 0, nil, false
}

// Reduce is one of the reduce's loops the table is computed in (its
// Axes' first, or its family's inner loops'): where the renderer writes
// it.
func (t Table) Reduce() *Axis {
	for _, a := range t.Axes {
		if t.Family == nil || a != t.Family.Axis {
			return a
		}
	}
	if t.Family != nil && len(t.Family.Inner) > 0 {
		return t.Family.Inner[0]
	}
	return nil
}

// values are the kernel's values t holds.
func (t Table) values() []*Expr {
	if t.Family != nil {
		return t.Family.Members
	}
	return []*Expr{t.Value}
}

// PlanTables is the tables pass (see Tables): a table for each block
// value (sharedValues) of a top-level float32 sum, one or two a sum;
// none: k unchanged.
//
// Q8_0's scale, a float16 load alone, gets none: the vector code reads it
// as one broadcast load and convert, and its table made no difference in
// the decode benchmark (4.93-5.53 against 4.36-5.63 ms a token).
func PlanTables(k *Kernel, _ Target) (*Kernel, error) {
	if len(k.Global) == 0 || k.Keep != nil || k.Skip != nil {
		return k, nil
	}
	fv := freeVars(k.Stores)
	global := map[*Axis]bool{}
	for _, a := range k.Global {
		global[a] = true
	}
	prog := Linearize(k)
	var tabs []Table
	var leaders []*Expr
	Walk(k.Stores, func(e *Expr) {
		if e.Op == OpReduce {
			leaders = appendNew(leaders, prog.Leader[e])
		}
	})
	for _, leader := range leaders {
		axes := leader.Arg.(*ReduceArg).Axes
		if leader.Arg.(*ReduceArg).Op != OpSum || leader.DType != Float32 || prog.Place[leader] != nil {
			continue
		}
		vals := sharedValues(k, prog.Members[leader], axes, fv, global)
		if len(vals) == 0 {
			for _, vals := range laneValues(k, prog.Members[leader], axes, fv, global) { // Q2_K: a scale and a minimum per lane
				if t, ok := familyTable(k, vals, axes, fv, len(tabs)); ok {
					tabs = append(tabs, t)
				}
			}
			continue
		}
		if len(vals) > 2 { // more: not a block's scale and minimum
			continue
		}
		for _, v := range vals {
			t := Table{Value: v}
			for _, a := range axes {
				if slices.Contains(fv[v], a) {
					t.Axes = append(t.Axes, a)
				}
			}
			if t.Size() > MaxTable {
				continue
			}
			t.Col = flatten(k.B, t.Axes)
			tabs = append(tabs, t)
		}
	}
	if len(tabs) == 0 {
		return k, nil
	}
	for i := range tabs {
		tabs[i].Fill, tabs[i].FillAxes, tabs[i].FillCol = fillLanes(k, tabs[i])
	}
	nk := *k
	nk.Tabs = &Tables{Tabs: tabs}
	if err := nk.Tabs.verify(&nk, nil); err != nil {
		return k, nil // not provable: computed in the loop as before
	}
	return &nk, nil
}

// sharedValues lists a reduce group's block values: the maximal float32
// subexpressions of its members' values, outside the reduces in them,
// that compute (not a load, converted or not, or a constant) from a load,
// read some of the group's loops (axes) and otherwise only global axes,
// and that every member reads, when the members' values have a reduce
// nested in them that reads the group's loops (the block's sum; not a
// value computed before the loops, a softmax's maximum), or when several
// members read them without one (IQ4_XS's sub-block of 32 at 16 lanes:
// two vectors unrolled whole that share their scale; its products 4-8 %
// faster tabled). Q6_K's blocks of 16 weights, one vector unrolled whole
// with no loop left, have none
// (a table for each unrolled sub-block made the 768x2048 product slower,
// 82 against 78 µs: loops of 2 around a row's 64 scales, too short for
// the compiler to vectorize); familyTable gives them one table.
func sharedValues(k *Kernel, members []*Expr, axes []*Axis, fv map[*Expr][]*Axis, global map[*Axis]bool) []*Expr {
	nested := false // a block's sum: a reduce in the loops (not one hoisted before them)
	for _, m := range members {
		WalkPre(m.Src, func(x *Expr) bool {
			if x.Op == OpReduce && slices.ContainsFunc(fv[x], func(a *Axis) bool { return slices.Contains(axes, a) }) {
				nested = true
			}
			return !nested
		})
	}
	if !nested && len(members) < 2 {
		return nil // one vector a block, nothing shared with another
	}
	read, readers := memberValues(k, members, axes, fv, global)
	var cands []*Expr // in the order the members first read them
	for _, r := range read {
		cands = appendNew(cands, r...)
	}
	need := len(members)
	var vals []*Expr
	for _, c := range cands {
		if readers[c] < need {
			continue
		}
		inside := false // in another shared value: that one is tabled
		for _, d := range cands {
			if d != c && readers[d] >= need && contains(d, c) {
				inside = true
			}
		}
		if !inside {
			vals = append(vals, c)
		}
	}
	return vals
}

// blockValue says whether x may be a table's value (see sharedValues).
func blockValue(k *Kernel, x *Expr, axes []*Axis, fv map[*Expr][]*Axis, global map[*Axis]bool) bool {
	if x.DType != Float32 || x.Op == OpLoad || x.Op == OpConst || x.Op == OpCast && x.Src[0].Op == OpLoad {
		return false // a load, converted or not, is read where it is used (Q8_0's f16 scale: one broadcast load)
	}
	if load, reduce := reads(x); !load || reduce {
		return false
	}
	loops := false
	for _, a := range fv[x] {
		switch {
		case slices.Contains(axes, a):
			loops = true
		case !global[a]:
			return false
		}
	}
	return loops && !k.rowPlanned(x)
}

// contains says whether e's expression has x in it.
func contains(e, x *Expr) bool {
	found := false
	WalkPre([]*Expr{e}, func(y *Expr) bool {
		found = found || y == x
		return !found
	})
	return found
}

// reads says whether e reads a buffer, and whether it reads a reduce.
func reads(e *Expr) (load, reduce bool) {
	WalkPre([]*Expr{e}, func(x *Expr) bool {
		load = load || x.Op == OpLoad
		reduce = reduce || x.Op == OpReduce
		return x.Op != OpReduce
	})
	return load, reduce
}

// rowPlanned says whether e reads a load the row_guards plan reads
// through its row pointer (the table's loop has none).
func (k *Kernel) rowPlanned(e *Expr) bool {
	if k.Rows == nil {
		return false
	}
	found := false
	WalkPre([]*Expr{e}, func(x *Expr) bool {
		if x.Op == OpLoad {
			_, planned := k.RowOf(x)
			found = found || planned
		}
		return !found && x.Op != OpReduce
	})
	return found
}

// nestedIn says whether reduce r sits inside another reduce's loop.
func nestedIn(k *Kernel, r *Expr) bool {
	nested := false
	Walk(k.Stores, func(e *Expr) {
		if e.Op == OpReduce && e != r && !nested {
			WalkPre(e.Src, func(x *Expr) bool {
				nested = nested || x == r
				return !nested
			})
		}
	})
	return nested
}

func appendNew(xs []*Expr, ys ...*Expr) []*Expr {
	for _, y := range ys {
		if !slices.Contains(xs, y) {
			xs = append(xs, y)
		}
	}
	return xs
}

// flatten is the element of axes' variables in a row-major table.
func flatten(b *Builder, axes []*Axis) *Expr {
	col := b.Int(0)
	for _, a := range axes {
		col = b.Add(b.Mul(col, b.Int(a.Size)), b.Var(a))
	}
	return col
}

// verify re-proves a Tables plan on its kernel (in: the kernel's
// expressions; nil: walked here): each value is float32, in the kernel,
// reads its axes (the loops of one top-level reduce whose value holds it)
// and global axes only, no reduce, and loads that stay in their buffers;
// its element is its axes flattened, inside the table.
func (p *Tables) verify(k *Kernel, in map[*Expr]bool) error {
	if in == nil {
		in = map[*Expr]bool{}
		Walk(k.Stores, func(e *Expr) { in[e] = true })
	}
	fv := freeVars(k.Stores)
	global := map[*Axis]bool{}
	for _, a := range k.Global {
		global[a] = true
	}
	for i, t := range p.Tabs {
		e := t.Value
		if e == nil || e.DType != Float32 || t.Family == nil && !in[e] {
			return fmt.Errorf("tables: table %d's value is not a float32 of the kernel", i)
		}
		if len(t.Axes) == 0 || t.Size() > MaxTable {
			return fmt.Errorf("tables: table %d has %d elements (1 to %d)", i, t.Size(), MaxTable)
		}
		var owner *Expr
		if ra := t.Reduce(); ra != nil {
			Walk(k.Stores, func(r *Expr) {
				if r.Op == OpReduce && owner == nil && slices.Contains(r.Arg.(*ReduceArg).Axes, ra) {
					owner = r
				}
			})
		}
		if owner == nil || nestedIn(k, owner) {
			return fmt.Errorf("tables: table %d's loops are not a top-level reduce's", i)
		}
		raxes := owner.Arg.(*ReduceArg).Axes
		loops := t.Axes
		vfv := fv[e]
		if f := t.Family; f != nil {
			loops = append(slices.Clone(t.Axes[:len(t.Axes)-1]), f.Inner...)
			vfv = freeVars([]*Expr{e})[e]
			if t.Axes[len(t.Axes)-1] != f.Axis || slices.Contains(raxes, f.Axis) {
				return fmt.Errorf("tables: table %d's last loop is not its family's own", i)
			}
		}
		for _, a := range loops {
			if !slices.Contains(raxes, a) || a.Sym != nil {
				return fmt.Errorf("tables: table %d's loop %s is not one of its reduce's", i, a.Name())
			}
		}
		for _, a := range vfv {
			if !global[a] && !slices.Contains(t.Axes, a) {
				return fmt.Errorf("tables: table %d's value reads %s", i, a.Name())
			}
		}
		var err error
		WalkPre([]*Expr{e}, func(x *Expr) bool {
			switch {
			case err != nil:
			case x.Op == OpReduce:
				err = fmt.Errorf("tables: table %d's value reads a reduce", i)
			case x.Op == OpStore:
				err = fmt.Errorf("tables: table %d's value stores", i)
			case x.Op == OpLoad:
				err = k.checkIndex(x)
			}
			return err == nil
		})
		if err != nil {
			return err
		}
		b := NewBuilder()
		memo := map[*Expr]*Expr{}
		idf := func(x *Expr) *Expr { return b.Rebuild(x, func(*Expr) *Expr { return nil }, memo) }
		if idf(t.Col) != flatten(b, t.Axes) || t.Col.Min < 0 || t.Col.Max >= t.Size() {
			return fmt.Errorf("tables: table %d's element %s is not its loops flattened", i, t.Col)
		}
		if t.Family != nil {
			if err := t.Family.verify(t, in, b, idf); err != nil {
				return fmt.Errorf("tables: table %d: %v", i, err)
			}
		}
		if f := t.Fill; f.W != 0 {
			if t.FillAxes == 1 || t.FillAxes > len(t.Axes) || f.W != 8 && f.W != 16 {
				return fmt.Errorf("tables: table %d's fill of %d lanes over its last %d loops", i, f.W, t.FillAxes)
			}
			axes := t.Axes[len(t.Axes)-max(t.FillAxes, 1):]
			size := int64(1)
			for _, a := range axes {
				size *= a.Size
			}
			at := func(x *Expr, l int) *Expr { return laneAt(b, x, axes, int64(l)) }
			if t.FillAxes == 0 && size%int64(f.W) != 0 || t.FillAxes > 0 && size != int64(f.W) ||
				!fillable(b, idf(e), at, f.W) || !sameValue(idf(t.FillCol), at(idf(t.Col), 0)) {
				return fmt.Errorf("tables: table %d's fill of %d lanes does not fit its loops", i, f.W)
			}
			for l := range f.W {
				if !sameValue(idf(f.L[l]), at(idf(e), l)) {
					return fmt.Errorf("tables: table %d's fill lane %d is not its value at element %d", i, l, l)
				}
			}
		}
	}
	return nil
}

// fillLanes plans table t's fill as vectors of the kernel's SIMD width
// (or 8 lanes, where the table's rows are a multiple of 8 but not of the
// width): along its last loop where that is a multiple of the lanes, or
// over its last loops whole where they make one vector, when every load
// in the value reads consecutive elements along the vector or one element
// for all of it, through casts and integer and float arithmetic a vector
// has (none: a zero Lanes; the scalar loop fills it). It returns the
// lanes, the loops the vector covers whole (0: the last one stepped) and
// lane 0's element. A scalar fill loop is short (16 scale bytes a
// super-block of Q6_K and Q2_K, 8 of IQ4_XS and Q4_K): gcc unrolled it
// whole, then vectorized the copies four lanes at a time, a chain of sign
// extensions each. A decode's Q6_K 768x2048 product on the Xeon guest (C
// harness of its DEBUG=3 source, weights in L2): 127-130 µs, 117-122 with
// the table filled 16 lanes at a time.
func fillLanes(k *Kernel, t Table) (Lanes, int, *Expr) {
	if k.SIMD == nil || len(t.Axes) == 0 {
		return Lanes{}, 0, nil
	}
	b := k.B
	widths := []int{k.SIMD.Width}
	if k.SIMD.Width > 8 {
		widths = append(widths, 8)
	}
	for _, w := range widths {
		if w < 8 || w > MaxVecWidth {
			continue
		}
		// the last loop stepped by w
		if last := t.Axes[len(t.Axes)-1]; last.Size%int64(w) == 0 {
			at := func(e *Expr, l int) *Expr { return laneAt(b, e, []*Axis{last}, int64(l)) }
			if fillable(b, t.Value, at, w) {
				return fillOf(t.Value, at, w), 0, t.Col
			}
		}
		// the last loops whole
		size := int64(1)
		for n := 1; n <= len(t.Axes); n++ {
			size *= t.Axes[len(t.Axes)-n].Size
			if size > int64(w) {
				break
			}
			if size == int64(w) && n > 1 {
				whole := t.Axes[len(t.Axes)-n:]
				at := func(e *Expr, l int) *Expr { return laneAt(b, e, whole, int64(l)) }
				if fillable(b, t.Value, at, w) {
					return fillOf(t.Value, at, w), n, at(t.Col, 0)
				}
			}
		}
	}
	return Lanes{}, 0, nil
}

func fillOf(e *Expr, at func(*Expr, int) *Expr, w int) Lanes {
	f := Lanes{W: w}
	for l := range w {
		f.L[l] = at(e, l)
	}
	return f
}

// fillable says whether e computes, lane by lane (at(e, l) is lane l's
// expression), what the vector renderer computes: its loads read
// consecutive elements along the lanes or one element, unguarded; its
// arithmetic (+ - * & | and shifts by a constant within the width) is on
// float32 or int32 lanes; its casts make those from them or from a load
// of bytes or float16 (a widening load: NarrowLoad).
func fillable(b *Builder, e *Expr, at func(*Expr, int) *Expr, w int) bool {
	lanes := func(d DType) bool { return d == Float32 || d == Int32 }
	switch e.Op {
	case OpConst:
		return lanes(e.DType)
	case OpLoad:
		if len(e.Src) > 1 || !lanes(e.DType) && e.DType != Int8 && e.DType != Uint8 && e.DType != Float16 {
			return false
		}
		first, same, next := at(e.Src[0], 0), true, true
		for l := 1; l < w; l++ {
			x := at(e.Src[0], l)
			same = same && sameValue(x, first)
			next = next && sameValue(x, b.Add(first, b.Int(int64(l))))
		}
		return same || next
	case OpCast:
		x := e.Src[0]
		switch {
		case !lanes(e.DType):
			return false
		case x.Op == OpBitcast: // signed bytes
			return x.DType == Int8 && x.Src[0].DType == Uint8 && x.Src[0].Op == OpLoad && fillable(b, x.Src[0], at, w)
		case !lanes(x.DType) && x.Op != OpLoad:
			return false
		}
	case OpShr, OpShl:
		if c := e.Src[1]; e.DType != Int32 || !c.IsConst() || c.Min < 0 || c.Max >= 32 {
			return false
		}
	case OpAdd, OpSub, OpMul, OpAnd, OpOr:
		if !lanes(e.DType) {
			return false
		}
	default:
		return false
	}
	for _, s := range e.Src {
		if !fillable(b, s, at, w) {
			return false
		}
	}
	return true
}

// laneAt is e at element l of loops axes taken row-major from their
// variables (one loop: its variable plus l; several, covered whole: the
// constants of l's digits).
func laneAt(b *Builder, e *Expr, axes []*Axis, l int64) *Expr {
	if len(axes) == 1 {
		if l == 0 {
			return e
		}
		return substVar(b, e, axes[0], b.Add(b.Var(axes[0]), b.Int(l)))
	}
	sub := map[*Axis]*Expr{}
	for i := len(axes) - 1; i >= 0; i-- {
		sub[axes[i]] = b.Int(l % axes[i].Size)
		l /= axes[i].Size
	}
	return b.Rebuild(e, func(x *Expr) *Expr {
		if x.Op == OpVar {
			return sub[x.Arg.(*Axis)]
		}
		return nil
	}, map[*Expr]*Expr{})
}

// verify proves a family table's members: member i is the table's value
// with its loop at Inner's position times the members plus i, and reads
// that element.
func (f *Family) verify(t Table, in map[*Expr]bool, b *Builder, idf func(*Expr) *Expr) error {
	n := int64(len(f.Members))
	size := n
	for _, a := range f.Inner {
		size *= a.Size
	}
	if n < 2 || len(f.Cols) != len(f.Members) || f.Axis.Size != size {
		return fmt.Errorf("%d members, %d elements, a loop of %d over %d", n, len(f.Cols), f.Axis.Size, size)
	}
	prefix := t.Axes[:len(t.Axes)-1]
	for i, m := range f.Members {
		if !in[m] || m.DType != Float32 {
			return fmt.Errorf("member %d is not a float32 of the kernel", i)
		}
		pos := innerPos(b, f.Inner, n, int64(i))
		got := b.Rebuild(t.Value, func(x *Expr) *Expr {
			if x.Op == OpVar && x.Arg.(*Axis) == f.Axis {
				return pos
			}
			return nil
		}, map[*Expr]*Expr{})
		if !sameValue(got, idf(m)) {
			return fmt.Errorf("member %d is not the value at its position", i)
		}
		if want := b.Add(b.Mul(flatten(b, prefix), b.Int(size)), pos); !sameValue(idf(f.Cols[i]), want) || f.Cols[i].Min < 0 || f.Cols[i].Max >= t.Size() {
			return fmt.Errorf("member %d's element %s is not its position", i, f.Cols[i])
		}
	}
	return nil
}

// TabledOnly lists the nodes of k that only its tables' values read (none
// without a tables plan): the reduce reads the tables instead, so the
// renderer does not write them there, nor the prefetch pass plan them.
func (k *Kernel) TabledOnly() map[*Expr]bool {
	if k.Tabs == nil {
		return map[*Expr]bool{}
	}
	var vals, cols []*Expr
	for _, t := range k.Tabs.Tabs {
		vals = append(vals, t.values()...)
		if t.Family != nil {
			cols = append(cols, t.Family.Cols...)
		} else {
			cols = append(cols, t.Col)
		}
	}
	return OnlyUnder(k, vals, cols...)
}

// OnlyUnder lists the nodes below values (not the values) that neither
// k's stores nor roots reach other than through one of them: what a plan
// that computes the values elsewhere (a keep plan's stored row, a
// prologue's scratch row, a table) leaves the loops no reason to compute.
func OnlyUnder(k *Kernel, values []*Expr, roots ...*Expr) map[*Expr]bool {
	stop := map[*Expr]bool{}
	for _, v := range values {
		stop[v] = true
	}
	live := map[*Expr]bool{}
	var rec func(e *Expr)
	rec = func(e *Expr) {
		if live[e] {
			return
		}
		live[e] = true
		if stop[e] {
			return
		}
		for _, s := range e.Src {
			rec(s)
		}
	}
	for _, s := range k.Stores {
		rec(s)
	}
	for _, r := range roots {
		rec(r)
	}
	dead := map[*Expr]bool{}
	for _, v := range values {
		Walk(v.Src, func(x *Expr) {
			if !live[x] {
				dead[x] = true
			}
		})
	}
	return dead
}

// dump prints the plan for Kernel.Dump.
func (p *Tables) dump(names map[*Expr]string) string {
	var sb strings.Builder
	for i, t := range p.Tabs {
		var ls []string
		for _, a := range t.Axes {
			ls = append(ls, fmt.Sprintf("%s<%d", a.Name(), a.Size))
		}
		if f := t.Family; f != nil {
			var ms, in []string
			for _, m := range f.Members {
				ms = append(ms, names[m])
			}
			for _, a := range f.Inner {
				in = append(in, a.Name())
			}
			fmt.Fprintf(&sb, "  table %d over %s: %s, %s's loop over %s and the members%s\n", i, strings.Join(ls, " "), strings.Join(ms, " "), f.Axis.Name(), strings.Join(in, " "), t.fillDump())
			continue
		}
		fmt.Fprintf(&sb, "  table %d over %s: %s%s\n", i, strings.Join(ls, " "), names[t.Value], t.fillDump())
	}
	return sb.String()
}

// fillDump says how the table is filled (DEBUG=5).
func (t Table) fillDump() string {
	switch {
	case t.Fill.W == 0:
		return ""
	case t.FillAxes == 0:
		return fmt.Sprintf("; filled %d lanes a step of %s", t.Fill.W, t.Axes[len(t.Axes)-1].Name())
	default:
		return fmt.Sprintf("; filled %d lanes over its last %d loops whole", t.Fill.W, t.FillAxes)
	}
}

// familyTable plans a family table (see Family) for a reduce group where
// sharedValues finds no value every member reads: each member reads one
// block value that other members read too (its lanes' scale), and those
// values are one value at constant offsets i*c of its loads, c per load,
// over the contiguous offsets of some of the group's loops (Inner).
// made numbers the table's own loop apart from earlier tables'.
func familyTable(k *Kernel, vals []*Expr, axes []*Axis, fv map[*Expr][]*Axis, made int) (Table, bool) {
	if len(vals) < 2 {
		return Table{}, false
	}
	// each value's loads moved from the first value's, then the values
	// in the order of their moves
	moves := make([][]int64, len(vals))
	for i, v := range vals {
		if !translate(vals[0], v, &moves[i]) {
			return Table{}, false
		}
	}
	by := -1 // a load that moves
	for l := range moves[0] {
		if slices.ContainsFunc(moves, func(m []int64) bool { return m[l] != 0 }) {
			by = l
			break
		}
	}
	if by < 0 {
		return Table{}, false
	}
	order := make([]int, len(vals))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(moves[a][by], moves[b][by]) })
	n := int64(len(vals))
	step := make([]int64, len(moves[0])) // c: a load's move from one value to the next
	for l := range step {
		step[l] = moves[order[1]][l] - moves[order[0]][l]
	}
	members2 := make([]*Expr, n)
	for i, o := range order {
		members2[i] = vals[o]
		for l := range step {
			if moves[o][l]-moves[order[0]][l] != int64(i)*step[l] {
				return Table{}, false
			}
		}
	}
	base := members2[0]
	var loops []*Axis // the group's loops the value reads, in the reduce's order
	for _, a := range axes {
		if slices.Contains(fv[base], a) {
			loops = append(loops, a)
		}
	}
	loads := loadsOf(base)
	// the longest run of innermost loops read contiguously with the
	// members, by a load of consecutive elements: at least one loop (a
	// family of the members alone, a matmul's broadcast rows, is no
	// super-block's scales)
	if !slices.Contains(step, 1) {
		return Table{}, false
	}
	inner := loops
	for ; !oneRun(loads, step, inner, n); inner = inner[1:] {
		if len(inner) == 1 {
			return Table{}, false
		}
	}
	prefix := loops[:len(loops)-len(inner)]
	size := n
	for _, a := range inner {
		size *= a.Size
	}
	id := made
	for _, a := range append(slices.Clone(k.Global), k.ReduceAxes()...) {
		id = max(id, a.ID+made+1)
	}
	ax := &Axis{ID: id, Size: size, Kind: AxisReduce}
	b := k.B
	stepOf := map[*Expr]int64{}
	for l, ld := range loads {
		if s, seen := stepOf[ld]; seen && s != step[l] {
			return Table{}, false
		}
		stepOf[ld] = step[l]
	}
	zero := func(x *Expr) *Expr {
		if x.Op == OpVar && slices.Contains(inner, x.Arg.(*Axis)) {
			return b.Int(0)
		}
		return nil
	}
	value := b.Rebuild(base, func(x *Expr) *Expr {
		if x.Op != OpLoad {
			return nil
		}
		idx := b.Add(b.Rebuild(x.Src[0], zero, map[*Expr]*Expr{}), b.Mul(b.Var(ax), b.Int(stepOf[x])))
		return b.Load(x.Arg.(int), x.DType, idx, nil)
	}, map[*Expr]*Expr{})
	if slices.ContainsFunc(freeVars([]*Expr{value})[value], func(a *Axis) bool { return slices.Contains(inner, a) }) {
		return Table{}, false // an inner loop read other than by a load's index
	}
	t := Table{Value: value, Axes: append(slices.Clone(prefix), ax), Family: &Family{Members: members2, Inner: inner, Axis: ax}}
	if t.Size() > MaxTable {
		return Table{}, false
	}
	t.Col = flatten(b, t.Axes)
	for i := range members2 {
		t.Family.Cols = append(t.Family.Cols, b.Add(b.Mul(flatten(b, prefix), b.Int(size)), innerPos(b, inner, n, int64(i))))
	}
	return t, true
}

// memberValues lists the block values (blockValue) each member's value
// reads outside the reduces in it, in the order it reads them, and how
// many members read each.
func memberValues(k *Kernel, members []*Expr, axes []*Axis, fv map[*Expr][]*Axis, global map[*Axis]bool) ([][]*Expr, map[*Expr]int) {
	readers := map[*Expr]int{}
	isValue := map[*Expr]bool{} // blockValue, once a node (the members share most of theirs)
	read := make([][]*Expr, len(members))
	for i, m := range members {
		seen := map[*Expr]bool{}
		WalkPre(m.Src, func(x *Expr) bool {
			if seen[x] || x.Op == OpReduce {
				return false
			}
			seen[x] = true
			is, known := isValue[x]
			if !known {
				is = blockValue(k, x, axes, fv, global)
				isValue[x] = is
			}
			if is {
				readers[x]++
				read[i] = append(read[i], x)
			}
			return true
		})
	}
	return read, readers
}

// laneValues lists the block values (blockValue) a reduce group's members
// read, when each member reads the same number of them that other members
// read too (the largest such; a sub-block's scale, and Q2_K's its minimum,
// which its lanes share): slot t holds the members' t-th values, in the
// order each member reads them, each value once; nil when the members
// read different numbers of them, or none.
func laneValues(k *Kernel, members []*Expr, axes []*Axis, fv map[*Expr][]*Axis, global map[*Axis]bool) [][]*Expr {
	read, readers := memberValues(k, members, axes, fv, global)
	var slots [][]*Expr
	for i := range members {
		var top []*Expr // shared values not inside another shared one
		for _, c := range read[i] {
			if readers[c] < 2 {
				continue
			}
			if !slices.ContainsFunc(read[i], func(d *Expr) bool { return d != c && readers[d] >= 2 && contains(d, c) }) {
				top = append(top, c)
			}
		}
		if i == 0 {
			slots = make([][]*Expr, len(top))
		}
		if len(top) == 0 || len(top) != len(slots) {
			return nil
		}
		for t, v := range top {
			slots[t] = appendNew(slots[t], v)
		}
	}
	return slots
}

// translate says whether y is x with its loads' indices moved by
// constants, appending the moves in x's order of loads (loadsOf).
func translate(x, y *Expr, moves *[]int64) bool {
	if x.Op != y.Op || x.DType != y.DType || len(x.Src) != len(y.Src) {
		return false
	}
	switch x.Op {
	case OpLoad:
		if x.Arg != y.Arg || len(x.Src) != 1 {
			return false
		}
		tx, cx := normalize(addTerms(nil, x.Src[0], 1))
		ty, cy := normalize(addTerms(nil, y.Src[0], 1))
		if !sameTerms(tx, 0, ty, 0) {
			return false
		}
		*moves = append(*moves, cy-cx)
		return true
	case OpConst, OpVar, OpParam, OpReduce:
		return x == y
	}
	for i := range x.Src {
		if !translate(x.Src[i], y.Src[i], moves) {
			return false
		}
	}
	return true
}

// loadsOf lists x's loads in translate's order (a load reached twice is
// listed twice).
func loadsOf(x *Expr) []*Expr {
	if x.Op == OpLoad {
		return []*Expr{x}
	}
	var ls []*Expr
	for _, s := range x.Src {
		ls = append(ls, loadsOf(s)...)
	}
	return ls
}

// oneRun says whether every load reads inner's loops and the n
// members as one run: in each index, inner's variables appear only as
// terms of their own, loop a's with coefficient step·(n times the sizes
// of the loops after it).
func oneRun(loads []*Expr, step []int64, inner []*Axis, n int64) bool {
	for l, ld := range loads {
		ts, _ := normalize(addTerms(nil, ld.Src[0], 1))
		for i, a := range inner {
			want := step[l] * n
			for _, b := range inner[i+1:] {
				want *= b.Size
			}
			got := int64(0)
			for _, t := range ts {
				switch {
				case t.e == nil:
				case t.e.Op == OpVar && t.e.Arg.(*Axis) == a:
					got += t.k
				case usesVar(t.e, a):
					return false
				}
			}
			if got != want {
				return false
			}
		}
	}
	return true
}

// innerPos is member i's position in a family table's last loop: inner's
// variables flattened, times n, plus i.
func innerPos(b *Builder, inner []*Axis, n, i int64) *Expr {
	return b.Add(b.Mul(flatten(b, inner), b.Int(n)), b.Int(i))
}

// sameValue says whether x and y compute the same value: the same
// operations, with integer indices compared as linear forms (two builds of
// one sum may order its terms differently).
func sameValue(x, y *Expr) bool {
	if x == y {
		return true
	}
	if x.DType == Index && y.DType == Index {
		tx, cx := normalize(addTerms(nil, x, 1))
		ty, cy := normalize(addTerms(nil, y, 1))
		if sameTerms(tx, cx, ty, cy) {
			return true
		}
	}
	if x.Op != y.Op || x.DType != y.DType || len(x.Src) != len(y.Src) || x.Arg != y.Arg {
		return false
	}
	for i := range x.Src {
		if !sameValue(x.Src[i], y.Src[i]) {
			return false
		}
	}
	return true
}
