package fuse

import (
	"fmt"
	"strings"

	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// The cost model for values broadcast inside a reduce. An elementwise
// node (or a random number) that an EXPAND inside a reduce's loop reads is
// computed again for every output it is broadcast to: Tensor.rand(N,
// N).dot(b) would hash each random number N times. Such a node is stored
// first unless recomputing it costs no more than loading its stored value
// (broadcastLimit); tinygrad too realizes expanded non-trivial inputs.

// broadcastLimit is the cost (recomputeCost) a node broadcast inside a
// reduce's loop may have and still be recomputed there: at most what the
// load of its stored value costs, one ALU op.
const broadcastLimit = 1

// broadcasts follows, while decideBuffers walks from consumers to
// producers, which nodes an EXPAND inside a reduce's loop reads.
type broadcasts struct {
	// inReduce: the node is read, in its kernel, through an EXPAND inside
	// a reduce's loop that recomputes it.
	inReduce map[*tensor.Node]bool
	// loopAxes is the reduce axes of the reduce whose loop reads the node
	// through elementwise ops alone (same shape), "" when there is none or
	// several. An EXPAND that broadcasts only along those axes (softmax's
	// max inside its sum) broadcasts a value the loop does not change,
	// which ir.Linearize computes once before the loop: no recomputation.
	loopAxes map[*tensor.Node]string
}

func newBroadcasts() *broadcasts {
	return &broadcasts{inReduce: map[*tensor.Node]bool{}, loopAxes: map[*tensor.Node]string{}}
}

// see records that n reads s (nStored: n is a buffer, so s is in another
// kernel; nInReduce: n is read inside a reduce's loop).
func (b *broadcasts) see(n, s *tensor.Node, nStored, nInReduce bool) {
	if !nStored {
		b.inReduce[s] = b.inReduce[s] || b.inReduce[n] ||
			n.Op == ir.OpExpand && nInReduce && !broadcastsAlong(n, b.loopAxes[n])
	}
	if n.Op.IsReduce() || !nStored && nInReduce { // s is read inside a reduce's loop
		ax := ""
		switch {
		case n.Op.IsReduce():
			ax = fmt.Sprint(n.Arg)
		case n.Op.IsALU():
			ax = b.loopAxes[n]
		case n.Op == ir.OpReshape:
			ax = reshapedLoopAxes(b.loopAxes[n], n.Shape, s.Shape)
		}
		if old, seen := b.loopAxes[s]; seen && old != ax {
			ax = ""
		}
		b.loopAxes[s] = ax
	}
}

// tooDear says whether n, an elementwise node or a random number, is
// broadcast inside a reduce's loop and costs more to recompute there than
// to load.
func (b *broadcasts) tooDear(n *tensor.Node) bool {
	return b.inReduce[n] && recomputeCost(n) > broadcastLimit
}

// reshapedLoopAxes maps a reduce's axes (in a reshape's output shape out)
// to the dimensions of its input shape in that vary only inside the
// reduced block: the reduced axes must be a suffix of out, of P elements,
// and a dimension of in qualifies when the span of its elements (its
// stride times its size) divides P. A quantized weight's per-block scale
// broadcast over the block's elements, then reshaped to the matmul's
// (rows, k), is such a value: the split_reduces pass gives the reduce its
// block structure and the scale is computed once per block.
func reshapedLoopAxes(axes string, out, in []int) string {
	if axes == "" {
		return ""
	}
	red := map[int]bool{}
	for _, f := range strings.Fields(strings.Trim(axes, "[]")) {
		var a int
		if _, err := fmt.Sscan(f, &a); err != nil {
			return ""
		}
		red[a] = true
	}
	p, j := 1, len(out)-1
	for ; j >= 0 && red[j]; j-- {
		p *= out[j]
	}
	if j+1+len(red) != len(out) || p <= 1 {
		return "" // not a suffix
	}
	var dims []int
	stride := 1
	for d := len(in) - 1; d >= 0; d-- {
		if span := stride * in[d]; p%span == 0 {
			dims = append([]int{d}, dims...)
		}
		stride *= in[d]
	}
	if len(dims) == 0 {
		return ""
	}
	return fmt.Sprint(dims)
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
// load; a compare is the mask of a select), transcendental functions and
// divisions count 4, a random number 24 (its integer hash). Position math
// is free too: the cheap ops of a value computed from constants alone,
// reading no buffer (an arange, a one-hot's lane numbers), are index
// arithmetic that the kernel IR's simplifier folds into the loop
// variables, while storing it would add a load and, for a one-hot
// compare, hide the gather (ir/gather.go). Shared subexpressions count
// once, as the kernel IR interns them.
func recomputeCost(n *tensor.Node) int {
	seen := map[*tensor.Node]bool{}
	pos := map[*tensor.Node]bool{}
	var positional func(n *tensor.Node) bool
	positional = func(n *tensor.Node) bool {
		if v, ok := pos[n]; ok {
			return v
		}
		v := n.Realized() == nil && (n.Op == ir.OpConst || n.Op.IsMovement() || n.Op.IsALU())
		for _, s := range n.Src {
			v = v && positional(s)
		}
		pos[n] = v
		return v
	}
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
		case n.Op == ir.OpCast, n.Op == ir.OpBitcast, n.Op.IsMovement(), n.Op.IsCompare():
			// a compare becomes the mask of the WHERE it feeds: relu's
			// where(x>0, x, 0) is one select, like max(x, 0)
		case n.Op == ir.OpExp2, n.Op == ir.OpLog2, n.Op == ir.OpSin, n.Op == ir.OpSqrt, n.Op == ir.OpRecip,
			n.Op == ir.OpDiv && n.DType.IsFloat():
			c = 4
		case n.Op.IsALU() && positional(n):
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
