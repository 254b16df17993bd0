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
	stored  map[*tensor.Node]bool           // window reduces refused by a kernel with a long reduce (below)
	joined  map[*tensor.Node][]*tensor.Node // per kernel root, this try: the reduces it took
	windows map[*tensor.Node][]*tensor.Node // per kernel root, this try: the window reduces inlined into it
	pro     map[*tensor.Node][]*tensor.Node // per kernel root, this try: the vectors joined as prologues (prologue.go)
	noPro   map[*tensor.Node]bool           // vectors a kernel could not compute as a prologue
}

func newRowKernels(opts Options) *rowKernels {
	return &rowKernels{on: opts.HoistReduces && !opts.NoFusion, refused: map[*tensor.Node]bool{}, stored: map[*tensor.Node]bool{}, noPro: map[*tensor.Node]bool{}}
}

// reset starts a try.
func (r *rowKernels) reset() {
	r.joined = map[*tensor.Node][]*tensor.Node{}
	r.windows = map[*tensor.Node][]*tensor.Node{}
	r.pro = map[*tensor.Node][]*tensor.Node{}
}

// inline notes reduce n inlined into (or joined to) the kernel of root:
// a window reduce (at most windowMax elements per value) may be refused
// once the kernel is lowered (windowBesideLong).
func (r *rowKernels) inline(n, root *tensor.Node) {
	if !r.on || root == nil || reduceLen(n) > windowMax {
		return
	}
	r.windows[root] = append(r.windows[root], n)
}

// symbolicReduce says whether reduce n sums over a dimension whose length
// depends on a variable.
func symbolicReduce(n *tensor.Node) bool {
	src := n.Src[0]
	for _, a := range n.Arg.([]int) {
		if a < len(src.Sym) && src.Sym[a].IsSym() {
			return true
		}
	}
	return false
}

// reduceLen is how many elements a reduce node sums into each value.
func reduceLen(n *tensor.Node) int {
	in, out := 1, 1
	for _, d := range n.Src[0].Shape {
		in *= d
	}
	for _, d := range n.Shape {
		out *= d
	}
	return max(in/max(out, 1), 1)
}

// join says whether reduce n, needed by the one kernel root only but
// computed more than once there unless stored, tentatively joins it.
func (r *rowKernels) join(n, root *tensor.Node) bool {
	if !r.on || r.refused[n] || r.stored[n] {
		return false
	}
	r.joined[root] = append(r.joined[root], n)
	r.inline(n, root)
	return true
}

// refuse checks the kernel lowered for root: if it took reduces that it
// would not compute once per value, they are refused (buffers from the
// next try on), or only those with the most values where the others run
// over a symbolic length (see below; the next try checks the rest), and
// refuse says so.
// A decode step's softmax joins its max and sum, one per head, while its
// scores, one per head and position, are stored: 3 kernels a layer
// become 1.
//
// It also refuses the window reduces inlined into a kernel that computes
// one per output value next to a long reduce (windowBesideLong).
func (r *rowKernels) refuse(root *tensor.Node, k *ir.Kernel) bool {
	refused := r.refusePrologues(root, k)
	if len(r.windows[root]) > 0 && windowBesideLong(k) {
		for _, n := range r.windows[root] {
			r.stored[n] = true
		}
		refused = true
	}
	if len(r.joined[root]) == 0 || computedOnce(k) {
		return refused
	}
	// Where the rest run over a length known only at launch (a decode
	// step's attended positions: a symbolic reduce is never unrolled into
	// lanes, so their kernels of their own would be scalar loops too),
	// refuse only the joined reduces with the most values (its scores,
	// one per head and position, beside the softmax's max and sum, one per
	// head): the next try checks the others. Elsewhere all are refused:
	// stored, the max and sum of a prompt's rows of fixed length run in
	// vectors across rows (a 128-token prefill's softmax: 0.49 ms a layer
	// in three kernels, 0.56-0.70 ms as one row kernel of scalar lanes).
	most := 0
	for _, n := range r.joined[root] {
		most = max(most, n.Numel())
	}
	partial := true
	for _, n := range r.joined[root] {
		partial = partial && (n.Numel() == most || symbolicReduce(n))
	}
	for _, n := range r.joined[root] {
		if !partial || n.Numel() == most {
			r.refused[n] = true
		}
	}
	return true
}

// Window reduces. A short reduce (at most windowMax elements: a max
// pool's count of the maxima in each 2x2 window, from its gradient) that a
// kernel computes once per output value saves no pass over memory by
// being inlined: stored, it costs one small buffer. In a kernel whose own
// reduce is long (a convolution's input gradient, register-blocked over
// 32 channels by 2 images) every lane of the block repeats the window's
// loads and compares in scalar code (the lanes are not contiguous in its
// input): measured on the MNIST cnn's conv3 input gradient, 46 % of the
// kernel's time, and the body it adds halves the lanes the heuristic
// gives the block (ir.laneBudget). Stored, the count is one vectorized
// pass over the pool's input and the convolution's epilogue a load.
const (
	windowMax = 16 // elements of a window reduce
	longMin   = 64 // iterations of a register-blocked reduce
)

// windowBesideLong says whether a kernel computes a reduce of at most
// windowMax iterations per output value (it reads every global axis),
// outside any other reduce's loop, next to a reduce of at least longMin
// iterations.
func windowBesideLong(k *ir.Kernel) bool {
	inLoop := map[*ir.Expr]bool{}
	ir.Walk(k.Stores, func(e *ir.Expr) {
		if e.Op == ir.OpReduce {
			ir.Walk(e.Src, func(x *ir.Expr) { inLoop[x] = true })
		}
	})
	long, window := false, false
	ir.Walk(k.Stores, func(e *ir.Expr) {
		if e.Op != ir.OpReduce {
			return
		}
		n := int64(1)
		for _, a := range e.Arg.(*ir.ReduceArg).Axes {
			n *= a.Size
		}
		long = long || n >= longMin
		window = window || n <= windowMax && !inLoop[e] && readsEveryGlobal(k, e)
	})
	return long && window
}

// readsEveryGlobal says whether expression e depends on every global axis
// of k longer than 1 (a value per output: nothing to hoist).
func readsEveryGlobal(k *ir.Kernel, e *ir.Expr) bool {
	used := map[*ir.Axis]bool{}
	ir.Walk([]*ir.Expr{e}, func(x *ir.Expr) {
		if x.Op == ir.OpVar {
			used[x.Arg.(*ir.Axis)] = true
		}
	})
	for _, a := range k.Global {
		if a.Size > 1 && !used[a] {
			return false
		}
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
		// An axis read only through a division (a pool's gradient reading
		// its window's value at (y/2, x/2)) repeats the value for
		// consecutive outputs: it would be computed again for each.
		for a := range used {
			ok = ok && !dividedOnly(e, a)
		}
	})
	return ok
}

// dividedOnly says whether axis a appears in e only inside the dividend of
// an integer division by a constant greater than 1.
func dividedOnly(e *ir.Expr, a *ir.Axis) bool {
	direct := false
	seen := map[*ir.Expr]bool{}
	var visit func(x *ir.Expr)
	visit = func(x *ir.Expr) {
		if direct || seen[x] {
			return
		}
		seen[x] = true
		switch {
		case x.Op == ir.OpVar:
			direct = direct || x.Arg.(*ir.Axis) == a
		case x.Op == ir.OpDiv && !x.DType.IsFloat() && len(x.Src) == 2 && bigConst(x.Src[1]):
			// the dividend's axes are read divided
		default:
			for _, s := range x.Src {
				visit(s)
			}
		}
	}
	visit(e)
	return !direct
}

// bigConst says whether e is an integer constant greater than 1.
func bigConst(e *ir.Expr) bool {
	c, ok := e.Arg.(int64)
	return e.Op == ir.OpConst && ok && c > 1
}
