package ir

import (
	"fmt"
	"maps"
	"sort"
	"strings"
)

// The keep pass (C targets): values a row kernel's reduce accumulates and
// its store computes again. A fused softmax is
//
//	for row: m = max(x[row,:]); s = sum(exp(x[row,:]-m)); for col: out[row,col] = exp(x[row,col]-m) * (1/s)
//
// so every element's exp is computed twice: once in the sum's loop, once
// in the column loop, and the exp (~25 vector instructions) is what the
// kernel's time is. When the column loop's exp(x[row,col]-m) is, column by
// column, exactly the value the sum's loop accumulates, the sum's loop
// also stores each value into the output row (which the row's own store
// overwrites a moment later, so nothing else can see it), and the column
// loop reads it back from cache:
//
//	for row: m = ...; s = 0; for r: { e = exp(x[row,r]-m); out[row,r] = e; s += e }; for col: out[row,col] = out[row,col] * (1/s)
//
// The plan (Kernel.Keep) is data over the scalar DAG, which stays the
// kernel's meaning (like the simd pass's): the GO interpreter computes the
// values twice, Verify re-proves the plan (each member's value is the kept
// value at its column, the members cover every column of the row once,
// the store is the buffer's only one), and the C renderer prints it.

// Keep is the keep pass's plan.
type Keep struct {
	Store  *Expr // the store whose buffer holds the kept values, read back at its index
	Value  *Expr // the store's subexpression (of the innermost global axis) read back instead of computed
	Leader *Expr // the SUM group whose loop stores its members' values
	// Tail is the SUM group over the row's last columns where split_tails
	// split the sum (50257 = 1570*32 + 17 columns): its loop stores the
	// values of the columns past the leader's. Nil when the leader's
	// members cover the row.
	Tail *Expr
	// Col is the member's column (of the leader's or the tail's): Value
	// with the innermost global axis replaced by Col[m] is m's
	// accumulated value. Index[m] is the store's index at that column,
	// where m's value is stored.
	Col, Index map[*Expr]*Expr
	// Next is, for the loads of the members' values that read the
	// outermost global axis (the row) at a constant stride, that stride:
	// the kept loop prefetches the next row's elements. The loop is the
	// row's compute-heavy pass over data in cache, so memory is otherwise
	// idle during it, and the next row's first pass would wait for it.
	// A hint only (no value depends on it; an x86 prefetch never faults).
	Next map[*Expr]int64
	// Far is the rows ahead (0: none, else at least 2) that the Next
	// loads are also prefetched into L2 alone (Target.FarPrefetch bytes
	// ahead): the next row's prefetches into L1 are as many as the
	// core's line fill buffers allow, and the rows behind it stream in
	// beside them. softmax_4096's kernel in a C harness on the Xeon guest
	// (two threads, its input from memory in huge pages; a streamed copy
	// of the rows 2.9 ms): 4.3-4.9 ms, 3.6-4.2 with the rows 2 ahead in
	// L2, 3.4-4.3 with 4, 3.3-3.5 with 8 (128 KiB); the L2 prefetch
	// alone, 2 ahead, 4.4-4.5.
	Far int64
	// Scratch: the values are kept in a row of scratch (the C renderer's
	// tg_keep, one float32 per column, at Col) instead of the output
	// buffer, and the column loop reads them back from there. A store
	// to an output line in no cache reads the line from memory first;
	// with the values in scratch the output is written once, by the
	// column loop, which stream_stores then writes around the caches in
	// whole lines (Stream.Cols): softmax_4096 moved 3 x 64 MiB for the 2
	// it needs. Chosen where that streaming will happen (keepScratch).
	Scratch bool
}

// maxScratch is the largest row of scratch (bytes) a keep plan takes: a
// row of the input and its scratch stay in L1 (48 KiB on Zen 5, 32 on
// Zen 4, the smallest L1d tgc meets: half of it).
const maxScratch = 16 << 10

// Groups are the SUM groups whose loops store the kept values: the
// leader's, then the tail's where there is one.
func (kp *Keep) Groups() []*Expr {
	if kp.Tail != nil {
		return []*Expr{kp.Leader, kp.Tail}
	}
	return []*Expr{kp.Leader}
}

// keepScratch says whether a keep plan for store st keeps its values in
// scratch: where its output is one stream_stores writes around the caches
// and at least the whole L3, as elementwise outputs are streamed
// (streamLines: a smaller one is read back from the L3 by its consumer),
// its column loop can run in whole aligned lines (lineCols), and the row
// fits maxScratch.
func keepScratch(k *Kernel, t Target, st *Expr) bool {
	col := k.Global[len(k.Global)-1]
	return col.Size*4 <= maxScratch && streamLines(k, t, st.Arg.(int), readBufs(k)) && lineCols(k, st)
}

// keepCandidates are the subexpressions of a store's value that may be
// kept, the largest first: top-level (not inside a reduce or a load's
// index), of the column, float32, and worth keeping (a transcendental or
// a division in them: recomputed, they cost more than reading back). One
// walk marks which nodes read the column and which are worth it (a walk
// per node was quadratic in the size of a row's sum).
func keepCandidates(val *Expr, col *Axis) []*Expr {
	usesCol, worth := map[*Expr]bool{}, map[*Expr]bool{}
	Walk([]*Expr{val}, func(x *Expr) {
		u := x.Op == OpVar && x.Arg.(*Axis) == col
		w := false
		switch x.Op {
		case OpExp2, OpLog2, OpSin, OpSqrt, OpRecip, OpDiv:
			w = x.DType.IsFloat()
		}
		for _, s := range x.Src {
			u, w = u || usesCol[s], w || worth[s]
		}
		if u {
			usesCol[x] = true
		}
		if w {
			worth[x] = true
		}
	})
	var cands []*Expr
	WalkPre([]*Expr{val}, func(e *Expr) bool {
		if e.Op == OpReduce || e.Op == OpLoad || !usesCol[e] {
			return false
		}
		if e.DType == Float32 && worth[e] {
			cands = append(cands, e)
		}
		return true
	})
	return cands
}

// PlanKeep is the keep pass: it finds one value to keep (Kernel.Keep;
// none: k unchanged).
func PlanKeep(k *Kernel, t Target) (*Kernel, error) {
	if len(k.Global) == 0 || !mayHoist(k) {
		return k, nil
	}
	if !anyKeepCandidate(k) {
		return k, nil // a matrix-vector product's rows: nothing worth keeping
	}
	nk := Simplify(k) // expressions the plan builds live in the kernel's own (fresh) builder
	p := Linearize(nk)
	col := nk.Global[len(nk.Global)-1]
	var leaders []*Expr
	for _, e := range p.Hoisted[len(nk.Global)-1].Nodes {
		if e.Op == OpReduce && p.Leader[e] == e && e.Arg.(*ReduceArg).Op == OpSum {
			leaders = append(leaders, e)
		}
	}
	if len(leaders) == 0 || col.Size < 2 {
		return k, nil
	}
	// What reads the column: the rest of a candidate is its own
	// substitution (the builder interns), not rebuilt for every lane.
	usesCol := readersOf(nk.Stores, col)
	for _, st := range nk.Stores {
		if !keepStore(nk, st) {
			continue
		}
		for _, v := range keepCandidates(st.Src[1], col) {
			for _, l := range leaders {
				if plan := matchKeep(nk, nk.B, st, v, l, leaders, p.Members, col, usesCol); plan != nil && readsOnlyKept(st, v) {
					plan.Scratch = plan.Tail == nil && keepScratch(nk, t, st)
					for ld, s := range plan.Next {
						if t.FarPrefetch > 0 { // rows that far ahead into L2 too
							plan.Far = max(plan.Far, 2, t.FarPrefetch/(s*int64(ld.DType.Size())))
						}
					}
					nk.Keep = plan
					return nk, nil
				}
			}
		}
	}
	return k, nil
}

// anyKeepCandidate says whether some store of k may have a value to keep
// (keepCandidates), before PlanKeep rebuilds the kernel to plan one.
func anyKeepCandidate(k *Kernel) bool {
	col := k.Global[len(k.Global)-1]
	for _, st := range k.Stores {
		if keepStore(k, st) && len(keepCandidates(st.Src[1], col)) > 0 {
			return true
		}
	}
	return false
}

// keepStore: a float32 store that is its buffer's only one.
func keepStore(k *Kernel, st *Expr) bool {
	if st.Op != OpStore || st.DType != Float32 || k.Bufs[st.Arg.(int)].DType != Float32 {
		return false
	}
	for _, o := range k.Stores {
		if o != st && o.Arg == st.Arg {
			return false
		}
	}
	return true
}

// readsOnlyKept: the store's value, its kept value read back, reads no
// buffer in the column loop. An in-place assign may hand the kernel its
// output as an input too (read elementwise at the stored index), which the
// reduce's stores would have overwritten.
func readsOnlyKept(st, v *Expr) bool {
	ok := true
	WalkPre([]*Expr{st.Src[1]}, func(e *Expr) bool {
		if e == v || e.Op == OpReduce {
			return false
		}
		ok = ok && e.Op != OpLoad
		return true
	})
	return ok
}

// matchKeep finds each member's column: the members of an unrolled SUM
// over r' (r = U*r' + lane) compute v at columns U*r' + lane, one lane
// each, and cover the column axis once (U*size(r') = size(col)), or its
// first columns when another of the row's SUM groups (the tail
// split_tails made) covers the rest. Nil when they do not.
func matchKeep(k *Kernel, b *Builder, st, v, leader *Expr, leaders []*Expr, members map[*Expr][]*Expr, col *Axis, usesCol map[*Expr]bool) *Keep {
	plan := &Keep{Store: st, Value: v, Leader: leader}
	var n int64
	if plan.Col, plan.Index, n = matchGroup(b, st, v, leader, members[leader], col, 0, usesCol); n == 0 {
		return nil
	}
	for _, tail := range leaders {
		if n == col.Size {
			break
		}
		if tail == leader {
			continue
		}
		if cols, idx, nt := matchGroup(b, st, v, tail, members[tail], col, n, usesCol); nt > 0 && n+nt == col.Size {
			maps.Copy(plan.Col, cols)
			maps.Copy(plan.Index, idx)
			plan.Tail, n = tail, col.Size
		}
	}
	if n != col.Size {
		return nil
	}
	plan.Next = map[*Expr]int64{}
	if row := k.Global[0]; row != col {
		for _, m := range members[leader] {
			for _, ld := range KeptLoads(m) {
				if s, ok := AxisStride(ld.Src[0], row); ok && s > 0 {
					plan.Next[ld] = s
				}
			}
		}
	}
	return plan
}

// matchGroup finds the columns of a SUM group's members when they
// compute v at columns off + U*r' + lane (U members over r', one lane
// each): each member's column and the store's index there, and the
// columns they cover (U*size(r'); 0 when they do not).
func matchGroup(b *Builder, st, v, leader *Expr, members []*Expr, col *Axis, off int64, usesCol map[*Expr]bool) (cols, idx map[*Expr]*Expr, covered int64) {
	axes := leader.Arg.(*ReduceArg).Axes
	u := int64(len(members))
	if len(axes) != 1 || off+axes[0].Size*u > col.Size {
		return nil, nil, 0
	}
	r := b.Var(axes[0])
	cols, idx = map[*Expr]*Expr{}, map[*Expr]*Expr{}
	taken := make([]bool, u)
	// v at each lane's column, built once (the builder interns: the same
	// expression each time; a member that is not lane i tries every lane).
	atLane := make([]*Expr, u)
	for i, m := range members {
		found := false
		// Unroll makes lane i the i'th member; any lane is proved below.
		for _, lane := range append([]int64{int64(i)}, lanesBut(u, int64(i))...) {
			if taken[lane] {
				continue
			}
			c := b.Add(b.Mul(r, b.Int(u)), b.Int(off+lane))
			if atLane[lane] == nil {
				atLane[lane] = substVarIn(b, v, col, c, usesCol)
			}
			if atLane[lane] == m.Src[0] {
				taken[lane], found = true, true
				cols[m] = c
				idx[m] = substVarIn(b, st.Src[0], col, c, usesCol)
				break
			}
		}
		if !found {
			return nil, nil, 0
		}
	}
	return cols, idx, axes[0].Size * u
}

// KeptLoads are the unguarded loads a reduce member's loop reads (not
// those of reduces its value reads, evaluated before the loop).
func KeptLoads(m *Expr) []*Expr {
	var lds []*Expr
	WalkPre([]*Expr{m.Src[0]}, func(e *Expr) bool {
		if e.Op == OpLoad && len(e.Src) == 1 {
			lds = append(lds, e)
		}
		return e.Op != OpReduce
	})
	return lds
}

// AxisStride is the coefficient of axis a's variable in idx when idx is
// linear in it (a read nowhere else in idx).
func AxisStride(idx *Expr, a *Axis) (int64, bool) {
	ts, _ := normalize(addTerms(nil, idx, 1))
	var s int64
	for _, t := range ts {
		switch {
		case t.e != nil && t.e.Op == OpVar && t.e.Arg.(*Axis) == a:
			s += t.k
		case t.e != nil && usesVar(t.e, a):
			return 0, false
		}
	}
	return s, s != 0
}

func lanesBut(u, skip int64) []int64 {
	var ls []int64
	for l := int64(0); l < u; l++ {
		if l != skip {
			ls = append(ls, l)
		}
	}
	return ls
}

// substVar is e with axis a's variable replaced by x, built (and so
// simplified and interned) by b.
func substVar(b *Builder, e *Expr, a *Axis, x *Expr) *Expr {
	return b.Rebuild(e, func(y *Expr) *Expr {
		if y.Op == OpVar && y.Arg.(*Axis) == a {
			return x
		}
		return nil
	}, map[*Expr]*Expr{})
}

// readersOf marks the expressions under roots that read a's variable.
func readersOf(roots []*Expr, a *Axis) map[*Expr]bool {
	uses := map[*Expr]bool{}
	Walk(roots, func(x *Expr) {
		u := x.Op == OpVar && x.Arg.(*Axis) == a
		for _, s := range x.Src {
			u = u || uses[s]
		}
		if u {
			uses[x] = true
		}
	})
	return uses
}

// substVarIn is substVar for e of b's own kernel, where uses says which
// of its expressions read a's variable: the others are kept as they are
// (rebuilt by b they would come out the same, interned).
func substVarIn(b *Builder, e *Expr, a *Axis, x *Expr, uses map[*Expr]bool) *Expr {
	return b.Rebuild(e, func(y *Expr) *Expr {
		switch {
		case !uses[y]:
			return y
		case y.Op == OpVar && y.Arg.(*Axis) == a:
			return x
		}
		return nil
	}, map[*Expr]*Expr{})
}

// verify re-proves a Keep plan on its kernel, in a fresh builder (Verify
// must not grow the kernel's).
func (kp *Keep) verify(k *Kernel, in map[*Expr]bool) error {
	st, v, l := kp.Store, kp.Value, kp.Leader
	if !in[st] || !in[v] || !in[l] || !keepStore(k, st) {
		return fmt.Errorf("keep: the store is not the only float32 store of its buffer in the kernel")
	}
	if !readsOnlyKept(st, v) {
		return fmt.Errorf("keep: the store reads buffers besides the kept value")
	}
	found := false
	Walk([]*Expr{st.Src[1]}, func(e *Expr) { found = found || e == v })
	if !found {
		return fmt.Errorf("keep: the kept value is not the store's")
	}
	p := Linearize(k)
	n := len(k.Global)
	col := k.Global[n-1]
	hoisted := map[*Expr]bool{}
	for _, e := range p.Hoisted[n-1].Nodes {
		hoisted[e] = true
	}
	for _, e := range p.Innermost.Nodes {
		if e == l || e == kp.Tail {
			return fmt.Errorf("keep: the reduce is evaluated in the column loop")
		}
	}
	if kp.Tail != nil && (!in[kp.Tail] || kp.Tail == l) {
		return fmt.Errorf("keep: the tail is not another group of the kernel")
	}
	total := 0
	for _, g := range kp.Groups() {
		if !hoisted[g] || p.Leader[g] != g || g.Arg.(*ReduceArg).Op != OpSum {
			return fmt.Errorf("keep: %s is not a SUM evaluated before the column loop", g)
		}
		total += len(p.Members[g])
	}
	if len(kp.Col) != total || len(kp.Index) != total {
		return fmt.Errorf("keep: %d columns and %d indices for %d members", len(kp.Col), len(kp.Index), total)
	}
	b := NewBuilder()
	memo := map[*Expr]*Expr{}
	id := func(e *Expr) *Expr { return b.Rebuild(e, func(*Expr) *Expr { return nil }, memo) }
	covered := int64(0) // the columns the groups before this one keep
	for _, g := range kp.Groups() {
		members := p.Members[g]
		axes := g.Arg.(*ReduceArg).Axes
		u := int64(len(members))
		if len(axes) != 1 || covered+axes[0].Size*u > col.Size {
			return fmt.Errorf("keep: %d members of a loop of %d from column %d pass %d columns", u, axes[0].Size, covered, col.Size)
		}
		lanes := map[int64]bool{}
		for _, m := range members {
			c := kp.Col[m]
			if c == nil || kp.Index[m] == nil {
				return fmt.Errorf("keep: member %s has no column", m)
			}
			// The column is U*r + the columns before + a lane, each lane
			// once (r is gone from it where its loop is one iteration: a
			// tail of one column).
			ts, k0 := normalize(addTerms(nil, c, 1))
			lane := k0 - covered
			onR := len(ts) == 1 && ts[0].e.Op == OpVar && ts[0].e.Arg.(*Axis) == axes[0] && ts[0].k == u || len(ts) == 0 && axes[0].Size == 1
			if !onR || lane < 0 || lane >= u || lanes[lane] {
				return fmt.Errorf("keep: column %s of member %s is not %d*%s + %d + a lane of its own", c, m, u, axes[0].Name(), covered)
			}
			lanes[lane] = true
			cb := id(c)
			if substVar(b, id(v), col, cb) != id(m.Src[0]) {
				return fmt.Errorf("keep: member %s does not accumulate the kept value at column %s", m, c)
			}
			if substVar(b, id(st.Src[0]), col, cb) != id(kp.Index[m]) {
				return fmt.Errorf("keep: member %s stores at %s, not at the store's index at column %s", m, kp.Index[m], c)
			}
			if err := k.checkIndex(&Expr{Op: OpStore, Arg: st.Arg, Src: []*Expr{kp.Index[m], m.Src[0]}}); err != nil {
				return err
			}
		}
		covered += axes[0].Size * u
	}
	if covered != col.Size {
		return fmt.Errorf("keep: the kept loops cover %d of %d columns", covered, col.Size)
	}
	if kp.Far < 0 || kp.Far == 1 || kp.Far > 0 && len(kp.Next) == 0 {
		return fmt.Errorf("keep: prefetch %d rows ahead", kp.Far)
	}
	for ld, s := range kp.Next {
		if !in[ld] {
			return fmt.Errorf("keep: prefetch of a load not in the kernel")
		}
		if got, ok := AxisStride(ld.Src[0], k.Global[0]); !ok || got != s {
			return fmt.Errorf("keep: prefetch of %s one row (%d) ahead, but it reads the row at stride %d", ld, s, got)
		}
	}
	if kp.Scratch && (col.Size*4 > maxScratch || kp.Tail != nil) {
		return fmt.Errorf("keep: a scratch row of %d floats (more than %d bytes, or with a tail)", col.Size, maxScratch)
	}
	// Vector accumulators store vectors: their lanes' indices (and, in
	// scratch, their columns) are contiguous.
	if k.SIMD != nil {
		for _, ms := range k.SIMD.Accs {
			if _, ok := kp.Index[ms[0]]; !ok {
				continue
			}
			for i, m := range ms {
				if idx, ok := kp.Index[m]; !ok || !contiguous(kp.Index[ms[0]], idx, int64(i)) {
					return fmt.Errorf("keep: the vector accumulator of %s stores at indices that are not contiguous", ms[0])
				}
				if kp.Scratch && !contiguous(kp.Col[ms[0]], kp.Col[m], int64(i)) {
					return fmt.Errorf("keep: the vector accumulator of %s keeps columns that are not contiguous", ms[0])
				}
			}
		}
	}
	return nil
}

// dump prints the plan for Kernel.Dump.
func (kp *Keep) dump(names map[*Expr]string) string {
	next := ""
	if len(kp.Next) > 0 {
		strides := map[int64]bool{}
		for _, s := range kp.Next {
			strides[s] = true
		}
		var ss []string
		for s := range strides {
			ss = append(ss, fmt.Sprint(s))
		}
		sort.Strings(ss)
		next = fmt.Sprintf(", prefetching its %d loads one row (%s) ahead", len(kp.Next), strings.Join(ss, ", "))
	}
	where := fmt.Sprintf("buf%d", kp.Store.Arg)
	if kp.Scratch {
		where = "a scratch row"
	}
	by := fmt.Sprintf("the %d members of %s (columns %d*%s + lane)", len(kp.Col), names[kp.Leader], len(kp.Col), kp.Leader.Arg.(*ReduceArg).Axes[0].Name())
	if kp.Tail != nil {
		by = fmt.Sprintf("the %d members of %s and of its tail %s", len(kp.Col), names[kp.Leader], names[kp.Tail])
	}
	return fmt.Sprintf("  keep %s in %s, stored by %s%s\n", names[kp.Value], where, by, next)
}
