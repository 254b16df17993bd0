package ir

// Linearization: decide where each expression of a kernel is evaluated.
// An expression lives in the innermost reduce loop whose axes it depends
// on, or at the top (inside the global loops) when it depends on none, so
// loop-invariant work is hoisted out of reduce loops. Renderers and the GO
// interpreter both walk this structure.

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
}

// Reduces that loop over the very same axes form a group: one loop nest
// with one accumulator per member. The upcast pass makes such groups.
func groupKey(e *Expr) *Axis { return e.Arg.(*ReduceArg).Axes[0] }

// Linearize computes the evaluation structure of a kernel.
func Linearize(k *Kernel) *Program {
	p := &Program{Inner: map[*Expr]*Block{}, Uses: map[*Expr]int{}, Place: map[*Expr]*Expr{},
		Leader: map[*Expr]*Expr{}, Members: map[*Expr][]*Expr{}, Stores: k.Stores}
	// Collect the groups first, so the walk below can keep members together.
	byKey := map[*Axis][]*Expr{}
	Walk(k.Stores, func(e *Expr) {
		if e.Op == OpReduce {
			byKey[groupKey(e)] = append(byKey[groupKey(e)], e)
		}
	})
	// Topological order in which a group's members are consecutive: visiting
	// any member first visits the sources of all of them.
	var order []*Expr
	seen := map[*Expr]bool{}
	var rec func(*Expr)
	rec = func(e *Expr) {
		if seen[e] {
			return
		}
		members := []*Expr{e}
		if e.Op == OpReduce {
			members = byKey[groupKey(e)]
		}
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
	// deps: reduce axes each node depends on (those of reduces below it excluded).
	deps := map[*Expr]map[*Axis]bool{}
	for _, e := range order {
		d := map[*Axis]bool{}
		if e.Op == OpVar && e.Arg.(*Axis).Kind == AxisReduce {
			d[e.Arg.(*Axis)] = true
		}
		for _, s := range e.Src {
			for a := range deps[s] {
				d[a] = true
			}
		}
		if e.Op == OpReduce {
			for _, a := range e.Arg.(*ReduceArg).Axes {
				delete(d, a)
			}
		}
		deps[e] = d
	}
	// A reduce's depth is one more than the reduce it is placed in; nodes
	// come in topological order, so a reduce's place is known before the
	// nodes of its body... but its body comes before it. Resolve places
	// after all reduces' depths are known: iterate to a fixed point.
	for changed := true; changed; {
		changed = false
		for _, e := range order {
			var best *Expr
			for a := range deps[e] {
				if r := owner[a]; best == nil || depth[r] > depth[best] {
					best = r
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
	return p
}
