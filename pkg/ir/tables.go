package ir

import (
	"fmt"
	"slices"
	"strings"
)

// The tables pass (C targets). A quantized weight's block scale is a
// scalar of the block loops that factor_reduces pulled out of each
// block's sum: Q4_K's d·sc per 32 weights. Computed in the loop, it costs every block a byte load, an int-to-float convert, a
// multiply and a broadcast into a vector before its one multiply-add: on
// AVX-512 (two vector ports) five of the thirteen vector instructions of
// 32 weights, so the loop ran at 6.8 cycles per 32. The plan has the C
// renderer compute the scale for every block of the row first, in a loop
// nest of its own that the compiler vectorizes (8 or 16 blocks an
// instruction), into a small table, and read it back in the block loop,
// where the multiply-add takes it as a broadcast memory operand. The
// table's values are the loop's own (the same float operations), so the
// results are bit for bit unchanged. A decode's Q4_K rows of 2048 (C
// harness on the Xeon guest): 93-96 µs a launch, 75-78 µs so.

// MaxTable is the most floats a table holds (4 KiB: in L1 beside the
// row's weights).
const MaxTable = 1024

// Tables is the tables pass's plan.
type Tables struct {
	Tabs []Table
}

// Table is one value tabulated over the loops of its reduce it reads.
type Table struct {
	// Value is a float32 value in the body of a top-level reduce (not
	// inside a reduce of its own); it reads Axes, global axes and values
	// computed before the reduce, and is computed for every iteration of
	// Axes before the reduce's loops, into element Col.
	Value *Expr
	Axes  []*Axis // the reduce's loops Value reads, in the reduce's order
	Col   *Expr   // the element: Axes' variables flattened, the last fastest
}

// Size is the number of elements of t.
func (t Table) Size() int64 {
	n := int64(1)
	for _, a := range t.Axes {
		n *= a.Size
	}
	return n
}

// Of is the table whose value e is (false: none).
func (p *Tables) Of(e *Expr) (int, bool) {
	if p == nil {
		return 0, false
	}
	for i, t := range p.Tabs {
		if t.Value == e {
			return i, true
		}
	}
	return 0, false
}

// PlanTables is the tables pass (see Tables): a table for each block
// value (sharedValues) of a top-level float32 sum, one or two a sum;
// none: k unchanged.
//
// Q8_0's scale, a float16 load alone, gets none: the vector code reads it
// as one broadcast load and convert, and its table made no difference in
// the decode benchmark (4.93-5.53 against 4.36-5.63 ms a token).
func PlanTables(k *Kernel, _ Target) (*Kernel, error) {
	if len(k.Global) == 0 || k.Keep != nil || k.Skip != nil {
		return k, nil
	}
	fv := freeVars(k.Stores)
	global := map[*Axis]bool{}
	for _, a := range k.Global {
		global[a] = true
	}
	prog := Linearize(k)
	var tabs []Table
	var leaders []*Expr
	Walk(k.Stores, func(e *Expr) {
		if e.Op == OpReduce {
			leaders = appendNew(leaders, prog.Leader[e])
		}
	})
	for _, leader := range leaders {
		axes := leader.Arg.(*ReduceArg).Axes
		if leader.Arg.(*ReduceArg).Op != OpSum || leader.DType != Float32 || prog.Place[leader] != nil {
			continue
		}
		vals := sharedValues(k, prog.Members[leader], axes, fv, global)
		if len(vals) == 0 || len(vals) > 2 { // more: not a block's scale and minimum
			continue
		}
		for _, v := range vals {
			t := Table{Value: v}
			for _, a := range axes {
				if slices.Contains(fv[v], a) {
					t.Axes = append(t.Axes, a)
				}
			}
			if t.Size() > MaxTable {
				continue
			}
			t.Col = flatten(k.B, t.Axes)
			tabs = append(tabs, t)
		}
	}
	if len(tabs) == 0 {
		return k, nil
	}
	nk := *k
	nk.Tabs = &Tables{Tabs: tabs}
	if err := nk.Tabs.verify(&nk, nil); err != nil {
		return k, nil // not provable: computed in the loop as before
	}
	return &nk, nil
}

// sharedValues lists a reduce group's block values: the maximal float32
// subexpressions of its members' values, outside the reduces in them,
// that compute (not a load, converted or not, or a constant) from a load,
// read some of the group's loops (axes) and otherwise only global axes,
// and that every member reads, when the members' values have a reduce
// nested in them that reads the group's loops (the block's sum; not a
// value computed before the loops, a softmax's maximum). Q6_K's blocks
// of 16 weights, one vector unrolled whole with no loop left, have none:
// their scales' tables made the 768x2048 product slower (82 against 78
// µs), the loops around a row's 64 scales too short for the compiler to
// vectorize.
func sharedValues(k *Kernel, members []*Expr, axes []*Axis, fv map[*Expr][]*Axis, global map[*Axis]bool) []*Expr {
	nested := false // a block's sum: a reduce in the loops (not one hoisted before them)
	for _, m := range members {
		WalkPre(m.Src, func(x *Expr) bool {
			if x.Op == OpReduce && slices.ContainsFunc(fv[x], func(a *Axis) bool { return slices.Contains(axes, a) }) {
				nested = true
			}
			return !nested
		})
	}
	if !nested {
		return nil
	}
	readers := map[*Expr]int{} // members that read a candidate
	var cands []*Expr
	isValue := map[*Expr]bool{} // blockValue, once a node (the members share most of theirs)
	for _, m := range members {
		seen := map[*Expr]bool{}
		WalkPre(m.Src, func(x *Expr) bool {
			if seen[x] || x.Op == OpReduce {
				return false
			}
			seen[x] = true
			is, known := isValue[x]
			if !known {
				is = blockValue(k, x, axes, fv, global)
				isValue[x] = is
			}
			if is {
				if readers[x] == 0 {
					cands = append(cands, x)
				}
				readers[x]++
			}
			return true
		})
	}
	need := len(members)
	var vals []*Expr
	for _, c := range cands {
		if readers[c] < need {
			continue
		}
		inside := false // in another shared value: that one is tabled
		for _, d := range cands {
			if d != c && readers[d] >= need && contains(d, c) {
				inside = true
			}
		}
		if !inside {
			vals = append(vals, c)
		}
	}
	return vals
}

// blockValue says whether x may be a table's value (see sharedValues).
func blockValue(k *Kernel, x *Expr, axes []*Axis, fv map[*Expr][]*Axis, global map[*Axis]bool) bool {
	if x.DType != Float32 || x.Op == OpLoad || x.Op == OpConst || x.Op == OpCast && x.Src[0].Op == OpLoad {
		return false // a load, converted or not, is read where it is used (Q8_0's f16 scale: one broadcast load)
	}
	if load, reduce := reads(x); !load || reduce {
		return false
	}
	loops := false
	for _, a := range fv[x] {
		switch {
		case slices.Contains(axes, a):
			loops = true
		case !global[a]:
			return false
		}
	}
	return loops && !k.rowPlanned(x)
}

// contains says whether e's expression has x in it.
func contains(e, x *Expr) bool {
	found := false
	WalkPre([]*Expr{e}, func(y *Expr) bool {
		found = found || y == x
		return !found
	})
	return found
}

// reads says whether e reads a buffer, and whether it reads a reduce.
func reads(e *Expr) (load, reduce bool) {
	WalkPre([]*Expr{e}, func(x *Expr) bool {
		load = load || x.Op == OpLoad
		reduce = reduce || x.Op == OpReduce
		return x.Op != OpReduce
	})
	return load, reduce
}

// rowPlanned says whether e reads a load the row_guards plan reads
// through its row pointer (the table's loop has none).
func (k *Kernel) rowPlanned(e *Expr) bool {
	if k.Rows == nil {
		return false
	}
	found := false
	WalkPre([]*Expr{e}, func(x *Expr) bool {
		if x.Op == OpLoad {
			_, planned := k.RowOf(x)
			found = found || planned
		}
		return !found && x.Op != OpReduce
	})
	return found
}

// nestedIn says whether reduce r sits inside another reduce's loop.
func nestedIn(k *Kernel, r *Expr) bool {
	nested := false
	Walk(k.Stores, func(e *Expr) {
		if e.Op == OpReduce && e != r && !nested {
			WalkPre(e.Src, func(x *Expr) bool {
				nested = nested || x == r
				return !nested
			})
		}
	})
	return nested
}

func appendNew(xs []*Expr, ys ...*Expr) []*Expr {
	for _, y := range ys {
		if !slices.Contains(xs, y) {
			xs = append(xs, y)
		}
	}
	return xs
}

// flatten is the element of axes' variables in a row-major table.
func flatten(b *Builder, axes []*Axis) *Expr {
	col := b.Int(0)
	for _, a := range axes {
		col = b.Add(b.Mul(col, b.Int(a.Size)), b.Var(a))
	}
	return col
}

// verify re-proves a Tables plan on its kernel (in: the kernel's
// expressions; nil: walked here): each value is float32, in the kernel,
// reads its axes (the loops of one top-level reduce whose value holds it)
// and global axes only, no reduce, and loads that stay in their buffers;
// its element is its axes flattened, inside the table.
func (p *Tables) verify(k *Kernel, in map[*Expr]bool) error {
	if in == nil {
		in = map[*Expr]bool{}
		Walk(k.Stores, func(e *Expr) { in[e] = true })
	}
	fv := freeVars(k.Stores)
	global := map[*Axis]bool{}
	for _, a := range k.Global {
		global[a] = true
	}
	for i, t := range p.Tabs {
		e := t.Value
		if !in[e] || e.DType != Float32 {
			return fmt.Errorf("tables: table %d's value is not a float32 of the kernel", i)
		}
		if len(t.Axes) == 0 || t.Size() > MaxTable {
			return fmt.Errorf("tables: table %d has %d elements (1 to %d)", i, t.Size(), MaxTable)
		}
		var owner *Expr
		Walk(k.Stores, func(r *Expr) {
			if r.Op == OpReduce && owner == nil && slices.Contains(r.Arg.(*ReduceArg).Axes, t.Axes[0]) {
				owner = r
			}
		})
		if owner == nil || nestedIn(k, owner) {
			return fmt.Errorf("tables: table %d's loops are not a top-level reduce's", i)
		}
		raxes := owner.Arg.(*ReduceArg).Axes
		for _, a := range t.Axes {
			if !slices.Contains(raxes, a) || a.Sym != nil {
				return fmt.Errorf("tables: table %d's loop %s is not one of its reduce's", i, a.Name())
			}
		}
		for _, a := range fv[e] {
			if !global[a] && !slices.Contains(t.Axes, a) {
				return fmt.Errorf("tables: table %d's value reads %s", i, a.Name())
			}
		}
		var err error
		WalkPre([]*Expr{e}, func(x *Expr) bool {
			switch {
			case err != nil:
			case x.Op == OpReduce:
				err = fmt.Errorf("tables: table %d's value reads a reduce", i)
			case x.Op == OpStore:
				err = fmt.Errorf("tables: table %d's value stores", i)
			case x.Op == OpLoad:
				err = k.checkIndex(x)
			}
			return err == nil
		})
		if err != nil {
			return err
		}
		b := NewBuilder()
		memo := map[*Expr]*Expr{}
		idf := func(x *Expr) *Expr { return b.Rebuild(x, func(*Expr) *Expr { return nil }, memo) }
		if idf(t.Col) != flatten(b, t.Axes) || t.Col.Min < 0 || t.Col.Max >= t.Size() {
			return fmt.Errorf("tables: table %d's element %s is not its loops flattened", i, t.Col)
		}
	}
	return nil
}

// TabledOnly lists the nodes of k that only its tables' values read (none
// without a tables plan): the reduce reads the tables instead, so the
// renderer does not write them there, nor the prefetch pass plan them.
func (k *Kernel) TabledOnly() map[*Expr]bool {
	if k.Tabs == nil {
		return map[*Expr]bool{}
	}
	var vals, cols []*Expr
	for _, t := range k.Tabs.Tabs {
		vals, cols = append(vals, t.Value), append(cols, t.Col)
	}
	return OnlyUnder(k, vals, cols...)
}

// OnlyUnder lists the nodes below values (not the values) that neither
// k's stores nor roots reach other than through one of them: what a plan
// that computes the values elsewhere (a keep plan's stored row, a
// prologue's scratch row, a table) leaves the loops no reason to compute.
func OnlyUnder(k *Kernel, values []*Expr, roots ...*Expr) map[*Expr]bool {
	stop := map[*Expr]bool{}
	for _, v := range values {
		stop[v] = true
	}
	live := map[*Expr]bool{}
	var rec func(e *Expr)
	rec = func(e *Expr) {
		if live[e] {
			return
		}
		live[e] = true
		if stop[e] {
			return
		}
		for _, s := range e.Src {
			rec(s)
		}
	}
	for _, s := range k.Stores {
		rec(s)
	}
	for _, r := range roots {
		rec(r)
	}
	dead := map[*Expr]bool{}
	for _, v := range values {
		Walk(v.Src, func(x *Expr) {
			if !live[x] {
				dead[x] = true
			}
		})
	}
	return dead
}

// dump prints the plan for Kernel.Dump.
func (p *Tables) dump(names map[*Expr]string) string {
	var sb strings.Builder
	for i, t := range p.Tabs {
		var ls []string
		for _, a := range t.Axes {
			ls = append(ls, fmt.Sprintf("%s<%d", a.Name(), a.Size))
		}
		fmt.Fprintf(&sb, "  table %d over %s: %s\n", i, strings.Join(ls, " "), names[t.Value])
	}
	return sb.String()
}
