package ir

import (
	"fmt"
	"slices"
)

// The vec_loops pass (C targets). A loop of symbolic length (a decode
// step's softmax over start_pos+1 cached positions, a prompt chunk's over
// start_pos+128) takes no opts (no lane count divides its trip count), so
// the simd pass leaves it scalar, and gcc does not vectorize it either: its
// sums and maxima are a chain it may not reassociate without leave. The
// plan marks such loops that the C compiler may vectorize itself (OpenMP's
// simd, compiled with -fopenmp-simd): a reduce loop of scalar float32 sums
// and maxima only, or the innermost global loop of a kernel without vector
// runs, whose stores each write their own element per iteration. The
// renderer writes `#pragma omp simd simdlen(W)` before the loop, with a
// reduction clause per accumulator: the compiler then sums in W lanes and
// adds them at the end (as an UNROLL's lanes do; not the scalar order, so
// not the GO interpreter's last bits), and peels what W does not divide.
// A chunk's softmax rows (12 heads x 128 queries over 640 positions, one
// core, C harness on the Xeon guest): 1.39-1.46 ms scalar, 0.45-0.48 ms so.

// VecLoops is the vec_loops pass's plan: the loops the C compiler
// vectorizes in lanes of Width.
type VecLoops struct {
	Width int
	Axes  []*Axis
}

// Has says whether the plan vectorizes loop a.
func (v *VecLoops) Has(a *Axis) bool { return v != nil && slices.Contains(v.Axes, a) }

// PlanVecLoops is the vec_loops pass (see VecLoops).
func PlanVecLoops(k *Kernel, t Target) (*Kernel, error) {
	if len(k.Global) == 0 || k.Pro != nil || k.Rows != nil || !k.HasSym() {
		return k, nil
	}
	prog := Linearize(k)
	var axes []*Axis
	for leader, members := range prog.Members {
		if a, ok := vecReduceLoop(k, prog, leader, members); ok {
			axes = append(axes, a)
		}
	}
	if a := k.Global[len(k.Global)-1]; len(k.Global) > 1 && vecGlobalLoop(k, prog, a) {
		axes = append(axes, a)
	}
	if len(axes) == 0 {
		return k, nil
	}
	slices.SortFunc(axes, func(a, b *Axis) int { return a.ID - b.ID })
	nk := *k
	nk.VecLoops = &VecLoops{Width: int(t.Width()), Axes: axes}
	return &nk, nil
}

// vecReduceLoop says whether a reduce group's loop is one the plan
// vectorizes: one symbolic axis, scalar float32 sums and maxima (no SIMD
// lane, no skip test), a body without a nested loop, and the values a keep
// plan stores in it each at its own element.
func vecReduceLoop(k *Kernel, prog *Program, leader *Expr, members []*Expr) (*Axis, bool) {
	axes := leader.Arg.(*ReduceArg).Axes
	if len(axes) != 1 || axes[0].Sym == nil {
		return nil, false
	}
	a := axes[0]
	if k.Skip != nil && len(k.Skip.Conds[a]) > 0 {
		return nil, false
	}
	for _, m := range members {
		op := m.Arg.(*ReduceArg).Op
		if m.DType != Float32 || op != OpSum && op != OpMaxReduce {
			return nil, false
		}
		if k.SIMD != nil {
			if _, _, ok := k.SIMD.Lane(m); ok {
				return nil, false
			}
		}
	}
	for _, e := range prog.Inner[leader].Nodes {
		if e.Op == OpReduce {
			return nil, false
		}
	}
	if k.Keep != nil && slices.Contains(k.Keep.Groups(), leader) {
		for _, m := range members {
			if idx, ok := k.Keep.Index[m]; ok {
				if s, ok := AxisStride(idx, a); !ok || s == 0 {
					return nil, false // the kept values would share an element
				}
			}
		}
	}
	return a, true
}

// vecGlobalLoop says whether the innermost global loop a is one the plan
// vectorizes: symbolic, no vector runs or line stores in the kernel, no
// reduce evaluated inside it, and every store writing its own element in
// each iteration (an index that moves along a) of a buffer the loop's
// loads read only at that element.
func vecGlobalLoop(k *Kernel, prog *Program, a *Axis) bool {
	if a.Sym == nil || k.SIMD != nil || k.Stream != nil {
		return false
	}
	for _, e := range prog.Innermost.Nodes {
		if e.Op == OpReduce {
			return false
		}
	}
	stored := map[int]*Expr{}
	for _, s := range k.Stores {
		if st, ok := AxisStride(s.Src[0], a); !ok || st == 0 {
			return false
		}
		b := s.Arg.(int)
		if prev, ok := stored[b]; ok && prev != s.Src[0] {
			return false // two elements of one buffer an iteration
		}
		stored[b] = s.Src[0]
	}
	for _, e := range prog.Innermost.Nodes {
		if e.Op != OpLoad {
			continue
		}
		if idx, ok := stored[e.Arg.(int)]; ok && e.Src[0] != idx {
			return false
		}
	}
	return true
}

// verify checks a VecLoops plan against its kernel.
func (v *VecLoops) verify(k *Kernel) error {
	if v.Width < 1 || v.Width > MaxVecWidth {
		return fmt.Errorf("vec_loops: width %d", v.Width)
	}
	prog := Linearize(k)
	for _, a := range v.Axes {
		ok := false
		for leader, members := range prog.Members {
			if axes := leader.Arg.(*ReduceArg).Axes; len(axes) == 1 && axes[0] == a {
				_, ok = vecReduceLoop(k, prog, leader, members)
			}
		}
		if g := k.Global; !ok && len(g) > 1 && g[len(g)-1] == a {
			ok = vecGlobalLoop(k, prog, a)
		}
		if !ok {
			return fmt.Errorf("vec_loops: %s is not a loop the C compiler may vectorize", a.Name())
		}
	}
	return nil
}
