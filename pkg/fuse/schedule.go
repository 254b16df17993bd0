// Package fuse is the scheduler: it decides which nodes of the tensor graph
// become buffers (kernel boundaries) and lowers everything between them into
// kernels of the kernel IR, folding movement ops into index expressions.
package fuse

import (
	"fmt"
	"strings"

	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// Item is one kernel launch of a schedule.
type Item struct {
	Kernel *ir.Kernel     // as lowered, before optimization passes
	Out    *tensor.Node   // the node whose buffer the kernel writes
	Args   []*tensor.Node // buffer nodes in kernel argument order; Args[0] == Out
	Rands  []*tensor.Node // random nodes whose (seed, counter) are the launch's vars, in order
}

// Schedule is the kernels that realize a set of outputs, in launch order.
type Schedule struct {
	Items   []*Item
	Outputs []*tensor.Node
}

// Options changes the fusion rule.
type Options struct {
	// NoFusion makes every computed node its own kernel (movement ops
	// still fold into loads). It exists to measure what fusion buys.
	NoFusion bool
	// HoistReduces lets a reduce whose value is broadcast back over the
	// rows it reduces (softmax's max and sum, layernorm's mean) join its
	// consumer's kernel when the kernel can compute it once per row: for
	// targets whose global axes are loops (C), where ir.Linearize hoists
	// it out of the inner ones. A row then comes from memory once and
	// stays in cache for the passes over it. (On a GPU grid every element
	// would compute it again.)
	HoistReduces bool
}

// recomputeLimit is the number of ALU ops a multi-use elementwise node may
// have and still be recomputed in each consumer rather than stored.
const recomputeLimit = 12

// expandedLimit is the cost (recomputeCost) an elementwise node read
// through an EXPAND inside a reduce loop may have and still be recomputed
// there: at most what the load of its stored value would cost, one ALU op.
const expandedLimit = 1

// Create schedules the outputs. Nodes already realized are inputs.
func Create(outputs []*tensor.Node, opts Options) (*Schedule, error) {
	order := tensor.Toposort(outputs)
	refused := map[*tensor.Node]bool{} // reduces a kernel could not compute once per row
	for {
		isBuf, hoisted := decideBuffers(order, outputs, opts, refused)
		s := &Schedule{Outputs: outputs}
		retry := false
		for _, n := range order {
			if n.Realized() == nil && isBuf[n] {
				it, err := lower(n, isBuf)
				if err != nil {
					return nil, err
				}
				if len(hoisted[n]) > 0 && !computedOnce(it.Kernel) {
					for _, r := range hoisted[n] {
						refused[r] = true
					}
					retry = true
				}
				s.Items = append(s.Items, it)
			}
		}
		if !retry {
			nameKernels(s.Items)
			return s, nil
		}
	}
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

// decideBuffers is the fusion rule. Walking from consumers to producers, a
// node becomes a buffer when it is an output or CONTIGUOUS; when it is a
// reduce whose value would be computed more than once (needed by more than
// one kernel, broadcast by an EXPAND above it in its kernel, or nested
// inside another reduce's loop); when it is an expensive elementwise
// node needed by more than one kernel; or when it is an elementwise node
// (or a random number) that an EXPAND inside a reduce's loop broadcasts
// and that costs more than the load of its stored value (recomputeCost):
// the reduce would compute it again for every output it is broadcast to
// (a matmul of Tensor.rand recomputes each hash N times). With
// HoistReduces, a reduce that would be a buffer only because it is
// broadcast or read inside another reduce's loop is tentatively inlined
// (hoisted lists them per kernel) and kept there when the kernel computes
// it once per row. Everything else is inlined into its
// consumer's kernel. Several uses inside one kernel at the same index cost
// nothing: the kernel IR interns them into one expression.
func decideBuffers(order []*tensor.Node, outputs []*tensor.Node, opts Options, refused map[*tensor.Node]bool) (isBuf map[*tensor.Node]bool, hoisted map[*tensor.Node][]*tensor.Node) {
	isBuf = map[*tensor.Node]bool{}
	hoisted = map[*tensor.Node][]*tensor.Node{} // per kernel root: the reduces it computes once per row
	for _, o := range outputs {
		isBuf[o] = true
	}
	cost := map[*tensor.Node]int{}
	for _, n := range order {
		if n.Realized() != nil || !n.Op.IsALU() {
			continue
		}
		c := 1
		for _, s := range n.Src {
			c += cost[s]
		}
		cost[n] = min(c, 1<<20)
	}
	dest := map[*tensor.Node]*tensor.Node{} // the one kernel (root) a node is inlined into
	multi := map[*tensor.Node]bool{}        // inlined into more than one kernel
	expanded := map[*tensor.Node]bool{}
	inReduce := map[*tensor.Node]bool{}
	expandedInReduce := map[*tensor.Node]bool{} // below an EXPAND inside a reduce's loop
	// The reduce axes of the reduce a node feeds through elementwise ops
	// alone (same shape), "" when there is none or several: an EXPAND that
	// broadcasts only along those axes (softmax's max inside its sum)
	// broadcasts a value the reduce's loop does not change, computed once
	// before the loop (ir.Linearize), so it recomputes nothing.
	loopAxes := map[*tensor.Node]string{}
	for i := len(order) - 1; i >= 0; i-- {
		n := order[i]
		if n.Realized() != nil {
			continue
		}
		switch {
		case isBuf[n], n.Op == ir.OpContiguous:
			isBuf[n] = true
		case n.Op.IsReduce():
			isBuf[n] = multi[n] || expanded[n] || inReduce[n]
			if isBuf[n] && !multi[n] && opts.HoistReduces && !refused[n] && !opts.NoFusion {
				// Tentatively in its consumer's kernel, computed once per
				// row there; Create checks that after lowering.
				isBuf[n] = false
				hoisted[dest[n]] = append(hoisted[dest[n]], n)
			}
		case n.Op.IsALU():
			isBuf[n] = multi[n] && cost[n] > recomputeLimit ||
				expandedInReduce[n] && recomputeCost(n) > expandedLimit
		case n.Op == ir.OpRand:
			// A random number is a hash of ~24 integer ops: broadcast
			// inside a reduce (Tensor.rand(N, N).dot(b)), it would be
			// hashed again for every output it meets.
			isBuf[n] = expandedInReduce[n]
		case n.Op == ir.OpPad:
			// A padded tensor read inside a reduce loop (a padded conv or
			// pool) is stored once: the reduce then reads plain memory
			// instead of testing bounds on every load, which lets the C
			// compiler vectorize it. Padding constants stays free. A pad
			// of a reduce (a gradient going back through a window view)
			// is not: the reduce is stored anyway (it is inside a reduce
			// loop too), at its own size, while the padded view can be
			// many times larger (the repeated windows of an overlapping
			// pool) with div/mod index math on every element.
			isBuf[n] = inReduce[n] && !constOnly(n.Src[0]) && !viewOfReduce(n.Src[0])
			// A stored pad of a reduce's elementwise epilogue (a conv's
			// BatchNorm and ReLU before the next, padded conv) stores the
			// epilogue at its own size first: otherwise the reduce runs
			// over the padded size with a bounds test on every output,
			// which keeps its kernel from vectorizing. The pad is then a
			// copy.
			if isBuf[n] && epilogueOfReduce(n.Src[0]) {
				isBuf[n.Src[0]] = true
			}
		}
		if opts.NoFusion && (n.Op.IsALU() || n.Op.IsReduce()) {
			isBuf[n] = true
		}
		myDest, myMulti := dest[n], multi[n]
		if isBuf[n] {
			myDest, myMulti = n, false
		}
		for _, s := range n.Src {
			if d, ok := dest[s]; ok && d != myDest {
				multi[s] = true
			}
			dest[s] = myDest
			multi[s] = multi[s] || myMulti
			expanded[s] = expanded[s] || n.Op == ir.OpExpand || (!isBuf[n] && expanded[n])
			inReduce[s] = inReduce[s] || n.Op.IsReduce() || (!isBuf[n] && inReduce[n])
			expandedInReduce[s] = expandedInReduce[s] || !isBuf[n] && (expandedInReduce[n] ||
				n.Op == ir.OpExpand && inReduce[n] && !broadcastsAlong(n, loopAxes[n]))
			if n.Op.IsReduce() || !isBuf[n] && inReduce[n] { // s is read inside a reduce's loop
				ax := ""
				if n.Op.IsReduce() {
					ax = fmt.Sprint(n.Arg)
				} else if n.Op.IsALU() {
					ax = loopAxes[n]
				}
				if old, seen := loopAxes[s]; seen && old != ax {
					ax = ""
				}
				loopAxes[s] = ax
			}
		}
	}
	return isBuf, hoisted
}

// broadcastsAlong says whether an EXPAND broadcasts only along the axes
// listed in axes (fmt.Sprint of a reduce's []int axes).
func broadcastsAlong(e *tensor.Node, axes string) bool {
	if axes == "" {
		return false
	}
	for d, size := range e.Shape {
		if e.Src[0].Shape[d] != size && !strings.Contains(" "+strings.Trim(axes, "[]")+" ", fmt.Sprintf(" %d ", d)) {
			return false
		}
	}
	return true
}

// recomputeCost is what computing an elementwise node again costs, in ALU
// ops, down to the buffers, reduces and random numbers it reads: casts,
// compares and movement ops are free (a load through them is still a plain
// load; a compare is the mask of a select),
// transcendental functions and divisions count 4, a random number 24 (its
// integer hash). Shared subexpressions count once, as the kernel IR
// interns them.
func recomputeCost(n *tensor.Node) int {
	seen := map[*tensor.Node]bool{}
	var walk func(n *tensor.Node) int
	walk = func(n *tensor.Node) int {
		if seen[n] || n.Realized() != nil {
			return 0
		}
		seen[n] = true
		c := 0
		switch {
		case n.Op == ir.OpRand:
			return 24
		case n.Op.IsReduce(), n.Op == ir.OpContiguous:
			return 0
		case n.Op == ir.OpCast, n.Op.IsMovement(), n.Op.IsCompare():
			// a compare becomes the mask of the WHERE it feeds: relu's
			// where(x>0, x, 0) is one select, like max(x, 0)
		case n.Op == ir.OpExp2, n.Op == ir.OpLog2, n.Op == ir.OpSin, n.Op == ir.OpSqrt, n.Op == ir.OpRecip,
			n.Op == ir.OpDiv && n.DType.IsFloat():
			c = 4
		case n.Op.IsALU():
			c = 1
		}
		for _, s := range n.Src {
			c += walk(s)
		}
		return min(c, 1<<20)
	}
	return walk(n)
}

// viewOfReduce reports whether n is an unrealized reduce seen through
// movement ops.
func viewOfReduce(n *tensor.Node) bool {
	for n.Realized() == nil && n.Op.IsMovement() {
		n = n.Src[0]
	}
	return n.Realized() == nil && n.Op.IsReduce()
}

// epilogueOfReduce reports whether n is elementwise ops and views over an
// unrealized reduce (searching a bounded part of its inputs).
func epilogueOfReduce(n *tensor.Node) bool {
	seen := map[*tensor.Node]bool{}
	var walk func(n *tensor.Node) bool
	walk = func(n *tensor.Node) bool {
		if seen[n] || len(seen) > 256 || n.Realized() != nil {
			return false
		}
		seen[n] = true
		switch {
		case n.Op.IsReduce():
			return true
		case n.Op == ir.OpPad || !(n.Op.IsALU() || n.Op.IsMovement()):
			return false
		}
		for _, s := range n.Src {
			if walk(s) {
				return true
			}
		}
		return false
	}
	return walk(n)
}

// constOnly reports whether a node is built from constants alone (no
// buffers, no random numbers): padding it costs nothing to recompute.
func constOnly(n *tensor.Node) bool {
	if n.Realized() != nil || n.Op == ir.OpRand {
		return false
	}
	for _, s := range n.Src {
		if !constOnly(s) {
			return false
		}
	}
	return true
}

// nameKernels gives each kernel its tinygrad-style name, made unique
// within the schedule with an n1, n2... suffix when names collide.
func nameKernels(items []*Item) {
	count := map[string]int{}
	for _, it := range items {
		base := it.Kernel.BaseName()
		c := count[base]
		count[base]++
		if c > 0 {
			base = fmt.Sprintf("%sn%d", base, c)
		}
		it.Kernel.Name = base
	}
}

// Dump prints a schedule: one line per kernel with its buffers.
func (s *Schedule) Dump() string {
	var sb strings.Builder
	for i, it := range s.Items {
		var args []string
		for j, a := range it.Args {
			role := "in"
			if j == 0 {
				role = "out"
			}
			args = append(args, fmt.Sprintf("%s:%s%s", role, a.DType, tensor.FormatShape(a.Shape)))
		}
		pos := ""
		if p := it.Out.Pos.String(); p != "" {
			pos = "  (" + p + ")"
		}
		fmt.Fprintf(&sb, "  %2d %-24s %s%s\n", i, it.Kernel.Name, strings.Join(args, " "), pos)
	}
	return sb.String()
}

// Params returns the runtime integer parameters (vars) of an item's launch.
func (it *Item) Params() []int64 {
	var p []int64
	for _, r := range it.Rands {
		ra := r.Arg.(tensor.RandArg)
		p = append(p, int64(ra.Seed), int64(ra.Counter))
	}
	return p
}
