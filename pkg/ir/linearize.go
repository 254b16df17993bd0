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
	Inner  map[*Expr]*Block // body of each reduce
	Uses   map[*Expr]int    // consumers of each expression
	Place  map[*Expr]*Expr  // owning reduce of each expression (nil: top)
	Stores []*Expr
}

// Linearize computes the evaluation structure of a kernel.
func Linearize(k *Kernel) *Program {
	p := &Program{Inner: map[*Expr]*Block{}, Uses: map[*Expr]int{}, Place: map[*Expr]*Expr{}, Stores: k.Stores}
	owner := map[*Axis]*Expr{}
	var order []*Expr
	Walk(k.Stores, func(e *Expr) {
		order = append(order, e)
		seen := map[*Expr]bool{}
		for _, s := range e.Src {
			if !seen[s] {
				p.Uses[s]++
				seen[s] = true
			}
		}
		if e.Op == OpReduce {
			for _, a := range e.Arg.(*ReduceArg).Axes {
				owner[a] = e
			}
		}
	})
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
			p.Inner[e] = &Block{Reduce: e}
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
