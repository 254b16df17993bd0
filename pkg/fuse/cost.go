package fuse

import (
	"fmt"
	"slices"
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
	// oneHot: a WHERE summed as a one-hot lookup (oneHotSum), whose value
	// arm the kernel reads as a gather. gathered: the node is read in its
	// kernel through such an arm only (plain: through another path too).
	oneHot, gathered, plain map[*tensor.Node]bool
}

func newBroadcasts() *broadcasts {
	return &broadcasts{inReduce: map[*tensor.Node]bool{}, loopAxes: map[*tensor.Node]string{},
		oneHot: map[*tensor.Node]bool{}, gathered: map[*tensor.Node]bool{}, plain: map[*tensor.Node]bool{}}
}

// reduce records a reduce before its sources are seen: a one-hot sum's
// value arm is a gather (oneHotSum).
func (b *broadcasts) reduce(r *tensor.Node) {
	if w := oneHotSum(r); w != nil {
		b.oneHot[w] = true
	}
}

// see records that n reads s (nStored: n is a buffer, so s is in another
// kernel; nInReduce: n is read inside a reduce's loop).
func (b *broadcasts) see(n, s *tensor.Node, nStored, nInReduce bool) {
	if !nStored {
		// The value arm of a one-hot sum is read once per output, at the
		// row its index selects (ir/gather.go): an EXPAND in it that
		// broadcasts a table over the lookups recomputes nothing.
		if b.oneHot[n] && s == n.Src[1] || b.gathered[n] && !b.plain[n] {
			b.gathered[s] = true
			return
		}
		b.plain[s] = true
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
		case n.Op == ir.OpPermute:
			// x @ w.T reads w through a transpose: the axes are s's own
			ax = permutedLoopAxes(b.loopAxes[n], n.Arg.([]int))
		}
		if old, seen := b.loopAxes[s]; seen && old != ax {
			ax = ""
		}
		b.loopAxes[s] = ax
	}
}

// oneHotSum returns the WHERE of a one-hot sum r, sum over k of
// where(e == p, x, 0), where p is position math (an arange) that varies
// along k alone and e (the index, a token read from memory) does not vary
// along the reduced axes: ir's gather rule turns its kernel into a load of
// x at the row e selects, so x is not recomputed for every row of the
// table. It returns nil for anything else. The kernel IR's rule needs p to
// be the loop variable itself; a p that is position math but not that
// (an arange with a start or a step) keeps the sum, which then computes x
// for every row.
func oneHotSum(r *tensor.Node) *tensor.Node {
	if r.Op != ir.OpSum || r.Realized() != nil {
		return nil
	}
	w := r.Src[0]
	if w.Op != ir.OpWhere || w.Realized() != nil || !isZero(w.Src[2]) {
		return nil
	}
	c := w.Src[0]
	for c.Realized() == nil && c.Op == ir.OpExpand {
		c = c.Src[0] // the same rank: dimensions stay w's
	}
	if c.Realized() != nil || c.Op != ir.OpCmpEq || len(c.Shape) != len(w.Shape) {
		return nil
	}
	reduced := map[int]bool{}
	for _, a := range r.Arg.([]int) {
		reduced[a] = true
	}
	for side := range 2 {
		p, e := c.Src[side], c.Src[1-side]
		if !positional(p, map[*tensor.Node]bool{}) || positional(e, map[*tensor.Node]bool{}) {
			continue
		}
		pv, ev := varies(p), varies(e)
		k := -1
		for d, v := range pv {
			switch {
			case !v:
			case k >= 0 || !reduced[d]:
				k = -2 // p varies along a second dimension, or a kept one
			default:
				k = d
			}
		}
		if k < 0 {
			continue
		}
		independent := true
		for d := range reduced {
			independent = independent && !ev[d]
		}
		if independent {
			return w
		}
	}
	return nil
}

// isZero reports whether n is the constant 0 (through movement ops).
func isZero(n *tensor.Node) bool {
	for n.Realized() == nil && n.Op.IsMovement() {
		n = n.Src[0]
	}
	if n.Realized() != nil || n.Op != ir.OpConst {
		return false
	}
	f, i := n.ConstValue()
	return f == 0 && i == 0
}

// varies says along which dimensions of n its value changes, an
// over-approximation: a dimension of size 1 never, an EXPAND's
// broadcast dimensions not, a RESHAPE that only adds or drops dimensions
// of size 1 keeps its source's, elementwise ops take their sources'
// union; anything else (a buffer, a reduce, other movement) may vary
// along every dimension.
func varies(n *tensor.Node) []bool {
	v := make([]bool, len(n.Shape))
	all := func() []bool {
		for d, size := range n.Shape {
			v[d] = size > 1
		}
		return v
	}
	if n.Realized() != nil {
		return all()
	}
	switch {
	case n.Op == ir.OpConst:
		return v
	case n.Op == ir.OpExpand:
		sv := varies(n.Src[0])
		for d := range v {
			v[d] = sv[d] && n.Src[0].Shape[d] == n.Shape[d]
		}
		return v
	case n.Op == ir.OpReshape:
		sv := varies(n.Src[0])
		var src []int // the source's dimensions of size > 1, in order
		for d, size := range n.Src[0].Shape {
			if size > 1 {
				src = append(src, d)
			}
		}
		j := 0
		for d, size := range n.Shape {
			if size == 1 {
				continue
			}
			if j >= len(src) || n.Src[0].Shape[src[j]] != size {
				return all()
			}
			v[d] = sv[src[j]]
			j++
		}
		if j != len(src) {
			return all()
		}
		return v
	case n.Op.IsALU():
		for _, s := range n.Src {
			if len(s.Shape) != len(n.Shape) {
				return all()
			}
			for d, x := range varies(s) {
				v[d] = v[d] || x
			}
		}
		return v
	}
	return all()
}

// tooDear says whether n, an elementwise node or a random number, is
// broadcast inside a reduce's loop and costs more to recompute there than
// to load.
func (b *broadcasts) tooDear(n *tensor.Node) bool {
	return b.inReduce[n] && recomputeCost(n) > broadcastLimit
}

// loopAxesOf parses a reduce's axes as fmt.Sprint prints them ("[1 2]").
func loopAxesOf(axes string) ([]int, bool) {
	var out []int
	for _, f := range strings.Fields(strings.Trim(axes, "[]")) {
		var a int
		if _, err := fmt.Sscan(f, &a); err != nil {
			return nil, false
		}
		out = append(out, a)
	}
	return out, len(out) > 0
}

// permutedLoopAxes maps a reduce's axes (of a permute's output) to the
// permute's input: output dimension a is input dimension perm[a].
func permutedLoopAxes(axes string, perm []int) string {
	red, ok := loopAxesOf(axes)
	if !ok {
		return ""
	}
	in := make([]int, 0, len(red))
	for _, a := range red {
		if a < 0 || a >= len(perm) {
			return ""
		}
		in = append(in, perm[a])
	}
	slices.Sort(in)
	return fmt.Sprint(in)
}

// reshapedLoopAxes maps a reduce's axes (in a reshape's output shape out)
// to the dimensions of its input shape in that vary only inside the
// reduced block: the reduced axes must be a suffix of out, of P elements,
// and a dimension of in qualifies when the span of its elements (its
// stride times its size) divides P. A quantized weight's per-block scale
// broadcast over the block's elements, then reshaped to the matmul's
// (rows, k), is such a value: the split_reduces pass gives the reduce its
// block structure and the scale is computed once per block. A reshape
// that only adds or drops dimensions of size 1 (x @ w.T's view of w.T)
// keeps the axes wherever they are.
func reshapedLoopAxes(axes string, out, in []int) string {
	axs, ok := loopAxesOf(axes)
	if !ok {
		return ""
	}
	if m, ok := squeezeMap(out, in); ok {
		var dims []int
		for _, a := range axs {
			if a >= 0 && a < len(m) && m[a] >= 0 {
				dims = append(dims, m[a])
			}
		}
		if len(dims) == 0 {
			return ""
		}
		return fmt.Sprint(dims)
	}
	red := map[int]bool{}
	for _, a := range axs {
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

// squeezeMap maps each dimension of out to the dimension of in that it
// is (-1 for one of size 1) when out and in differ only by dimensions of
// size 1; ok is false otherwise.
func squeezeMap(out, in []int) (m []int, ok bool) {
	m = make([]int, len(out))
	j := 0
	for a, size := range out {
		m[a] = -1
		if size == 1 {
			continue
		}
		for j < len(in) && in[j] == 1 {
			j++
		}
		if j == len(in) || in[j] != size {
			return nil, false
		}
		m[a] = j
		j++
	}
	for ; j < len(in); j++ {
		if in[j] != 1 {
			return nil, false
		}
	}
	return m, true
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
		case n.Op.IsALU() && positional(n, pos):
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

// positional reports whether n is position math: constants, movement and
// elementwise ops, no buffer or random number (memo caches the answers).
func positional(n *tensor.Node, memo map[*tensor.Node]bool) bool {
	if v, ok := memo[n]; ok {
		return v
	}
	v := n.Realized() == nil && (n.Op == ir.OpConst || n.Op.IsMovement() || n.Op.IsALU())
	for _, s := range n.Src {
		v = v && positional(s, memo)
	}
	memo[n] = v
	return v
}
