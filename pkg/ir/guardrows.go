package ir

import (
	"fmt"
	"slices"
)

// The row_guards pass: guarded loads whose guard is the same all along a
// reduce's innermost loop.
//
// A convolution reads its padded input under the padding's row guard
// (fuse's padZeros: a window's row in the zero border) and its register
// lanes are output pixels of different rows, so each lane's load keeps a
// guard of its own (skip_zeros takes only the guards all members share).
// In C each is a branch around a scalar load inside the innermost loop,
// and gcc keeps their indices and conditions on the stack: a 3x3 conv of
// ResNet-50 (8 pixels x 32 channels, 16 FMAs and 8 guarded loads per
// iteration) ran at 68 GFLOP/s on one Zen 4 core against 98 without the
// branches. The guard reads only the loops outside the innermost one (the
// window's row), and the index moves along it by an offset that does not
// depend on anything else (the window's columns and channels). So the C
// renderer chooses a row pointer once before that loop: the buffer at the
// index's part that does not move where the guard holds, a row of zeros
// where it does not; the loop reads row[offset] with no test. Where the
// guard holds that is the same element; where it does not, a zero, as the
// guarded load's value is: the kernel's meaning is unchanged whatever the
// buffer holds, and nothing outside the buffer is read.

// Rows is the row_guards plan: the loads read through a row pointer.
type Rows struct {
	Loads []RowLoad
	// Zeros is the length of the row of zeros the renderer declares: every
	// offset read, plus a vector's lanes after it.
	Zeros int64
}

// RowLoad is a guarded float32 load inside a reduce group's innermost loop
// Axis, whose guard does not read Axis and whose index is Base + Off,
// Base free of Axis and Off a non-negative offset read from Axis alone.
type RowLoad struct {
	Load      *Expr
	Axis      *Axis
	Base, Off *Expr
}

// rowZerosMax bounds the row of zeros (float32s): a few KiB, in L1.
const rowZerosMax = 4096

// rowVecSlack is the lanes a vector load may read after a lane's offset
// (the widest SIMD vector of bytes).
const rowVecSlack = 64

// PlanRows plans the loads read through row pointers (see the file
// comment). A kept group's loop (the keep plan) is left alone, and so is
// a load whose guard the group's skip plan tests (it reads plainly).
func PlanRows(k *Kernel, _ Target) (*Kernel, error) {
	groups, order := reduceGroups(k)
	var kept *Axis
	if k.Keep != nil {
		kept = groupKey(k.Keep.Leader)
	}
	var loads []RowLoad
	found := map[*Expr]int{}
	for _, key := range order {
		if key == kept {
			continue
		}
		axes := groups[key][0].Arg.(*ReduceArg).Axes
		last := axes[len(axes)-1]
		var body []*Expr
		for _, m := range groups[key] {
			body = append(body, m.Src[0])
		}
		held := map[*Expr]bool{}
		if k.Skip != nil {
			for _, c := range k.Skip.Conds[key] {
				held[c] = true
			}
		}
		walkOutsideReduces(body, func(e *Expr) {
			if e.Op != OpLoad {
				return
			}
			found[e]++
			if len(e.Src) > 1 && allHeld(e.Src[1], held) {
				return // the skip plan tests its guard: read as it is
			}
			if rl, ok := rowLoad(k.B, e, last); ok {
				loads = append(loads, rl)
			}
		})
	}
	// A load reached from two groups is left as it is.
	loads = slices.DeleteFunc(loads, func(rl RowLoad) bool { return found[rl.Load] > 1 })
	if len(loads) == 0 {
		return k, nil
	}
	var zeros int64
	for _, rl := range loads {
		zeros = max(zeros, rl.Off.Max+rowVecSlack)
	}
	nk := *k
	nk.Rows = &Rows{Loads: loads, Zeros: zeros}
	return &nk, nil
}

// allHeld says whether every conjunct of a guard is one of the held
// conditions (a skip plan's, which the renderer tests before the loads).
func allHeld(g *Expr, held map[*Expr]bool) bool {
	if g.Op == OpAnd && g.DType == Bool {
		return allHeld(g.Src[0], held) && allHeld(g.Src[1], held)
	}
	return held[g]
}

// walkOutsideReduces visits the expressions of roots in walk order, not
// entering reduces (a nested reduce's body is its own group's).
func walkOutsideReduces(roots []*Expr, visit func(*Expr)) {
	walkPruned(roots, func(e *Expr) bool { return e.Op == OpReduce }, visit)
}

// rowLoad splits a guarded float32 load read along the loop a into the
// row it reads (Base) and its offset along a (Off), when the guard and
// Base do not read a, are index arithmetic (no loads or reduces), and Off
// reads only a, is never negative and is short enough for the row of
// zeros.
func rowLoad(b *Builder, e *Expr, a *Axis) (RowLoad, bool) {
	if e.Op != OpLoad || len(e.Src) < 2 || e.DType != Float32 || !usesVar(e.Src[0], a) {
		return RowLoad{}, false
	}
	guard := e.Src[1]
	if usesVar(guard, a) || !indexMath(guard) || !indexMath(e.Src[0]) {
		return RowLoad{}, false
	}
	ts, c := normalize(addTerms(nil, e.Src[0], 1))
	base, off := b.Int(c), b.Int(0)
	for _, t := range ts {
		x := b.Mul(t.e, b.Int(t.k))
		switch {
		case !usesVar(t.e, a):
			base = b.Add(base, x)
		case onlyVar(t.e, a):
			off = b.Add(off, x)
		default:
			return RowLoad{}, false // a term mixes a with other loops
		}
	}
	if off.Min < 0 || off.Max+rowVecSlack > rowZerosMax {
		return RowLoad{}, false
	}
	got, gc := normalize(addTerms(addTerms(nil, base, 1), off, 1))
	if !sameTerms(ts, c, got, gc) || usesVar(base, a) || !onlyVar(off, a) {
		return RowLoad{}, false // the builder did not keep the split
	}
	return RowLoad{Load: e, Axis: a, Base: base, Off: off}, true
}

// indexMath says whether e is computed from loop variables, parameters
// and constants alone (what the renderer may evaluate before a loop).
func indexMath(e *Expr) bool {
	ok := true
	Walk([]*Expr{e}, func(x *Expr) {
		if x.Op == OpLoad || x.Op == OpReduce || x.Op == OpRand {
			ok = false
		}
	})
	return ok
}

// onlyVar says whether the only loop variable e reads is a.
func onlyVar(e *Expr, a *Axis) bool {
	ok := true
	Walk([]*Expr{e}, func(x *Expr) {
		if x.Op == OpVar && x.Arg.(*Axis) != a || x.Op == OpParam || x.Op == OpLoad || x.Op == OpReduce {
			ok = false
		}
	})
	return ok
}

// verify checks a Rows plan against its kernel: each load is in the
// kernel, guarded, float32, inside a reduce group whose innermost loop is
// its Axis; its guard and Base do not read Axis; Off reads Axis alone,
// within the row of zeros; and Base + Off has the index's linear terms.
func (p *Rows) verify(k *Kernel, in map[*Expr]bool) error {
	groups, _ := reduceGroups(k)
	inner := map[*Axis]bool{}
	for _, ms := range groups {
		axes := ms[0].Arg.(*ReduceArg).Axes
		inner[axes[len(axes)-1]] = true
	}
	seen := map[*Expr]bool{}
	for _, rl := range p.Loads {
		e := rl.Load
		switch {
		case !in[e] || e.Op != OpLoad || len(e.Src) < 2 || e.DType != Float32:
			return fmt.Errorf("row_guards: %s is not a guarded float32 load of the kernel", e)
		case seen[e]:
			return fmt.Errorf("row_guards: %s planned twice", e)
		case !inner[rl.Axis]:
			return fmt.Errorf("row_guards: %s is no reduce group's innermost loop", rl.Axis.Name())
		case usesVar(e.Src[1], rl.Axis) || !indexMath(e.Src[1]):
			return fmt.Errorf("row_guards: the guard %s changes along %s", e.Src[1], rl.Axis.Name())
		case usesVar(rl.Base, rl.Axis) || !indexMath(rl.Base):
			return fmt.Errorf("row_guards: the row %s changes along %s", rl.Base, rl.Axis.Name())
		case !onlyVar(rl.Off, rl.Axis) || rl.Off.Min < 0 || rl.Off.Max+rowVecSlack > p.Zeros || p.Zeros > rowZerosMax:
			return fmt.Errorf("row_guards: the offset %s is not within a row of %d zeros along %s", rl.Off, p.Zeros, rl.Axis.Name())
		}
		seen[e] = true
		want, wc := normalize(addTerms(nil, e.Src[0], 1))
		got, gc := normalize(addTerms(addTerms(nil, rl.Base, 1), rl.Off, 1))
		if !sameTerms(want, wc, got, gc) {
			return fmt.Errorf("row_guards: %s + %s is not the index %s", rl.Base, rl.Off, e.Src[0])
		}
	}
	return nil
}

// sameTerms compares two normalized linear forms.
func sameTerms(a []term, ac int64, b []term, bc int64) bool {
	if ac != bc {
		return false
	}
	coef := map[*Expr]int64{}
	for _, t := range a {
		coef[t.e] += t.k
	}
	for _, t := range b {
		coef[t.e] -= t.k
	}
	for _, v := range coef {
		if v != 0 {
			return false
		}
	}
	return true
}

// RowOf returns the plan's entry for a load (false: read as written).
func (k *Kernel) RowOf(e *Expr) (RowLoad, bool) {
	if k.Rows == nil {
		return RowLoad{}, false
	}
	for _, rl := range k.Rows.Loads {
		if rl.Load == e {
			return rl, true
		}
	}
	return RowLoad{}, false
}
