package ir

import (
	"maps"
	"slices"
)

// Writing over an input. A kernel's output may take the memory of an input
// buffer that dies with it (the engine's memory plan, realize) when every
// element of that input is read before the store that overwrites it, in
// the order a target whose global axes are loops evaluates the kernel
// (C, the GO interpreter: Linearize's Hoisted and Innermost; the outermost
// global axis split across threads). A fused softmax over a prompt's
// attention scores then writes its probabilities into the scores' buffer
// instead of a second one of the same size:
//
//	for row: m = max(x[row,:]); s = sum(exp(x[row,:]-m)); for col: out[row,col] = exp(x[row,col]-m)/s
//
// reads a row in reduces evaluated before the row's first store, and at
// the column it stores. The proof is over index expressions:
//
//   - the store's index is linear in the global axes, with strides that
//     never let two elements meet (mixed radix, outermost largest);
//   - a load at the top level of the innermost loop reads at the store's
//     own index (the same expression);
//   - a load evaluated before loop d opens (in a reduce hoisted there, or
//     a value hoisted there) reads within the block of elements that the
//     first d global axes' values store to, and d >= 1 (each value of the
//     outermost axis is one thread's): those elements are stored later in
//     the same iteration, and no other iteration stores into the block;
//   - under a keep plan that keeps its values in the output (Keep, not in
//     scratch), the kept loop stores a row's elements while it runs: its
//     members read the input only at the element they store, the reduces
//     hoisted beside it that read the input run before it (they feed it),
//     and the column loop reads nothing of the input but the kept values.
//
// Several stores: only an elementwise kernel's lanes (laneRefusal). A
// prologue or tables (computed once a launch piece or a row, before the
// loops this proof reasons about) that could read the input, or a grid
// target's kernel: no.

// MayOverwrite reports whether k's store may write into the memory of
// input buffer b on a target whose global axes are loops (see above). The
// caller checks that the two buffers have the same type and size and that
// nothing reads b after k.
func MayOverwrite(k *Kernel, b int) bool { return OverwriteRefusal(k, b) == "" }

// OverwriteRefusal is why k may not write over input b ("": it may).
func OverwriteRefusal(k *Kernel, b int) string {
	if k.Padded() {
		return "a padded axis (its last block reads elements already stored)"
	}
	if len(k.Stores) > 1 {
		return laneRefusal(k, b)
	}
	switch {
	case len(k.Stores) != 1:
		return "no store"
	case len(k.Global) == 0:
		return "no global axis"
	case b <= 0 || b >= len(k.Bufs) || k.Bufs[b].Output:
		return "not an input"
	case k.Pro != nil || k.Tabs != nil:
		return "a prologue or tables"
	case k.Group != 0 || k.Vec4 != nil:
		return "a grid kernel"
	}
	st := k.Stores[0]
	if st.Arg.(int) != 0 || k.Bufs[0].DType != k.Bufs[b].DType {
		return "another type"
	}
	store, ok := linearIndex(st.Src[0])
	if !ok || len(store.rest) > 0 || !store.injective(k.Global) {
		return "the store's index is not linear with disjoint strides"
	}
	var loads []*Expr
	Walk(k.Stores, func(e *Expr) {
		if e.Op == OpLoad && e.Arg.(int) == b {
			loads = append(loads, e)
		}
	})
	if len(loads) == 0 {
		return ""
	}
	p := Linearize(k)
	// expressions compared by structure: the plans' (Keep.Index) may come
	// from another builder than the DAG's
	ib, memo := NewBuilder(), map[*Expr]*Expr{}
	same := func(x, y *Expr) bool {
		id := func(e *Expr) *Expr { return ib.Rebuild(e, func(*Expr) *Expr { return nil }, memo) }
		return x == y || id(x) == id(y)
	}
	depth := map[*Expr]int{} // hoisted top-level nodes: the loop they are evaluated before
	for d, blk := range p.Hoisted {
		for _, e := range blk.Nodes {
			depth[e] = d
		}
	}
	keep := k.Keep
	if keep != nil && keep.Scratch {
		keep = nil // the values wait in scratch: the output is written by the column loop only
	}
	var feeds map[*Expr]bool // keep: the reduce groups evaluated before the kept one (its sources)
	var inner map[*Expr]bool // keep: what the column loop evaluates (the kept value read back)
	if keep != nil {
		feeds = map[*Expr]bool{}
		for _, g := range keep.Groups() {
			Walk(p.Members[g], func(e *Expr) {
				if e.Op == OpReduce {
					feeds[p.Leader[e]] = true
				}
			})
		}
		inner = map[*Expr]bool{}
		walkPruned([]*Expr{st}, func(e *Expr) bool { return e == keep.Value || e.Op == OpReduce }, func(e *Expr) { inner[e] = true })
	}
	keptDepth := len(k.Global) - 1
	for _, l := range loads {
		// the top-level node l is evaluated with: itself, or the group of
		// the outermost reduce whose loop evaluates it
		top := l
		for p.Place[top] != nil {
			top = p.Place[top]
		}
		d, hoisted := depth[top]
		if !hoisted {
			if p.Place[l] != nil || !same(l.Src[0], st.Src[0]) {
				return "a read in the innermost loop at another index than the store's"
			}
			if keep != nil && inner[l] {
				return "a read in the column loop after the kept loop stored the row"
			}
			continue
		}
		if d == 0 {
			return "a read before the outermost loop"
		}
		if !store.holds(linearOf(l.Src[0]), d, k.Global) {
			return "a read outside the elements stored in its loop's iteration"
		}
		if keep == nil || d != keptDepth {
			continue
		}
		leader := p.Leader[top]
		switch {
		case slices.Contains(keep.Groups(), leader):
			if !readsOwnColumn(p, keep, leader, b, same) {
				return "a read in the kept loop at another index than the one it stores"
			}
		case top == l && readsAtKept(p, keep, l, same):
			// hoisted out of a kept loop of one iteration (a tail of one
			// column): read before the store its member's value waits for
		case top.Op != OpReduce || !feeds[leader]:
			return "a read that may run after the kept loop stored the row"
		}
	}
	return ""
}

// laneRefusal is OverwriteRefusal for a kernel of several stores: an
// elementwise kernel blocked in lanes (UPCAST), each store one lane, base
// + c, of one linear index, the lanes of an iteration disjoint from every
// other iteration's. Each read of b must be in the innermost loop at the
// index of a store whose value reads it: it runs before that store, and
// no other store writes that element.
func laneRefusal(k *Kernel, b int) string {
	switch {
	case len(k.Global) == 0:
		return "no global axis"
	case b <= 0 || b >= len(k.Bufs) || k.Bufs[b].Output:
		return "not an input"
	case k.Pro != nil || k.Tabs != nil || k.Keep != nil || k.Group != 0 || k.Vec4 != nil:
		return "more than one store, with a plan"
	}
	var base linear
	lo, hi := int64(0), int64(0)
	at := map[int64]bool{}
	for i, st := range k.Stores {
		if st.Arg.(int) != 0 || k.Bufs[0].DType != k.Bufs[b].DType {
			return "another type"
		}
		l, ok := linearIndex(st.Src[0])
		if !ok || len(l.rest) > 0 {
			return "a store's index is not linear"
		}
		if i == 0 {
			base, lo, hi = l, l.c, l.c
		} else if !maps.Equal(l.coef, base.coef) {
			return "stores along different strides"
		}
		if at[l.c] {
			return "two stores to one element"
		}
		at[l.c] = true
		lo, hi = min(lo, l.c), max(hi, l.c)
	}
	if !base.injectiveFrom(k.Global, hi-lo+1) {
		return "the stores' lanes overlap another iteration's"
	}
	p := Linearize(k)
	hoisted := map[*Expr]bool{}
	for _, blk := range p.Hoisted {
		for _, e := range blk.Nodes {
			hoisted[e] = true
		}
	}
	ib, memo := NewBuilder(), map[*Expr]*Expr{}
	id := func(e *Expr) *Expr { return ib.Rebuild(e, func(*Expr) *Expr { return nil }, memo) }
	why := ""
	for _, st := range k.Stores {
		Walk([]*Expr{st.Src[1]}, func(e *Expr) {
			if why != "" || e.Op != OpLoad || e.Arg.(int) != b {
				return
			}
			if hoisted[e] || p.Place[e] != nil || id(e.Src[0]) != id(st.Src[0]) {
				why = "a read of the input at another index than its lane's store"
			}
		})
	}
	return why
}

// readsOwnColumn says whether each member of the kept group led by group
// reads input b in the group's loop (or one nested in it) only at the
// element it stores (Keep.Index): members run in order in one iteration,
// each storing after it computes, and the groups' columns are disjoint.
func readsOwnColumn(p *Program, keep *Keep, group *Expr, b int, same func(x, y *Expr) bool) bool {
	inLoop := func(e *Expr) bool {
		for l := p.Place[e]; l != nil; l = p.Place[l] {
			if l == group {
				return true
			}
		}
		return false
	}
	ok := true
	for _, m := range p.Members[group] {
		Walk(m.Src, func(e *Expr) {
			if e.Op == OpLoad && e.Arg.(int) == b && inLoop(e) && !same(e.Src[0], keep.Index[m]) {
				ok = false
			}
		})
	}
	return ok
}

// readsAtKept says whether load l is read by a member of a kept group at
// the element the member stores (Keep.Index).
func readsAtKept(p *Program, keep *Keep, l *Expr, same func(x, y *Expr) bool) bool {
	for _, g := range keep.Groups() {
		for _, m := range p.Members[g] {
			reads := false
			Walk(m.Src, func(e *Expr) { reads = reads || e == l })
			if reads && same(l.Src[0], keep.Index[m]) {
				return true
			}
		}
	}
	return false
}

// linear is an index expression as sum(coef[a]*a) + c + sum(rest), rest
// being the terms that are not multiples of an axis.
type linear struct {
	coef map[*Axis]int64
	c    int64
	rest []*Expr
}

// linearIndex decomposes e; ok is false where an opaque term is scaled
// (its bounds would not be its contribution's) or is not an integer.
func linearIndex(e *Expr) (l linear, ok bool) {
	l = linear{coef: map[*Axis]int64{}}
	ok = true
	var add func(e *Expr, f int64)
	add = func(e *Expr, f int64) {
		switch e.Op {
		case OpConst:
			v, _ := e.ConstInt()
			l.c += f * v
			return
		case OpVar:
			l.coef[e.Arg.(*Axis)] += f
			return
		case OpAdd:
			add(e.Src[0], f)
			add(e.Src[1], f)
			return
		case OpSub:
			add(e.Src[0], f)
			add(e.Src[1], -f)
			return
		case OpMul:
			if v, isC := e.Src[1].ConstInt(); isC {
				add(e.Src[0], f*v)
				return
			}
			if v, isC := e.Src[0].ConstInt(); isC {
				add(e.Src[1], f*v)
				return
			}
		}
		if f != 1 || !e.DType.IsInt() {
			ok = false
			return
		}
		l.rest = append(l.rest, e)
	}
	add(e, 1)
	return l, ok
}

// linearOf is linearIndex, with coef nil where e is not linear.
func linearOf(e *Expr) linear {
	l, ok := linearIndex(e)
	if !ok {
		return linear{}
	}
	return l
}

// injective says whether the linear index (no opaque terms) takes a
// different value at every point of the global axes: strides positive,
// each at least the extent of the axes inside it.
func (l linear) injective(global []*Axis) bool { return l.injectiveFrom(global, 1) }

// injectiveFrom is injective for a store of span consecutive elements at
// each index (lanes base+c, c in a range of span).
func (l linear) injectiveFrom(global []*Axis, span int64) bool {
	for i := len(global) - 1; i >= 0; i-- {
		a := global[i]
		c := l.coef[a]
		if a.Size > 1 && c < span {
			return false
		}
		span = max(span, c*(a.Size-1)+span)
	}
	return len(l.coef) == countAxes(l.coef, global)
}

// countAxes is how many of coef's axes are global ones.
func countAxes(coef map[*Axis]int64, global []*Axis) int {
	n := 0
	for _, a := range global {
		if _, ok := coef[a]; ok {
			n++
		}
	}
	return n
}

// holds says whether index r, read before global loop d opens, reads only
// elements that the store (l, injective) writes at the same values of the
// first d global axes: the same strides on those axes, the rest of r
// within the range of the rest of l. (The block of one prefix is then
// disjoint from every other's: l is injective with strides outermost
// largest.)
func (l linear) holds(r linear, d int, global []*Axis) bool {
	if r.coef == nil {
		return false
	}
	prefix := map[*Axis]bool{}
	for _, a := range global[:d] {
		prefix[a] = true
		if r.coef[a] != l.coef[a] {
			return false
		}
	}
	lo, hi := l.c, l.c // the store's range over the axes from d in
	for _, a := range global[d:] {
		lo, hi = spread(lo, hi, l.coef[a], 0, a.Size-1)
	}
	rlo, rhi := r.c, r.c
	for a, c := range r.coef {
		if prefix[a] {
			continue
		}
		if a.Kind == AxisGlobal {
			return false // evaluated before loop d: cannot use an inner global axis
		}
		rlo, rhi = spread(rlo, rhi, c, 0, a.Size-1)
	}
	for _, t := range r.rest {
		if usesAny(t, prefix) {
			return false
		}
		rlo, rhi = rlo+t.Min, rhi+t.Max
	}
	return lo <= rlo && rhi <= hi
}

// spread widens [lo, hi] by c*x for x in [xlo, xhi].
func spread(lo, hi, c, xlo, xhi int64) (int64, int64) {
	a, b := c*xlo, c*xhi
	return lo + min(a, b), hi + max(a, b)
}

// usesAny says whether e reads one of the axes.
func usesAny(e *Expr, axes map[*Axis]bool) bool {
	found := false
	Walk([]*Expr{e}, func(x *Expr) {
		if x.Op == OpVar && axes[x.Arg.(*Axis)] {
			found = true
		}
	})
	return found
}
