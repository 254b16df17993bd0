package ir

// The split_tails pass: a reduce that runs along a row (a softmax's max
// and sum, a layernorm's mean, a dot product along contiguous rows) is
// vectorized by UNROLL along its axis, which needs the axis divisible by
// the lanes; at 1001 or 50257 columns it ran in scalar code, one
// dependent add or max per element (a softmax over 512 rows of GPT-2's
// 50257 classes: 20 ms, against 6.3 for 50256 on the Zen 5 guest). Such a
// reduce becomes two: one over the longest prefix that 2W lanes divide,
// which the heuristic unrolls as it would any row, and one over the rest
// (fewer than 2W elements, scalar), combined as their op combines partial
// results (a float sum's order changes, as any vectorized sum's does).

// SplitTails splits the axis of each reduce that reads a row along it (a
// load at stride 1 along the reduce's one axis, none along a global axis,
// which vectors would follow instead: a product's columns), at least 4W
// long and not a multiple of W, W the target's vector width. Loop targets
// only: a grid splits a reduce across lanes (GROUP) instead.
func SplitTails(k *Kernel, t Target) (*Kernel, error) {
	if !t.Upcast || t.GPU != nil {
		return k, nil
	}
	w := t.Width()
	eligible := func(e *Expr) *Axis {
		if e.Op != OpReduce {
			return nil
		}
		axes := e.Arg.(*ReduceArg).Axes
		if len(axes) != 1 {
			return nil
		}
		a := axes[0]
		if a.Sym != nil || a.Size < 4*w || a.Size%w == 0 {
			return nil
		}
		along, across := false, false
		Walk([]*Expr{e.Src[0]}, func(x *Expr) {
			if x.Op != OpLoad {
				return
			}
			if s, ok := AxisStride(x.Src[0], a); ok && s == 1 {
				along = true
			}
			for _, g := range k.Global {
				if s, ok := AxisStride(x.Src[0], g); ok && s == 1 {
					across = true
				}
			}
		})
		if !along || across {
			return nil
		}
		return a
	}
	found := false
	Walk(k.Stores, func(e *Expr) { found = found || eligible(e) != nil })
	if !found {
		return k, nil
	}
	next := 0
	for _, a := range append(k.ReduceAxes(), k.Global...) {
		next = max(next, a.ID+1)
	}
	type halves struct{ main, tail *Axis }
	split := map[*Axis]halves{}            // an axis's two halves, shared by every reduce over it
	args := map[*ReduceArg][2]*ReduceArg{} // members of a group keep sharing their axes
	var f func(b *Builder, e *Expr) *Expr
	f = func(b *Builder, e *Expr) *Expr {
		a := eligible(e)
		if a == nil {
			return nil
		}
		h, ok := split[a]
		if !ok {
			m := a.Size - a.Size%(2*w)
			h = halves{&Axis{ID: next, Size: m, Kind: a.Kind}, &Axis{ID: next + 1, Size: a.Size - m, Kind: a.Kind}}
			next += 2
			split[a] = h
		}
		arg := e.Arg.(*ReduceArg)
		na, ok := args[arg]
		if !ok {
			na = [2]*ReduceArg{{Op: arg.Op, Axes: []*Axis{h.main}}, {Op: arg.Op, Axes: []*Axis{h.tail}}}
			args[arg] = na
		}
		// the body with a read as to, and the reduces in it split too
		body := func(to *Expr) *Expr {
			return b.Rebuild(e.Src[0], func(x *Expr) *Expr {
				if x.Op == OpVar && x.Arg.(*Axis) == a {
					return to
				}
				return f(b, x)
			}, map[*Expr]*Expr{})
		}
		main := b.Reduce(na[0], body(b.Var(h.main)))
		tail := b.Reduce(na[1], body(b.Add(b.Var(h.tail), b.Int(h.main.Size))))
		if arg.Op == OpMaxReduce {
			return b.Alu(OpMax, main, tail)
		}
		return b.Add(main, tail)
	}
	return k.rewrite(f), nil
}
