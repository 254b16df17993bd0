package ir

import (
	"fmt"
	"math"
	"strings"
)

// BufParam is one buffer argument of a kernel.
type BufParam struct {
	DType  DType
	Size   int64 // elements
	Output bool
}

// Kernel is one unit of device work: nested loops over Global axes (the
// outermost split across cores or mapped to the grid) around a DAG of
// scalar expressions ending in Stores. Reduce loops belong to the OpReduce
// expressions that own them.
type Kernel struct {
	Name      string
	Bufs      []BufParam // outputs first, then inputs, in argument order
	Global    []*Axis
	Stores    []*Expr
	NumParams int // runtime integer parameters (vars), e.g. RNG counters
	B         *Builder
	Opts      []Opt // the optimization decisions applied (for DEBUG and plans)
}

// Kind is "E" for elementwise kernels and "r" for kernels with a reduce.
func (k *Kernel) Kind() string {
	kind := "E"
	Walk(k.Stores, func(e *Expr) {
		if e.Op == OpReduce {
			kind = "r"
		}
	})
	return kind
}

// BaseName is tinygrad-style: kind, global sizes, then reduce sizes.
func (k *Kernel) BaseName() string {
	parts := []string{k.Kind()}
	for _, a := range k.Global {
		if a.Size > 1 { // the placeholder loop of a scalar result
			parts = append(parts, fmt.Sprint(a.Size))
		}
	}
	for _, a := range k.ReduceAxes() {
		parts = append(parts, fmt.Sprint(a.Size))
	}
	return strings.Join(parts, "_")
}

// ReduceAxes lists the reduce loops of all reduces, in first-use order.
func (k *Kernel) ReduceAxes() []*Axis {
	var axes []*Axis
	Walk(k.Stores, func(e *Expr) {
		if e.Op == OpReduce {
			axes = append(axes, e.Arg.(*ReduceArg).Axes...)
		}
	})
	return axes
}

// HasSym reports whether a loop of the kernel has a symbolic trip count.
func (k *Kernel) HasSym() bool {
	for _, a := range k.Global {
		if a.Sym != nil {
			return true
		}
	}
	for _, a := range k.ReduceAxes() {
		if a.Sym != nil {
			return true
		}
	}
	return false
}

// GlobalSize is the number of iterations of the global loops.
func (k *Kernel) GlobalSize() int64 {
	n := int64(1)
	for _, a := range k.Global {
		n *= a.Size
	}
	return n
}

// Cost estimates the float operations and the bytes of buffer traffic of
// one launch, for DEBUG's GFLOP/s and GB/s columns.
func (k *Kernel) Cost() (flops, bytes int64) {
	inner := map[*Expr]int64{} // iterations of the reduce loops around e
	var rec func(e *Expr, mult int64)
	seen := map[*Expr]bool{}
	rec = func(e *Expr, mult int64) {
		if seen[e] {
			return
		}
		seen[e] = true
		inner[e] = mult
		m := mult
		if e.Op == OpReduce {
			for _, a := range e.Arg.(*ReduceArg).Axes {
				m *= a.Size
			}
		}
		for _, s := range e.Src {
			rec(s, m)
		}
	}
	for _, s := range k.Stores {
		rec(s, 1)
	}
	g := k.GlobalSize()
	for e, m := range inner {
		if e.Op.IsALU() && e.Op != OpCast && e.DType.IsFloat() || e.Op == OpReduce || (e.Op.IsALU() && len(e.Src) > 0 && e.Src[0].DType.IsFloat() && e.Op.IsCompare()) {
			flops += g * m
		}
	}
	for _, b := range k.Bufs {
		bytes += b.Size * int64(b.DType.Size())
	}
	return flops, bytes
}

// Dump prints the kernel IR: axes, then one line per expression in
// topological order.
func (k *Kernel) Dump() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "kernel %s\n", k.Name)
	for i, b := range k.Bufs {
		role := "in"
		if b.Output {
			role = "out"
		}
		fmt.Fprintf(&sb, "  buf%d %s %s[%d]\n", i, role, b.DType, b.Size)
	}
	for _, a := range k.Global {
		fmt.Fprintf(&sb, "  loop %s < %s\n", a.Name(), a.Bound())
	}
	names := map[*Expr]string{}
	Walk(k.Stores, func(e *Expr) {
		name := fmt.Sprintf("%%%d", len(names))
		names[e] = name
		var args []string
		for _, s := range e.Src {
			args = append(args, names[s])
		}
		arg := ""
		switch a := e.Arg.(type) {
		case *Axis:
			arg = a.Name()
		case *ReduceArg:
			var ax []string
			for _, x := range a.Axes {
				ax = append(ax, fmt.Sprintf("%s<%s", x.Name(), x.Bound()))
			}
			arg = a.Op.String() + " over " + strings.Join(ax, ",")
		case ParamArg:
			arg = fmt.Sprintf("vars[%d]", a.Index)
			if a.Name != "" {
				arg += " " + a.Name
			}
		case int:
			arg = fmt.Sprintf("buf%d", a)
		case nil:
		default:
			arg = fmt.Sprint(a)
		}
		bnd := ""
		if !e.DType.IsFloat() && e.Op != OpStore {
			bnd = fmt.Sprintf("  [%d..%d]", e.Min, e.Max)
		}
		fmt.Fprintf(&sb, "  %-5s = %-10s %-7s %s %s%s\n", name, e.Op, e.DType, strings.Join(args, " "), arg, bnd)
	})
	return sb.String()
}

// Verify checks the kernel IR invariants; passes must preserve them.
func (k *Kernel) Verify() error {
	bound := map[*Axis]bool{}
	for _, a := range k.Global {
		if a.Size <= 0 {
			return fmt.Errorf("%s: global axis %s has size %d", k.Name, a.Name(), a.Size)
		}
		if a.Sym != nil && (a.Sym.Param < 0 || a.Sym.Param >= k.NumParams) {
			return fmt.Errorf("%s: axis %s is bounded by vars[%d], the kernel has %d", k.Name, a.Name(), a.Sym.Param, k.NumParams)
		}
		bound[a] = true
	}
	var err error
	var check func(e *Expr, scope map[*Axis]bool)
	seen := map[*Expr]bool{}
	check = func(e *Expr, scope map[*Axis]bool) {
		if err != nil || seen[e] {
			return
		}
		switch e.Op {
		case OpVar:
			if !scope[e.Arg.(*Axis)] {
				err = fmt.Errorf("%s: %s used outside its loop", k.Name, e.Arg.(*Axis).Name())
			}
		case OpLoad, OpStore:
			if i := e.Arg.(int); i < 0 || i >= len(k.Bufs) {
				err = fmt.Errorf("%s: buffer %d out of range", k.Name, i)
			} else if e.Op == OpStore && !k.Bufs[i].Output {
				err = fmt.Errorf("%s: store to input buffer %d", k.Name, i)
			} else if e.Src[0].DType.IsFloat() {
				err = fmt.Errorf("%s: float index", k.Name)
			}
		case OpParam:
			if i := e.ParamIndex(); i < 0 || i >= k.NumParams {
				err = fmt.Errorf("%s: vars[%d] out of range (the kernel has %d)", k.Name, i, k.NumParams)
			}
		case OpWhere:
			if e.Src[0].DType != Bool {
				err = fmt.Errorf("%s: WHERE condition is %s", k.Name, e.Src[0].DType)
			}
		case OpReduce:
			inner := map[*Axis]bool{}
			for a := range scope {
				inner[a] = true
			}
			for _, a := range e.Arg.(*ReduceArg).Axes {
				inner[a] = true
				if a.Sym != nil && (a.Sym.Param < 0 || a.Sym.Param >= k.NumParams) {
					err = fmt.Errorf("%s: axis %s is bounded by vars[%d], the kernel has %d", k.Name, a.Name(), a.Sym.Param, k.NumParams)
				}
			}
			scope = inner
		default:
			if e.Op.IsBinary() && !e.Op.IsCompare() && e.Src[0].DType != e.Src[1].DType {
				err = fmt.Errorf("%s: %s mixes %s and %s", k.Name, e.Op, e.Src[0].DType, e.Src[1].DType)
			}
		}
		if e.Op != OpReduce {
			seen[e] = true // reduce bodies are checked with their own scope each time
		}
		for _, s := range e.Src {
			check(s, scope)
		}
	}
	for _, s := range k.Stores {
		check(s, bound)
	}
	return err
}

// Pass is one kernel-to-kernel transformation of the pass table. When is
// nil for passes every target runs.
type Pass struct {
	Name string
	Run  func(*Kernel, Target) (*Kernel, error)
	When func(Target) bool
}

// Target says which optional passes suit the device a kernel is for.
type Target struct {
	Upcast bool // register blocking with scalar lanes (C compilers vectorize them)
	// VecWidth is the float32 lanes of the device's vector registers (8:
	// AVX2, 16: AVX-512; 0 means DefaultVecWidth). The heuristic sizes its
	// register blocks in vectors of this width, and the C renderer of the
	// same device writes vectors of it (render.CWithWidth).
	VecWidth int
	// Choose, if set, picks the opts of each kernel instead of the
	// heuristic (BEAM search); it sees the kernel the opts apply to.
	Choose func(*Kernel) []Opt
}

// CPUTarget is what emitting for the CPU uses, and the CPU device on a
// host without AVX-512 (the device sets VecWidth from the host's flags).
var CPUTarget = Target{Upcast: true, VecWidth: DefaultVecWidth}

// DefaultVecWidth is the vector width assumed when a target does not say:
// 8 float32 lanes (256-bit AVX2), valid on every x86-64 CPU tgc targets
// and the width golden tests render with.
const DefaultVecWidth = 8

// Width is t's vector width (DefaultVecWidth when unset).
func (t Target) Width() int64 {
	if t.VecWidth <= 0 {
		return DefaultVecWidth
	}
	return int64(t.VecWidth)
}

// Passes is the optimization pipeline, in order. DEBUG=5 prints the kernel
// after each one.
var Passes = []Pass{
	{Name: "simplify", Run: plain(Simplify)},
	{Name: "split_reduces", Run: plain(SplitReduces)},
	{Name: "merge_axes", Run: plain(MergeAxes)},
	{Name: "reverse_reduces", Run: plain(ReverseReduces)},
	{Name: "opts", Run: applyChosenOpts, When: func(t Target) bool { return t.Upcast }},
}

func plain(f func(*Kernel) *Kernel) func(*Kernel, Target) (*Kernel, error) {
	return func(k *Kernel, _ Target) (*Kernel, error) { return f(k), nil }
}

// applyChosenOpts applies the target's choice of opts, or the heuristic's.
func applyChosenOpts(k *Kernel, t Target) (*Kernel, error) {
	var opts []Opt
	if t.Choose != nil {
		opts = t.Choose(k)
	} else {
		opts = t.HeuristicOpts(k)
	}
	return ApplyOpts(k, opts)
}

// Optimize runs the passes every target runs; see OptimizeFor.
func Optimize(k *Kernel, dump func(pass string, k *Kernel)) (*Kernel, error) {
	return OptimizeFor(k, Target{}, dump)
}

// OptimizeFor runs the pass table for a target, verifying invariants after
// every pass; dump, if not nil, sees the kernel after each pass.
func OptimizeFor(k *Kernel, t Target, dump func(pass string, k *Kernel)) (*Kernel, error) {
	if dump != nil {
		dump("lowered", k)
	}
	if err := k.Verify(); err != nil {
		return nil, fmt.Errorf("lowered: %w", err)
	}
	for _, p := range Passes {
		if p.When != nil && !p.When(t) {
			continue
		}
		nk, err := p.Run(k, t)
		if err != nil {
			return nil, fmt.Errorf("pass %s: %w", p.Name, err)
		}
		k = nk
		if err := k.Verify(); err != nil {
			return nil, fmt.Errorf("after pass %s: %w", p.Name, err)
		}
		if dump != nil {
			dump(p.Name, k)
		}
	}
	return k, nil
}

// Simplify rebuilds every expression through a fresh builder, which applies
// all rewrite rules to a fixed point bottom-up.
func Simplify(k *Kernel) *Kernel {
	return k.rewrite(func(*Builder, *Expr) *Expr { return nil })
}

// rewrite rebuilds the kernel's stores through a fresh builder, applying f.
func (k *Kernel) rewrite(f func(b *Builder, e *Expr) *Expr) *Kernel {
	nk := *k
	nk.B = NewBuilder()
	memo := map[*Expr]*Expr{}
	nk.Stores = make([]*Expr, len(k.Stores))
	g := func(e *Expr) *Expr { return f(nk.B, e) }
	for i, s := range k.Stores {
		nk.Stores[i] = nk.B.Rebuild(s, g, memo)
	}
	return &nk
}

// countDivMod counts the integer divisions and modulos in a kernel.
func (k *Kernel) countDivMod() int {
	n := 0
	Walk(k.Stores, func(e *Expr) {
		if (e.Op == OpDiv || e.Op == OpMod) && !e.DType.IsFloat() {
			n++
		}
	})
	return n
}

// MergeAxes fuses adjacent global loops into one when that costs no extra
// index math (contiguous access), giving one long outer loop to split
// across cores and a simple inner loop for the C compiler to vectorize.
func MergeAxes(k *Kernel) *Kernel {
	for i := 0; i+1 < len(k.Global); {
		outer, inner := k.Global[i], k.Global[i+1]
		if outer.Sym != nil || inner.Sym != nil {
			i++ // the valid merged indices would not be a prefix
			continue
		}
		merged := &Axis{ID: outer.ID, Size: outer.Size * inner.Size, Kind: AxisGlobal}
		before := k.countDivMod()
		nk := *k
		nk.B = NewBuilder()
		nb := nk.B
		memo := map[*Expr]*Expr{}
		nk.Stores = make([]*Expr, len(k.Stores))
		for j, s := range k.Stores {
			nk.Stores[j] = nb.Rebuild(s, func(e *Expr) *Expr {
				if e.Op != OpVar {
					return nil
				}
				switch e.Arg.(*Axis) {
				case outer:
					return nb.Div(nb.Var(merged), nb.Int(inner.Size))
				case inner:
					return nb.Mod(nb.Var(merged), nb.Int(inner.Size))
				}
				return nil
			}, memo)
		}
		if nk.countDivMod() > before {
			i++
			continue
		}
		nk.Global = append(append(append([]*Axis{}, k.Global[:i]...), merged), k.Global[i+2:]...)
		k = &nk
	}
	return k
}

// ReduceIdentity is the start value of a reduction's accumulator.
func ReduceIdentity(op Op, dt DType) float64 {
	if op == OpSum {
		return 0
	}
	switch {
	case dt.IsFloat():
		return math.Inf(-1)
	case dt == Bool, dt == Uint8:
		return 0
	case dt == Int8:
		return math.MinInt8
	}
	return math.MinInt32
}
