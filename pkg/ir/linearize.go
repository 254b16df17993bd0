package ir

import (
	"fmt"
	"math/bits"
	"slices"
)

// Linearization: decide where each expression of a kernel is evaluated.
// An expression lives in the innermost reduce loop whose axes it depends
// on, or at the top (inside the global loops) when it depends on none, so
// loop-invariant work is hoisted out of reduce loops. A top-level reduce
// that does not depend on the inner global loops (softmax's row maximum
// and sum in a kernel over rows and columns) is hoisted out of them too,
// with the top-level values it reads: on targets whose global axes are
// loops (C), it is computed once per row, whose elements then stay in
// cache for the column loop. Renderers and the GO interpreter both walk
// this structure.

// Block is the body of one loop level, in evaluation order.
type Block struct {
	Reduce *Expr   // the reduce that owns this block (nil: top level)
	Nodes  []*Expr // expressions evaluated here, sources first; includes nested reduces
}

// Program is a linearized kernel.
type Program struct {
	Top    *Block
	Inner  map[*Expr]*Block // body of each reduce (members of a group share one)
	Uses   map[*Expr]int    // consumers of each expression
	Place  map[*Expr]*Expr  // owning group leader of each expression (nil: top)
	Leader map[*Expr]*Expr  // each reduce's group leader
	// Members lists, for each group leader, the reduces that share its
	// loops (upcast lanes), in evaluation order; a lone reduce is its own group.
	Members map[*Expr][]*Expr
	Stores  []*Expr
	// Hoisted[d] lists top-level nodes that depend on the first d global
	// axes only and are evaluated inside those d loops, before loop d
	// opens (in evaluation order): top-level reduces that do not use the
	// inner global axes, and the top-level values they read. Innermost is
	// the rest of Top, evaluated inside all the global loops. A target
	// whose global axes are loops (C, the GO interpreter) evaluates
	// Hoisted and Innermost; one whose global axes are a grid (GPU)
	// evaluates Top, which holds both, per element.
	Hoisted   []*Block
	Innermost *Block
	// hoisted: the nodes of Hoisted; repeated: operands an op's spelling
	// writes twice (see Named).
	hoisted, repeated map[*Expr]bool
}

// Reduces that loop over the very same axes form a group: one loop nest
// with one accumulator per member. The upcast pass makes such groups.
func groupKey(e *Expr) *Axis { return e.Arg.(*ReduceArg).Axes[0] }

// reduceGroups collects k's reduce groups: their members by key, in walk
// order, and the keys in the order their first members are walked.
func reduceGroups(k *Kernel) (map[*Axis][]*Expr, []*Axis) {
	groups := map[*Axis][]*Expr{}
	var keys []*Axis
	Walk(k.Stores, func(e *Expr) {
		if e.Op == OpReduce {
			key := groupKey(e)
			if groups[key] == nil {
				keys = append(keys, key)
			}
			groups[key] = append(groups[key], e)
		}
	})
	return groups, keys
}

// Linearize computes the evaluation structure of a kernel.
func Linearize(k *Kernel) *Program {
	p := &Program{Inner: map[*Expr]*Block{}, Leader: map[*Expr]*Expr{}, Members: map[*Expr][]*Expr{}, Stores: k.Stores}
	// Collect the groups first, so the walk below can keep members together.
	byKey, _ := reduceGroups(k)
	// Topological order in which a group's members are consecutive: visiting
	// any member first visits the sources of all of them.
	var order []*Expr
	seen := map[*Expr]bool{}
	var rec func(*Expr)
	rec = func(e *Expr) {
		if seen[e] {
			return
		}
		if e.Op != OpReduce {
			seen[e] = true
			for _, s := range e.Src {
				rec(s)
			}
			order = append(order, e)
			return
		}
		members := byKey[groupKey(e)]
		for _, m := range members {
			seen[m] = true
		}
		for _, m := range members {
			for _, s := range m.Src {
				rec(s)
			}
		}
		order = append(order, members...)
	}
	for _, s := range k.Stores {
		rec(s)
	}
	// The maps over every node are sized once (the passes linearize each
	// kernel several times; growing them was most of their garbage).
	p.Uses = make(map[*Expr]int, len(order))
	p.Place = make(map[*Expr]*Expr, len(order))
	owner := map[*Axis]*Expr{}
	for _, e := range order {
		srcSeen := map[*Expr]bool{}
		for _, s := range e.Src {
			if !srcSeen[s] {
				p.Uses[s]++
				srcSeen[s] = true
			}
		}
		if e.Op == OpReduce {
			leader := byKey[groupKey(e)][0]
			p.Leader[e] = leader
			if e == leader {
				p.Members[leader] = byKey[groupKey(e)]
			}
			for _, a := range e.Arg.(*ReduceArg).Axes {
				owner[a] = leader
			}
		}
	}
	// depth of each reduce: nesting level, to find the innermost owner.
	depth := map[*Expr]int{}
	// deps: reduce axes each node depends on (those of reduces below it
	// excluded), as sets of bits that nodes with the same axes share.
	deps := make(map[*Expr]axisSet, len(order))
	axes := newAxisNumbers()
	var scratch axisSet
	for _, e := range order {
		scratch = scratch[:0]
		if e.Op == OpVar && e.Arg.(*Axis).Kind == AxisReduce {
			scratch = scratch.with(axes.of(e.Arg.(*Axis)))
		}
		for _, s := range e.Src {
			scratch = scratch.union(deps[s])
		}
		if e.Op == OpReduce {
			for _, a := range e.Arg.(*ReduceArg).Axes {
				scratch = scratch.without(axes.of(a))
			}
		}
		deps[e] = scratch.shared(e.Src, deps)
	}
	// A reduce's depth is one more than the reduce it is placed in; nodes
	// come in topological order, so a reduce's place is known before the
	// nodes of its body... but its body comes before it. Resolve places
	// after all reduces' depths are known: iterate to a fixed point.
	for changed := true; changed; {
		changed = false
		for _, e := range order {
			var best *Expr
			for i, w := range deps[e] {
				for ; w != 0; w &= w - 1 {
					a := axes.list[64*i+bits.TrailingZeros64(w)]
					if r := owner[a]; best == nil || depth[r] > depth[best] {
						best = r
					}
				}
			}
			if p.Place[e] != best {
				p.Place[e] = best
				changed = true
			}
			if e.Op == OpReduce {
				nd := 0
				if best != nil {
					nd = depth[best] + 1
				}
				if depth[e] != nd {
					depth[e] = nd
					changed = true
				}
			}
		}
	}
	p.Top = &Block{}
	for _, e := range order {
		if e.Op == OpReduce {
			leader := p.Leader[e]
			if p.Inner[leader] == nil {
				p.Inner[leader] = &Block{Reduce: leader}
			}
			p.Inner[e] = p.Inner[leader]
		}
	}
	for _, e := range order {
		if r := p.Place[e]; r != nil {
			p.Inner[r].Nodes = append(p.Inner[r].Nodes, e)
		} else {
			p.Top.Nodes = append(p.Top.Nodes, e)
		}
	}
	p.hoist(k, order)
	p.name(order)
	return p
}

// name finds the operands that an op's spelling writes twice (Named).
func (p *Program) name(order []*Expr) {
	p.repeated = map[*Expr]bool{}
	for _, e := range order {
		info := e.Op.Info()
		for i, s := range e.Src {
			if info.Repeats(i) {
				p.repeated[s] = true
			}
		}
	}
}

// Named says whether e is evaluated into a variable of its own rather
// than written inline where it is used: loads, reduces and random
// numbers; values used more than once (Uses); hoisted values, computed
// outside the loops that use them; and operands that an op's spelling
// writes twice (MAX's ((a>b)?a:b): a tree of maxes, an unrolled max
// reduce's lanes combined, would be written out 2^depth times).
func (p *Program) Named(e *Expr) bool {
	switch e.Op {
	case OpConst, OpVar, OpParam, OpStore:
		return false
	case OpLoad, OpReduce, OpRand:
		return true
	}
	return p.Uses[e] > 1 || p.hoisted[e] || p.repeated[e]
}

// hoist fills Hoisted and Innermost: the top-level reduces whose value
// depends on fewer than all global axes (the depth of the innermost one
// they use; a group's members share loops, so all are at its deepest
// member's depth), and the top-level nodes they read or that are computed
// from them alone, each at its own depth.
func (p *Program) hoist(k *Kernel, order []*Expr) {
	n := len(k.Global)
	axis := map[*Axis]int{}
	for i, a := range k.Global {
		axis[a] = i + 1
	}
	depth := map[*Expr]int{} // global loops an expression's value depends on
	for _, e := range order {
		if _, done := depth[e]; done {
			continue // a member of a group, with its group
		}
		group := []*Expr{e}
		if e.Op == OpReduce {
			group = p.Members[p.Leader[e]]
		}
		d := 0
		for _, m := range group {
			if m.Op == OpVar {
				d = max(d, axis[m.Arg.(*Axis)])
			}
			for _, s := range m.Src {
				d = max(d, depth[s])
			}
		}
		for _, m := range group {
			depth[m] = d
		}
	}
	at := map[*Expr]bool{}   // hoisted
	seen := map[*Expr]bool{} // visited: top-level nodes read inside a reduce's loop count too
	var need func(e *Expr)
	need = func(e *Expr) {
		if seen[e] {
			return
		}
		seen[e] = true
		if p.Place[e] == nil {
			at[e] = true
			if e.Op == OpReduce {
				for _, m := range p.Members[p.Leader[e]] {
					need(m)
				}
			}
		}
		for _, s := range e.Src {
			need(s)
		}
	}
	inner := make([]int64, n+1) // iterations of the loops from depth d in
	inner[n] = 1
	for d := n - 1; d >= 0; d-- {
		inner[d] = inner[d+1] * k.Global[d].Size
	}
	for _, e := range p.Top.Nodes {
		if e.Op == OpReduce && inner[depth[e]] > 1 {
			need(e)
		}
	}
	// Then what is computed from hoisted values alone (the lanes of an
	// unrolled reduce combined, softmax's 1/sum), at its own depth.
	for _, e := range p.Top.Nodes {
		if at[e] || depth[e] >= n || !e.Op.IsALU() {
			continue
		}
		for _, s := range e.Src {
			if at[s] && s.Op != OpConst && s.Op != OpVar && s.Op != OpParam {
				need(e)
				break
			}
		}
	}
	p.Hoisted = make([]*Block, n)
	for d := range p.Hoisted {
		p.Hoisted[d] = &Block{}
	}
	p.Innermost = &Block{}
	p.hoisted = map[*Expr]bool{}
	for _, e := range p.Top.Nodes {
		if d := depth[e]; at[e] && d < n {
			p.Hoisted[d].Nodes = append(p.Hoisted[d].Nodes, e)
			p.hoisted[e] = true
		} else {
			p.Innermost.Nodes = append(p.Innermost.Nodes, e)
		}
	}
}

// mayHoist says whether some reduce of k does not read the innermost
// global axis longer than 1: only such a reduce is hoisted
// (Program.Hoisted), so Verify linearizes only those kernels (a matmul's
// or a conv's reduces read every global axis, or all but upcast ones left
// of size 1; linearizing every kernel after every pass cost a fifth of
// tracing a training step).
func mayHoist(k *Kernel) bool {
	var last *Axis
	for _, a := range k.Global {
		if a.Size > 1 {
			last = a
		}
	}
	if last == nil {
		return false
	}
	uses := map[*Expr]bool{} // reads that axis
	found := false
	Walk(k.Stores, func(e *Expr) {
		u := e.Op == OpVar && e.Arg.(*Axis) == last
		for _, s := range e.Src {
			u = u || uses[s]
		}
		if u {
			uses[e] = true
		}
		found = found || e.Op == OpReduce && !u
	})
	return found
}

// checkHoisted verifies Hoisted on k: a node of Hoisted[d], and whatever
// it reads inside reduce loops, uses only the first d global axes, and
// every other top-level value it reads is evaluated before it (hoisted at
// a smaller depth, or earlier at the same one); a reduce's group is
// hoisted whole, at one depth.
func (p *Program) checkHoisted(k *Kernel) error {
	axis := map[*Axis]int{}
	for i, a := range k.Global {
		axis[a] = i
	}
	type place struct{ d, i int }
	at := map[*Expr]place{}
	for d, b := range p.Hoisted {
		for i, e := range b.Nodes {
			at[e] = place{d, i}
		}
	}
	for d, b := range p.Hoisted {
		for i, e := range b.Nodes {
			if e.Op == OpReduce {
				for _, m := range p.Members[p.Leader[e]] {
					if pm, ok := at[m]; !ok || pm.d != d {
						return fmt.Errorf("%s: reduce %s hoisted to depth %d without its group", k.Name, e, d)
					}
				}
			}
			seen := map[*Expr]bool{}
			var visit func(x *Expr) error
			visit = func(x *Expr) error {
				if seen[x] {
					return nil
				}
				seen[x] = true
				if g, ok := axis[varAxis(x)]; ok && g >= d {
					return fmt.Errorf("%s: %s hoisted out of the loop over %s, which it reads", k.Name, e, k.Global[g].Name())
				}
				if x != e && p.Place[x] == nil && x.Op != OpConst && x.Op != OpVar && x.Op != OpParam {
					px, ok := at[x]
					if !ok || px.d > d || px.d == d && px.i > i {
						return fmt.Errorf("%s: %s hoisted to depth %d reads %s, evaluated after it", k.Name, e, d, x)
					}
					return nil
				}
				for _, s := range x.Src {
					if err := visit(s); err != nil {
						return err
					}
				}
				return nil
			}
			if err := visit(e); err != nil {
				return err
			}
		}
	}
	return nil
}

// varAxis is the axis of a loop variable (nil for other expressions).
func varAxis(e *Expr) *Axis {
	if e.Op == OpVar {
		return e.Arg.(*Axis)
	}
	return nil
}

// axisNumbers numbers a kernel's reduce axes for axisSet.
type axisNumbers struct {
	index map[*Axis]int
	list  []*Axis
}

func newAxisNumbers() *axisNumbers { return &axisNumbers{index: map[*Axis]int{}} }

func (x *axisNumbers) of(a *Axis) int {
	i, ok := x.index[a]
	if !ok {
		i = len(x.list)
		x.index[a] = i
		x.list = append(x.list, a)
	}
	return i
}

// axisSet is a set of axes by their axisNumbers, as bits (trailing zero
// words trimmed, so equal sets are equal slices; nil is empty).
type axisSet []uint64

func (s axisSet) with(i int) axisSet {
	for len(s) <= i/64 {
		s = append(s, 0)
	}
	s[i/64] |= 1 << (i % 64)
	return s
}

func (s axisSet) without(i int) axisSet {
	if i/64 < len(s) {
		s[i/64] &^= 1 << (i % 64)
	}
	for len(s) > 0 && s[len(s)-1] == 0 {
		s = s[:len(s)-1]
	}
	return s
}

func (s axisSet) union(t axisSet) axisSet {
	for len(s) < len(t) {
		s = append(s, 0)
	}
	for i, w := range t {
		s[i] |= w
	}
	return s
}

// shared returns s (scratch) as a set to keep: a source's set when it is
// the same (most nodes have their sources' axes), else a copy.
func (s axisSet) shared(srcs []*Expr, deps map[*Expr]axisSet) axisSet {
	if len(s) == 0 {
		return nil
	}
	for _, src := range srcs {
		if d := deps[src]; slices.Equal(d, s) {
			return d
		}
	}
	return slices.Clone(s)
}
