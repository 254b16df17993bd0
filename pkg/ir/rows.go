package ir

// Row kernels: a kernel whose reduces are hoisted out of its inner global
// loops (Program.Hoisted), like a fused softmax
//
//	for row: m = max(x[row,:]); s = sum(exp(x[row,:]-m)); for col: out = exp(x[row,col]-m)/s
//
// reads each row from memory once and then from cache. Its opts differ
// from a matmul's: every reduce is blocked into vectors along its own
// contiguous axis (UNROLL), and the rows are not blocked at all: a block of rows would be a block of rows in
// cache at once, and the reduces share no loads between rows.

// hoistsRows reports whether some reduce of k is hoisted out of an inner
// global loop and read outside every reduce's loop (a reduce read only
// inside other reduces' loops, a prologue's mean of a matrix-vector
// product's x, is computed once before a kernel that is not a row kernel).
func hoistsRows(k *Kernel) bool {
	p := Linearize(k)
	outside := map[*Expr]bool{} // read outside every reduce's loop
	WalkPre(k.Stores, func(e *Expr) bool {
		outside[e] = true
		return e.Op != OpReduce
	})
	for _, b := range p.Hoisted {
		for _, e := range b.Nodes {
			if e.Op == OpReduce && outside[e] {
				return true
			}
		}
	}
	return false
}

// rowOpts: vectors of 2W lanes (two accumulators, to hide the add's
// latency) along each reduce's contiguous axis. The column loop stays a
// plain loop, which the C compiler vectorizes as it does any elementwise
// kernel.
func (t Target) rowOpts(k *Kernel) []Opt {
	w := t.Width()
	var opts []Opt
	var idxs []*Expr
	Walk(k.Stores, func(e *Expr) {
		if e.Op == OpLoad {
			idxs = append(idxs, e.Src[0])
		}
	})
	for i, r := range k.ReduceAxes() {
		for _, idx := range idxs {
			if s, _ := laneStride(idx, r); s == 1 {
				if u := largestDivisor(r.Size, 2*w, w, 4); u > 1 {
					opts = append(opts, Opt{Kind: OptUnroll, Axis: i, Amt: u})
				}
				break
			}
		}
	}
	return opts
}

// laneCount is the largest number of lanes one block of k computes under
// an upcast plan (global axes) and an unroll plan (reduce axes): each
// reduce repeats its body for the upcast lanes of the global axes it uses
// times its own unroll lanes; the stores for all upcast lanes. A reduce
// that does not use an upcast axis is one expression for all its lanes.
func laneCount(k *Kernel, upcast, unroll map[*Axis]int64) int64 {
	all := int64(1)
	for _, u := range upcast {
		all *= u
	}
	most := all
	Walk(k.Stores, func(e *Expr) {
		if e.Op != OpReduce {
			return
		}
		n := int64(1)
		for _, a := range e.Arg.(*ReduceArg).Axes {
			n *= max(unroll[a], 1)
		}
		used := map[*Axis]bool{}
		Walk([]*Expr{e}, func(x *Expr) {
			if x.Op == OpVar {
				used[x.Arg.(*Axis)] = true
			}
		})
		for a, u := range upcast {
			if used[a] {
				n *= u
			}
		}
		most = max(most, n)
	})
	return most
}
