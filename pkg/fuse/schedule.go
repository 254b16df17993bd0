// Package fuse is the scheduler: it decides which nodes of the tensor graph
// become buffers (kernel boundaries) and lowers everything between them into
// kernels of the kernel IR, folding movement ops into index expressions.
package fuse

import (
	"fmt"
	"slices"
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
	// Vars are the variables whose values are the first vars of the
	// launch (before the random streams'), in order.
	Vars []tensor.Variable
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

// Create schedules the outputs. Nodes already realized are inputs.
func Create(outputs []*tensor.Node, opts Options) (*Schedule, error) {
	order := tensor.Toposort(outputs)
	rows := newRowKernels(opts)
	for {
		isBuf := decideBuffers(order, outputs, opts, rows)
		s := &Schedule{Outputs: outputs}
		retry := false
		for _, n := range order {
			if n.Realized() == nil && isBuf[n] {
				it, err := lower(n, isBuf)
				if err != nil {
					return nil, err
				}
				retry = rows.refuse(n, it.Kernel) || retry
				s.Items = append(s.Items, it)
			}
		}
		if !retry {
			nameKernels(s.Items)
			return s, nil
		}
	}
}

// decideBuffers is the fusion rule. Walking from consumers to producers, a
// node becomes a buffer when it is an output or CONTIGUOUS; when it is a
// reduce whose value would be computed more than once (needed by more than
// one kernel, broadcast by an EXPAND above it in its kernel, nested
// inside another reduce's loop, or read at two indices in its kernel),
// unless it joins a row kernel (rows.go), or a window reduce that the
// kernel of a long reduce refused (rows.go);
// when it is an expensive elementwise node needed by more than one
// kernel; or when it is an elementwise node (or a random number) that an
// EXPAND inside a reduce's loop broadcasts and that costs more than the
// load of its stored value (cost.go). Everything else is inlined into its
// consumer's kernel. Several uses inside one kernel at the same index cost
// nothing: the kernel IR interns them into one expression.
func decideBuffers(order []*tensor.Node, outputs []*tensor.Node, opts Options, rows *rowKernels) map[*tensor.Node]bool {
	isBuf := map[*tensor.Node]bool{}
	rows.reset()
	for _, o := range outputs {
		isBuf[o] = true
	}
	cost := map[*tensor.Node]int{}
	for _, n := range order {
		if n.Realized() != nil || !n.Op.IsALU() {
			continue
		}
		if tableEntry(n) {
			// where(key == i, v, rest): one entry of a lookup table (IQ4's
			// grid of 16 values over a nibble), which the renderer reads
			// as one permute for the whole chain; its compare is free
			cost[n] = cost[n.Src[2]]
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
	window := map[*tensor.Node]int{} // the most elements a reduce whose loop reads the node sums per output
	// paths counts the different index maps a node is read through in its
	// kernel: once at its own index (ident), plus each view that moves its
	// elements (SHRINK, PERMUTE, FLIP, PAD; a RESHAPE keeps the order).
	ident := map[*tensor.Node]bool{}
	views := map[*tensor.Node]int{}
	paths := func(n *tensor.Node) int {
		p := views[n]
		if ident[n] {
			p++
		}
		return p
	}
	bc := newBroadcasts() // what an EXPAND inside a reduce's loop reads (cost.go)
	// pro: the node is computed in its kernel's prologue (prologue.go),
	// once per launch, with what it reads down to buffers: not recomputed
	// by the reduce whose loop reads it.
	pro := map[*tensor.Node]bool{}
	proExpanded := map[*tensor.Node]bool{} // read in a prologue through an EXPAND in it
	for i := len(order) - 1; i >= 0; i-- {
		n := order[i]
		if n.Realized() != nil {
			continue
		}
		switch {
		case isBuf[n], n.Op == ir.OpContiguous:
			isBuf[n] = true
		case n.Op.IsReduce():
			// Stored unless computed once where it is inlined; read at
			// two indices in one kernel (a RoPE pair) it would be computed
			// twice.
			isBuf[n] = multi[n] || expanded[n] || inReduce[n] || paths(n) > 1 || rows.stored[n]
			// In a prologue only the reduces broadcast over its vector
			// (RMSNorm's mean) join: one with a value per element (a
			// product the vector adds to the residual) is stored.
			joins := !pro[n] || proExpanded[n]
			if isBuf[n] && joins && !multi[n] && paths(n) <= 1 && rows.join(n, dest[n]) {
				isBuf[n] = false // its one consumer computes it once per row (rows.go)
			} else if !isBuf[n] {
				rows.inline(n, dest[n]) // a window reduce may be refused (rows.go)
			}
		case n.Op.IsALU():
			isBuf[n] = multi[n] && cost[n] > recomputeLimit || bc.tooDear(n)
			if isBuf[n] && !multi[n] && !pro[n] && rows.prologue(n, dest[n]) {
				// a small vector computed once per launch before the
				// rows that read it (prologue.go)
				isBuf[n], pro[n] = false, true
			}
		case n.Op == ir.OpRand:
			isBuf[n] = bc.tooDear(n) // a hash of ~24 integer ops
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
			//
			// Not for a window of fewer than smallWindow elements (a
			// pool's 3x3): such a reduce reads each element about once, so the
			// copy would double its traffic, and its loads vectorize along
			// the channels under a guard that is the same for every lane
			// (ResNet's stem pool: a 26.6 MB padded copy, 1.7 ms, before a
			// 2 ms pool).
			isBuf[n] = inReduce[n] && window[n] >= smallWindow && !constOnly(n.Src[0]) && !viewOfReduce(n.Src[0])
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
		if n.Op.IsReduce() {
			bc.reduce(n)
		}
		myDest, myMulti := dest[n], multi[n]
		if isBuf[n] {
			myDest, myMulti = n, false
		}
		for j, s := range n.Src {
			if !slices.Contains(n.Src[:j], s) {
				switch {
				case isBuf[n] && n.Op != ir.OpPad, n.Op == ir.OpExpand, !n.Op.IsMovement():
					ident[s] = true
				case n.Op == ir.OpReshape:
					ident[s] = ident[s] || ident[n]
					views[s] += views[n]
				default:
					views[s] += max(1, paths(n))
				}
			}
			if d, ok := dest[s]; ok && d != myDest {
				multi[s] = true
			}
			dest[s] = myDest
			multi[s] = multi[s] || myMulti
			expanded[s] = expanded[s] || n.Op == ir.OpExpand || (!isBuf[n] && expanded[n])
			inReduce[s] = inReduce[s] || n.Op.IsReduce() || (!isBuf[n] && inReduce[n])
			if n.Op.IsReduce() {
				window[s] = max(window[s], reduceLen(n))
			} else if !isBuf[n] {
				window[s] = max(window[s], window[n])
			}
			if pro[n] && !isBuf[n] {
				pro[s] = true
				proExpanded[s] = proExpanded[s] || proExpanded[n] && !n.Op.IsReduce() || n.Op == ir.OpExpand
			}
			bc.see(n, s, isBuf[n] || pro[n], inReduce[n])
		}
	}
	return isBuf
}

// smallWindow bounds the reduces (elements per output) whose padded input
// is read in place, under the padding's guard, rather than stored padded:
// a pool's window, fewer than 16. Longer ones (a convolution's kh·kw·Cin)
// are register-blocked sums (ir's searchable kernels) that read each
// element many times, and whose blocked guarded loads Verify cannot always
// bound.
const smallWindow = 16

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

// tableEntry reports whether n selects a constant where a value equals a
// constant, and something else otherwise: a link of a lookup's chain.
func tableEntry(n *tensor.Node) bool {
	if n.Op != ir.OpWhere || !constOnly(n.Src[1]) {
		return false
	}
	c := n.Src[0]
	for c.Realized() == nil && c.Op.IsMovement() {
		c = c.Src[0]
	}
	return c.Realized() == nil && c.Op == ir.OpCmpEq && (constOnly(c.Src[0]) || constOnly(c.Src[1]))
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

// Params returns the runtime integer parameters (vars) of an item's
// launch: its variables' values (vals), then each random tensor's seed
// and counter.
func (it *Item) Params(vals map[tensor.Variable]int) []int64 {
	var p []int64
	for _, v := range it.Vars {
		p = append(p, int64(vals[v]))
	}
	for _, r := range it.Rands {
		ra := r.Arg.(tensor.RandArg)
		p = append(p, int64(ra.Seed), int64(ra.Counter))
	}
	return p
}
