package ir

import (
	"fmt"
	"slices"
	"sort"
)

// The skip_zeros pass: iterations of a SUM that only add zeros.
//
// A convolution over a padded tensor (the input gradient of a stride-1
// conv is the output gradient, padded by kernel-1, convolved with the
// flipped weight) multiplies the padding's zero border like any other
// element: for the MNIST cnn's conv2 (5x5 windows, 20x20 gradient padded
// to 28x28) 31% of the multiply-adds. The lowering guards such a load by
// where it is not in the border (fuse's padZeros, on the dimensions a
// reduce loop moves along), and this pass records, for each reduce group,
// the guard's conjuncts that every member's value is zero without: the C
// renderer then writes `if (!(cond)) continue;` at the top of the group's
// loop body, and the border rows' windows run over the rows that hold
// data only. The kernel's meaning is unchanged (the skipped iterations add
// x*0; where the other factor is inf or NaN the unskipped sum would be
// NaN, as a transposed convolution that never reads the border is not).

// Skip is the skip_zeros plan: for each reduce group (keyed by its first
// loop, as Linearize groups them), conditions under which an iteration
// of its loops adds something other than zero to every member.
type Skip struct {
	Conds map[*Axis][]*Expr
}

// PlanSkip plans the skipped iterations of a kernel's SUM groups (see the
// file comment). A group whose loop stores its values for a later loop
// (the keep plan) skips nothing: those stores are part of its work.
func PlanSkip(k *Kernel, _ Target) (*Kernel, error) {
	groups, order := reduceGroups(k)
	kept := map[*Axis]bool{}
	if k.Keep != nil {
		for _, g := range k.Keep.Groups() {
			kept[groupKey(g)] = true
		}
	}
	plan := map[*Axis][]*Expr{}
	for _, key := range order {
		if kept[key] {
			continue
		}
		if conds := commonZeroConds(groups[key]); len(conds) > 0 {
			plan[key] = conds
		}
	}
	if len(plan) == 0 {
		return k, nil
	}
	nk := *k
	nk.Skip = &Skip{Conds: plan}
	return &nk, nil
}

// commonZeroConds lists the conditions (in first-found order) without
// which every member of a group accumulates zero, among those that read
// one of the group's loops (a condition of the outer loops alone would
// not vary inside the group's loop).
func commonZeroConds(members []*Expr) []*Expr {
	var conds []*Expr
	for i, m := range members {
		arg := m.Arg.(*ReduceArg)
		if arg.Op != OpSum {
			return nil
		}
		set := map[*Expr]bool{}
		zeroConds(m.Src[0], set)
		if i == 0 {
			for _, c := range orderedConds(m.Src[0]) {
				if set[c] && usesAxes(c, arg.Axes) {
					conds = append(conds, c)
				}
			}
			continue
		}
		kept := conds[:0]
		for _, c := range conds {
			if set[c] {
				kept = append(kept, c)
			}
		}
		conds = kept
	}
	return conds
}

// zeroConds adds to set the conditions without which e is zero: the
// conjuncts of the guards of the loads (and of where(c, x, 0)'s
// conditions) that e is a product of. It does not look inside another
// reduce (its loops are its own).
func zeroConds(e *Expr, set map[*Expr]bool) {
	switch e.Op {
	case OpLoad:
		if len(e.Src) > 1 {
			conjuncts(e.Src[1], set)
		}
	case OpMul:
		zeroConds(e.Src[0], set)
		zeroConds(e.Src[1], set)
	case OpCast, OpNeg:
		zeroConds(e.Src[0], set)
	case OpWhere:
		if z := e.Src[2]; z.IsConst() && z.ConstFloat() == 0 {
			conjuncts(e.Src[0], set)
			zeroConds(e.Src[1], set)
		}
	}
}

func conjuncts(c *Expr, set map[*Expr]bool) {
	if c.Op == OpAnd && c.DType == Bool {
		conjuncts(c.Src[0], set)
		conjuncts(c.Src[1], set)
		return
	}
	set[c] = true
}

// orderedConds lists the bool conditions of e in a deterministic order
// (a walk), so the rendered source does not depend on map order.
func orderedConds(e *Expr) []*Expr {
	var out []*Expr
	Walk([]*Expr{e}, func(x *Expr) {
		if x.DType == Bool && x.Op != OpAnd {
			out = append(out, x)
		}
	})
	return out
}

// verify checks the plan against the kernel: each group it names is a
// group of SUMs of the kernel, each condition is one without which every
// member adds zero, and no group whose values the keep plan stores skips.
func (s *Skip) verify(k *Kernel, in map[*Expr]bool) error {
	groups, _ := reduceGroups(k)
	for key, conds := range s.Conds {
		members := groups[key]
		if len(members) == 0 {
			return fmt.Errorf("skip_zeros: no reduce group loops over %s", key.Name())
		}
		if k.Keep != nil && slices.ContainsFunc(k.Keep.Groups(), func(g *Expr) bool { return groupKey(g) == key }) {
			return fmt.Errorf("skip_zeros: the kept group over %s skips iterations", key.Name())
		}
		for _, m := range members {
			if m.Arg.(*ReduceArg).Op != OpSum {
				return fmt.Errorf("skip_zeros: a %s group skips iterations", m.Arg.(*ReduceArg).Op)
			}
			set := map[*Expr]bool{}
			zeroConds(m.Src[0], set)
			for _, c := range conds {
				if !set[c] || !in[c] {
					return fmt.Errorf("skip_zeros: the group over %s skips where %s is false, but a member does not add zero there", key.Name(), c)
				}
			}
		}
	}
	return nil
}

// axes lists the plan's groups in loop-ID order (for dumps).
func (s *Skip) axes() []*Axis {
	var out []*Axis
	for a := range s.Conds {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// LastAxis is the position in axes of the last loop e reads (-1: none):
// where a renderer can first test a skip condition.
func LastAxis(e *Expr, axes []*Axis) int {
	last := -1
	for i, a := range axes {
		if usesVar(e, a) {
			last = i
		}
	}
	return last
}
