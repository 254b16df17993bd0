package ir

import (
	"fmt"
	"slices"
)

// The value_loops pass (C targets). In a quantized row's reduce (a kernel
// the tables pass tabled) some short loops' variables are shift amounts,
// not only addresses: Q3_K's and Q5_K's high-bit bytes shifted by the
// sub-block's number, Q6_K's by two loops', Q2_K's 2-bit quants. gcc
// leaves such a loop rolled, so each iteration broadcasts its shift
// amount into a vector (on Intel a shuffle uop on the port the permutes
// need), shifts by a variable, and widens again the bytes the iterations
// share. The plan has the renderer ask gcc to unroll them whole (`#pragma
// GCC unroll N`): the amounts become immediates and the shared bytes one
// load; the same operations in the same order, so the same results.
// Measured on the Xeon guest, decode kernels' DEBUG=2 medians (two
// alternated pairs): Q3_K_M's 2048-row FFN pair 151-152 -> 114-122 µs,
// Q2_K's classifier 812-881 -> 646-678 µs.

// ValueLoops is the value_loops pass's plan: the loops the C compiler
// unrolls whole.
type ValueLoops struct {
	Axes []*Axis
}

// Has says whether the plan unrolls loop a.
func (v *ValueLoops) Has(a *Axis) bool { return v != nil && slices.Contains(v.Axes, a) }

// maxValueLoop is the longest loop the plan unrolls.
const maxValueLoop = 8

// PlanValueLoops is the value_loops pass (see ValueLoops).
func PlanValueLoops(k *Kernel, _ Target) (*Kernel, error) {
	if k.Tabs == nil {
		return k, nil
	}
	var axes []*Axis
	Walk(k.Stores, func(e *Expr) {
		if e.Op != OpReduce || nestedIn(k, e) {
			return
		}
		for _, a := range valueLoops(e) {
			if !slices.Contains(axes, a) {
				axes = append(axes, a)
			}
		}
	})
	if len(axes) == 0 {
		return k, nil
	}
	slices.SortFunc(axes, func(a, b *Axis) int { return a.ID - b.ID })
	nk := *k
	nk.ValueLoops = &ValueLoops{Axes: axes}
	return &nk, nil
}

// valueLoops are the loops of top-level reduce r after its first, of 2 to
// maxValueLoop static iterations, whose variable its body shifts by.
func valueLoops(r *Expr) []*Axis {
	axes := r.Arg.(*ReduceArg).Axes
	var out []*Axis
	for _, a := range axes[min(1, len(axes)):] {
		if a.Sym == nil && a.Size >= 2 && a.Size <= maxValueLoop && readAsValue(r.Src[0], a) {
			out = append(out, a)
		}
	}
	return out
}

// readAsValue says whether e shifts by an amount that reads loop a's
// variable (outside the indices of its loads). A choice by the variable
// alone (Q4_K's and IQ4_XS's low or high nibble: a compare and a select)
// is not: gcc unswitches it, and IQ4_XS at 8 lanes ran 4.29-4.39 ->
// 4.65-4.71 ms a decode step unrolled.
func readAsValue(e *Expr, a *Axis) bool {
	found := false
	WalkPre([]*Expr{e}, func(x *Expr) bool {
		switch {
		case found || x.Op == OpLoad:
			return false
		case (x.Op == OpShr || x.Op == OpShl) && usesVar(x.Src[1], a):
			found = true
		}
		return !found
	})
	return found
}

// verify checks a ValueLoops plan against its kernel: each loop is one of
// a top-level reduce's, after its first, of 2 to maxValueLoop static
// iterations, its body shifting by its variable.
func (v *ValueLoops) verify(k *Kernel) error {
	for _, a := range v.Axes {
		ok := false
		Walk(k.Stores, func(e *Expr) {
			if !ok && e.Op == OpReduce && !nestedIn(k, e) {
				ok = slices.Contains(valueLoops(e), a)
			}
		})
		if !ok {
			return fmt.Errorf("value_loops: %s is no short loop of a top-level reduce that shifts by its variable", a.Name())
		}
	}
	return nil
}
