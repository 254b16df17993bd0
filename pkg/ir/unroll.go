package ir

// Unroll is register blocking along a reduce axis: a reduce over r becomes
// u reduces over r/u (one accumulator per lane, lane l summing the
// elements r = u*r' + l), combined after the loop. When r is the
// contiguous axis of the loads (a weight gradient sums over the image
// columns; a row sum over the row), the lanes are neighbouring elements
// and the C compiler turns them into vector loads and adds. It changes the
// order of a float sum (as any vectorized or blocked reduction does): the
// result agrees with the plain loop within rounding, not bit for bit.

// UnrollAxes splits each reduce axis in plan into a loop of a.Size/plan[a]
// and plan[a] lanes. Every amount must divide its axis.
func UnrollAxes(k *Kernel, plan map[*Axis]int64) *Kernel {
	split := map[*Axis]*Axis{}
	for a, u := range plan {
		split[a] = &Axis{ID: a.ID, Size: a.Size / u, Kind: AxisReduce}
	}
	args := map[*ReduceArg]*ReduceArg{} // members of a group keep sharing their axes
	var unroll func(b *Builder, e *Expr) *Expr
	unroll = func(b *Builder, e *Expr) *Expr {
		if e.Op != OpReduce {
			return nil
		}
		arg := e.Arg.(*ReduceArg)
		var order []*Axis
		for _, a := range arg.Axes {
			if _, ok := plan[a]; ok {
				order = append(order, a)
			}
		}
		if len(order) == 0 {
			return nil
		}
		na, ok := args[arg]
		if !ok {
			na = &ReduceArg{Op: arg.Op}
			for _, a := range arg.Axes {
				if s, ok := split[a]; ok {
					na.Axes = append(na.Axes, s)
				} else {
					na.Axes = append(na.Axes, a)
				}
			}
			args[arg] = na
		}
		lanes := laneCombos(order, plan)
		parts := make([]*Expr, len(lanes))
		for i, lane := range lanes {
			lm := map[*Expr]*Expr{}
			body := b.Rebuild(e.Src[0], func(x *Expr) *Expr {
				if x.Op == OpVar {
					a := x.Arg.(*Axis)
					if _, mine := lane[a]; mine {
						return b.Add(b.Mul(b.Var(split[a]), b.Int(plan[a])), b.Int(lane[a]))
					}
				}
				if x.Op == OpReduce && !usesAnyVar(x, order) {
					// A reduce the body only reads (softmax's max inside
					// its sum) is unrolled like the same reduce elsewhere.
					return unroll(b, x)
				}
				return nil // a reduce nested in the body keeps its loops
			}, lm)
			parts[i] = b.Reduce(na, body)
		}
		combine := OpAdd
		if arg.Op == OpMaxReduce {
			combine = OpMax
		}
		// A balanced tree: lanes combine pairwise, like a vector horizontal sum.
		for len(parts) > 1 {
			var next []*Expr
			for i := 0; i+1 < len(parts); i += 2 {
				next = append(next, b.Alu(combine, parts[i], parts[i+1]))
			}
			if len(parts)%2 == 1 {
				next = append(next, parts[len(parts)-1])
			}
			parts = next
		}
		return parts[0]
	}
	return k.rewrite(unroll)
}
