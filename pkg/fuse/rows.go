package fuse

import (
	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// Row kernels (Options.HoistReduces, on targets whose global axes are
// loops): a reduce that would be a buffer only because it is broadcast
// back over the rows it reduces, or read inside another reduce's loop
// (softmax's max and sum, layernorm's mean and variance), joins its
// consumer's kernel when that kernel computes it once per row; ir.Linearize
// hoists it out of the inner global loops (ir.Program.Hoisted), so
//
//	for row: m = max(x[row,:]); s = sum(exp(x[row,:]-m)); for col: out = exp(x[row,col]-m)/s
//
// reads each row from memory once. Whether the kernel does is known only
// after lowering: Create lowers, and a kernel that would compute a joined
// reduce more than once refuses it (it becomes a buffer again and the
// schedule is redone).

// rowKernels is Create's state across tries.
type rowKernels struct {
	on      bool
	refused map[*tensor.Node]bool           // reduces a kernel could not compute once per row
	joined  map[*tensor.Node][]*tensor.Node // per kernel root, this try: the reduces it took
}

func newRowKernels(opts Options) *rowKernels {
	return &rowKernels{on: opts.HoistReduces && !opts.NoFusion, refused: map[*tensor.Node]bool{}}
}

// reset starts a try.
func (r *rowKernels) reset() { r.joined = map[*tensor.Node][]*tensor.Node{} }

// join says whether reduce n, needed by the one kernel root only but
// computed more than once there unless stored, tentatively joins it.
func (r *rowKernels) join(n, root *tensor.Node) bool {
	if !r.on || r.refused[n] {
		return false
	}
	r.joined[root] = append(r.joined[root], n)
	return true
}

// refuse checks the kernel lowered for root: if it took reduces that it
// would not compute once per value, they are refused (buffers from the
// next try on) and refuse says so.
func (r *rowKernels) refuse(root *tensor.Node, k *ir.Kernel) bool {
	if len(r.joined[root]) == 0 || computedOnce(k) {
		return false
	}
	for _, n := range r.joined[root] {
		r.refused[n] = true
	}
	return true
}

// computedOnce says whether every reduce of a kernel is computed once per
// value: at the top level (not inside another reduce's loop, which would
// compute it again each iteration), and depending on a leading run of the
// global axes, so that hoisted out of the rest (ir.Program.Hoisted) it is
// not computed again for each value of an outer axis it does not use
// (BatchNorm's per-channel mean in a kernel over batch, channel, row,
// column).
func computedOnce(k *ir.Kernel) bool {
	p := ir.Linearize(k)
	ok := true
	ir.Walk(k.Stores, func(e *ir.Expr) {
		if e.Op != ir.OpReduce || !ok {
			return
		}
		if p.Place[e] != nil {
			ok = false
			return
		}
		used := map[*ir.Axis]bool{}
		ir.Walk([]*ir.Expr{e}, func(x *ir.Expr) {
			if x.Op == ir.OpVar {
				used[x.Arg.(*ir.Axis)] = true
			}
		})
		last := -1
		for i, a := range k.Global {
			if used[a] {
				last = i
			}
		}
		for _, a := range k.Global[:last+1] {
			ok = ok && used[a]
		}
	})
	return ok
}
