package ir

import (
	"fmt"
	"sort"
	"strings"
)

// MaxPrologue is the most floats a prologue's scratch row holds (16 KiB:
// it stays in L1 beside the rows' data, as a keep plan's row does).
const MaxPrologue = maxScratch / 4

// freeVars maps each expression under roots to the loop variables it
// reads that no reduce inside it binds.
func freeVars(roots []*Expr) map[*Expr][]*Axis {
	fv := map[*Expr][]*Axis{}
	Walk(roots, func(e *Expr) {
		var vs []*Axis
		add := func(a *Axis) {
			for _, v := range vs {
				if v == a {
					return
				}
			}
			vs = append(vs, a)
		}
		if e.Op == OpVar {
			add(e.Arg.(*Axis))
		}
		var bound []*Axis
		if e.Op == OpReduce {
			bound = e.Arg.(*ReduceArg).Axes
		}
		for _, s := range e.Src {
			for _, a := range fv[s] {
				own := false
				for _, b := range bound {
					own = own || a == b
				}
				if !own {
					add(a)
				}
			}
		}
		fv[e] = vs
	})
	return fv
}

// PrologueValues lists the values of k a prologue may compute (the
// prologue pass's candidates): inside the loop of a SUM, maximal float32
// subexpressions that are not loads, read the loop's variables but no
// global axis, and are computed from a reduce (a decode step's RMSNorm,
// x·rsqrt(mean(x²)+eps)·g, read by a matrix-vector product: what each row
// would compute again for every weight).
func PrologueValues(k *Kernel) []*Expr {
	nested := false
	Walk(k.Stores, func(e *Expr) {
		if e.Op == OpReduce && !nested {
			WalkPre(e.Src, func(x *Expr) bool {
				nested = nested || x.Op == OpReduce
				return !nested
			})
		}
	})
	if !nested {
		return nil
	}
	fv := freeVars(k.Stores)
	global := map[*Axis]bool{}
	for _, a := range k.Global {
		global[a] = true
	}
	hasReduce := map[*Expr]bool{}
	Walk(k.Stores, func(e *Expr) {
		h := e.Op == OpReduce
		for _, s := range e.Src {
			h = h || hasReduce[s]
		}
		hasReduce[e] = h
	})
	var vals []*Expr
	seen := map[*Expr]bool{}
	WalkPre(k.Stores, func(e *Expr) bool {
		if e.Op != OpReduce || e.Arg.(*ReduceArg).Op != OpSum {
			return true
		}
		WalkPre(e.Src, func(x *Expr) bool {
			if seen[x] {
				return false
			}
			seen[x] = true
			if x.Op == OpReduce {
				return false
			}
			readsGlobal := false
			for _, a := range fv[x] {
				readsGlobal = readsGlobal || global[a]
			}
			if x.DType == Float32 && x.Op != OpLoad && hasReduce[x] && len(fv[x]) > 0 && !readsGlobal {
				vals = append(vals, x)
				return false
			}
			return true
		})
		return true
	})
	return vals
}

// The prologue pass (C targets). A decode step's RMSNorm, joined to the
// matrix-vector product that reads it (fuse's prologues), is a value
// v(k) = x(k)·rsqrt(mean(x²)+eps)·g(k) inside the product's loop: its
// mean is a reduce that reads no global axis, which Linearize computes
// once per launch piece before the row loop, but x·r·g would cost every
// row a load and two multiplies more per weight (the quantized rows are
// compute-bound). The plan (Kernel.Pro) has the C renderer compute the
// vector once per launch piece, after the values it reads and before the
// row loop, into a scratch row:
//
//	r = rsqrt(sum(x²)/n + eps); for p: tg_pro[p] = x[p]*r*g[p]; for row: acc += w[row,k]*tg_pro[k]
//
// and read each occurrence of v back from it (a vector of them as one
// vector load). The plan is data over the scalar DAG, which stays the
// kernel's meaning (the GO interpreter computes v inline), as the keep
// pass's is; Verify re-proves it.

// Prologue is the prologue pass's plan.
type Prologue struct {
	// Axis is the scratch row's element p, 0 <= p < Axis.Size; Value the
	// vector's value at p: it reads p and values computed before the
	// row loop (Linearize's Hoisted[0]) only.
	Axis  *Axis
	Value *Expr
	// Col maps each occurrence of the value in the kernel to its column:
	// the occurrence is Value with p replaced by Col[e].
	Col map[*Expr]*Expr
}

// PlanPrologue is the prologue pass: a plan for the first of k's prologue
// values (PrologueValues) and the occurrences that are the same vector at
// other columns (the lanes of an unrolled product); none: k unchanged.
func PlanPrologue(k *Kernel, _ Target) (*Kernel, error) {
	if len(k.Global) == 0 || k.Keep != nil || len(PrologueValues(k)) == 0 {
		return k, nil
	}
	nk := Simplify(k) // the plan's expressions live in the kernel's own (fresh) builder
	vals := PrologueValues(nk)
	if len(vals) == 0 {
		return k, nil
	}
	b := nk.B
	e0 := vals[0]
	lds0 := valueLoads(e0)
	ref := -1 // the load whose index is the column
	for i, ld := range lds0 {
		if len(ld.Src) > 1 {
			return k, nil // a guarded load: its guard reads the loops
		}
		if ref < 0 && !ld.Src[0].IsConst() {
			ref = i
		}
	}
	if ref < 0 {
		return k, nil
	}
	cols := map[*Expr]*Expr{}
	lo, hi := int64(1)<<62, int64(-1)
	for _, e := range vals {
		lds := valueLoads(e)
		if len(lds) != len(lds0) {
			continue
		}
		c := lds[ref].Src[0]
		cols[e] = c
		lo, hi = min(lo, c.Min), max(hi, c.Max)
	}
	if lo < 0 || hi-lo+1 > MaxPrologue {
		return k, nil
	}
	id := 0
	for _, a := range append(append([]*Axis{}, nk.Global...), nk.ReduceAxes()...) {
		id = max(id, a.ID+1)
	}
	p := &Axis{ID: id, Size: hi - lo + 1, Kind: AxisReduce}
	pv := b.Add(b.Var(p), b.Int(lo))
	// Value: e0 with each load's index the column plus its offset from
	// the reference load's.
	at := map[*Expr]*Expr{}
	for _, ld := range lds0 {
		d := b.Sub(ld.Src[0], lds0[ref].Src[0])
		if !d.IsConst() {
			return k, nil
		}
		at[ld] = b.Load(ld.Arg.(int), ld.DType, b.Add(pv, d), nil)
	}
	val := b.Rebuild(e0, func(x *Expr) *Expr {
		if x.Op == OpReduce {
			return x
		}
		return at[x]
	}, map[*Expr]*Expr{})
	for _, a := range freeVars([]*Expr{val})[val] {
		if a != p {
			return k, nil
		}
	}
	plan := &Prologue{Axis: p, Value: val, Col: map[*Expr]*Expr{}}
	usesP := readersOf([]*Expr{val}, p) // the rest of the value (its mean) is the same at every column
	for _, e := range vals {
		c, ok := cols[e]
		if !ok {
			continue
		}
		col := b.Sub(c, b.Int(lo))
		if substVarIn(b, val, p, col, usesP) == e {
			plan.Col[e] = col
		}
	}
	if len(plan.Col) == 0 {
		return k, nil
	}
	nk.Pro = plan
	if err := plan.verify(nk, nil); err != nil {
		return k, nil // not provable: computed in the loop as before
	}
	return nk, nil
}

// valueLoads lists the loads of a prologue value in walk order, not those
// of the reduces it reads.
func valueLoads(e *Expr) []*Expr {
	var lds []*Expr
	WalkPre([]*Expr{e}, func(x *Expr) bool {
		if x.Op == OpLoad {
			lds = append(lds, x)
		}
		return x.Op != OpReduce && x.Op != OpLoad
	})
	return lds
}

// verify re-proves a Prologue plan on its kernel (in: the kernel's
// expressions; nil: walked here): the value reads only p and values
// computed before the row loop, its loads stay in their buffers for every
// p, each occurrence is the value at its column, and the columns lie in
// the scratch row.
func (pp *Prologue) verify(k *Kernel, in map[*Expr]bool) error {
	if in == nil {
		in = map[*Expr]bool{}
		Walk(k.Stores, func(e *Expr) { in[e] = true })
	}
	p := pp.Axis
	if p.Size <= 0 || p.Size > MaxPrologue || p.Sym != nil {
		return fmt.Errorf("prologue: a scratch row of %d floats (at most %d)", p.Size, MaxPrologue)
	}
	if pp.Value.DType != Float32 {
		return fmt.Errorf("prologue: a %s value", pp.Value.DType)
	}
	for _, a := range freeVars([]*Expr{pp.Value})[pp.Value] {
		if a != p {
			return fmt.Errorf("prologue: the value reads %s", a.Name())
		}
	}
	prog := Linearize(k)
	before := map[*Expr]bool{}
	if len(prog.Hoisted) > 0 {
		for _, e := range prog.Hoisted[0].Nodes {
			before[e] = true
		}
	}
	var err error
	WalkPre([]*Expr{pp.Value}, func(e *Expr) bool {
		switch {
		case err != nil:
		case e.Op == OpReduce:
			if !before[e] {
				err = fmt.Errorf("prologue: the value reads %s, which is not computed before the row loop", e)
			}
			return false
		case e.Op == OpLoad || e.Op == OpStore:
			if i := e.Arg.(int); e.Op == OpStore || i < 0 || i >= len(k.Bufs) {
				err = fmt.Errorf("prologue: the value writes or reads buffer %d", i)
			} else {
				err = k.checkIndex(e)
			}
		}
		return err == nil
	})
	if err != nil {
		return err
	}
	if len(pp.Col) == 0 {
		return fmt.Errorf("prologue: no occurrence")
	}
	b := NewBuilder()
	memo := map[*Expr]*Expr{}
	idf := func(e *Expr) *Expr { return b.Rebuild(e, func(*Expr) *Expr { return nil }, memo) }
	val := idf(pp.Value)
	usesP := readersOf([]*Expr{val}, p)
	for e, c := range pp.Col {
		if !in[e] {
			return fmt.Errorf("prologue: an occurrence not in the kernel")
		}
		if c.Min < 0 || c.Max >= p.Size {
			return fmt.Errorf("prologue: column %s of %s is outside the scratch row [0, %d)", c, e, p.Size)
		}
		if substVarIn(b, val, p, idf(c), usesP) != idf(e) {
			return fmt.Errorf("prologue: %s is not the value at column %s", e, c)
		}
	}
	return nil
}

// dump prints the plan for Kernel.Dump.
func (pp *Prologue) dump(names map[*Expr]string) string {
	var occ []string
	for e := range pp.Col {
		occ = append(occ, names[e])
	}
	sort.Strings(occ)
	val := pp.Value.String()
	if len(val) > 160 {
		val = val[:160] + "…"
	}
	return fmt.Sprintf("  prologue %s < %d: a scratch row of %s, read by %s\n", pp.Axis.Name(), pp.Axis.Size, val, strings.Join(occ, " "))
}

// Contiguous says whether index b is index a plus d (for the renderers'
// vector loads of a plan's lanes).
func Contiguous(a, b *Expr, d int64) bool { return contiguous(a, b, d) }
