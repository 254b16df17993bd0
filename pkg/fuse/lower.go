package fuse

import (
	"fmt"
	"strings"

	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// lowerer turns the subgraph between one buffer node (the root, which the
// kernel stores) and the buffers it reads into kernel IR. It walks from the
// root to the sources carrying one index expression per dimension: movement
// ops rewrite the indices, a PAD adds a validity condition, a REDUCE opens
// loops of its own, and a buffer becomes a load.
type lowerer struct {
	b       *ir.Builder
	root    *tensor.Node
	isBuf   map[*tensor.Node]bool
	args    []*tensor.Node
	argIdx  map[*tensor.Node]int
	rands   []*tensor.Node
	nextAx  int
	reduces int
	// memo makes lowering a node at the same indices return the same
	// expression: without it a reduce reached by two paths (relu's x>0 and
	// x) would be lowered, and computed, twice with loops of its own.
	memo map[string]*ir.Expr
}

func lower(root *tensor.Node, isBuf map[*tensor.Node]bool) (*Item, error) {
	l := &lowerer{b: ir.NewBuilder(), root: root, isBuf: isBuf, argIdx: map[*tensor.Node]int{}, memo: map[string]*ir.Expr{}}
	l.arg(root)
	var global []*ir.Axis
	idx := make([]*ir.Expr, len(root.Shape))
	for d, size := range root.Shape {
		if size == 1 {
			idx[d] = l.b.Int(0)
			continue
		}
		ax := &ir.Axis{ID: l.nextAx, Size: int64(size), Kind: ir.AxisGlobal}
		l.nextAx++
		global = append(global, ax)
		idx[d] = l.b.Var(ax)
	}
	if root.Numel() == 0 {
		return nil, fmt.Errorf("cannot realize an empty tensor %s", root)
	}
	if len(global) == 0 { // a scalar result still gets one loop (the ABI splits it)
		ax := &ir.Axis{ID: 0, Size: 1, Kind: ir.AxisGlobal}
		l.nextAx++
		global = append(global, ax)
	}
	val := l.expr(root, idx, nil, true)
	val = l.b.Cast(storageDType(root.DType), val)
	store := l.b.Store(0, linearIndex(l.b, idx, root.Shape), val)
	k := &ir.Kernel{Global: global, Stores: []*ir.Expr{store}, NumParams: 2 * len(l.rands), B: l.b}
	for i, a := range l.args {
		k.Bufs = append(k.Bufs, ir.BufParam{DType: a.DType, Size: int64(a.Numel()), Output: i == 0})
	}
	return &Item{Kernel: k, Out: root, Args: l.args, Rands: l.rands}, nil
}

// storageDType is how values of a dtype are stored (all are stored as is).
func storageDType(dt ir.DType) ir.DType { return dt }

// computeDType is the dtype arithmetic happens in: the 16-bit floats are
// storage types computed in float32.
func computeDType(dt ir.DType) ir.DType { return dt.Compute() }

func (l *lowerer) arg(n *tensor.Node) int {
	if i, ok := l.argIdx[n]; ok {
		return i
	}
	l.argIdx[n] = len(l.args)
	l.args = append(l.args, n)
	return len(l.args) - 1
}

// linearIndex is the row-major offset of idx in shape.
func linearIndex(b *ir.Builder, idx []*ir.Expr, shape []int) *ir.Expr {
	strides := make([]int64, len(shape))
	stride := int64(1)
	for d := len(shape) - 1; d >= 0; d-- {
		strides[d] = stride
		stride *= int64(shape[d])
	}
	lin := b.Int(0)
	for d := range shape {
		lin = b.Add(lin, b.Mul(idx[d], b.Int(strides[d])))
	}
	return lin
}

// expr lowers node n at per-dimension indices idx; valid (nil = always) is
// the condition under which the element is read at all (from PADs above),
// used to guard loads against out-of-range reads.
func (l *lowerer) expr(n *tensor.Node, idx []*ir.Expr, valid *ir.Expr, isRoot bool) *ir.Expr {
	// Index expressions are interned, so their pointers identify them.
	var sb strings.Builder
	fmt.Fprintf(&sb, "%p|%p|%t", n, valid, isRoot)
	for _, i := range idx {
		fmt.Fprintf(&sb, "|%p", i)
	}
	key := sb.String()
	if e, ok := l.memo[key]; ok {
		return e
	}
	e := l.lowerNode(n, idx, valid, isRoot)
	l.memo[key] = e
	return e
}

func (l *lowerer) lowerNode(n *tensor.Node, idx []*ir.Expr, valid *ir.Expr, isRoot bool) *ir.Expr {
	b := l.b
	if !isRoot && (n.Realized() != nil || l.isBuf[n]) {
		i := l.arg(n)
		return b.Load(i, n.DType, linearIndex(b, idx, n.Shape), valid)
	}
	switch op := n.Op; {
	case op == ir.OpConst:
		f, i := n.ConstValue()
		if n.DType.IsFloat() {
			return b.Const(n.DType, f)
		}
		return b.ConstInt(n.DType, i)
	case op == ir.OpRand:
		seed := b.Param(2 * len(l.rands))
		ctr := b.Param(2*len(l.rands) + 1)
		l.rands = append(l.rands, n)
		return b.Rand(linearIndex(b, idx, n.Shape), seed, ctr)
	case op == ir.OpContiguous:
		return l.expr(n.Src[0], idx, valid, false)
	case op == ir.OpCast:
		x := l.expr(n.Src[0], idx, valid, false)
		return b.Cast(n.DType, x)
	case op == ir.OpBitcast:
		x := l.expr(n.Src[0], idx, valid, false)
		return b.Bitcast(n.DType, x)
	case op.IsALU():
		dt := computeDType(n.DType)
		src := make([]*ir.Expr, len(n.Src))
		for i, s := range n.Src {
			src[i] = l.expr(s, idx, valid, false)
			if !(op == ir.OpWhere && i == 0) && !op.IsCompare() {
				src[i] = b.Cast(dt, src[i])
			} else if op.IsCompare() {
				src[i] = b.Cast(computeDType(s.DType), src[i])
			}
		}
		return b.Cast(n.DType, b.Alu(op, src...))
	case op.IsReduce():
		return l.reduce(n, idx, valid)
	case op.IsMovement():
		return l.movement(n, idx, valid)
	}
	panic(fmt.Sprintf("fuse: cannot lower %s", n))
}

func (l *lowerer) reduce(n *tensor.Node, idx []*ir.Expr, valid *ir.Expr) *ir.Expr {
	src := n.Src[0]
	in := make([]*ir.Expr, len(idx))
	copy(in, idx)
	arg := &ir.ReduceArg{Op: n.Op}
	for _, a := range n.Arg.([]int) {
		ax := &ir.Axis{ID: l.reduces, Size: int64(src.Shape[a]), Kind: ir.AxisReduce}
		l.reduces++
		arg.Axes = append(arg.Axes, ax)
		in[a] = l.b.Var(ax)
	}
	v := l.expr(src, in, valid, false)
	return l.b.Reduce(arg, l.b.Cast(computeDType(n.DType), v))
}

func (l *lowerer) movement(n *tensor.Node, idx []*ir.Expr, valid *ir.Expr) *ir.Expr {
	b := l.b
	src := n.Src[0]
	in := make([]*ir.Expr, len(src.Shape))
	switch n.Op {
	case ir.OpReshape:
		clamped := make([]*ir.Expr, len(idx))
		for d, i := range idx {
			clamped[d] = clampIndex(b, i, n.Shape[d])
		}
		lin := linearIndex(b, clamped, n.Shape)
		stride := int64(1)
		for d := len(src.Shape) - 1; d >= 0; d-- {
			in[d] = b.Mod(b.Div(lin, b.Int(stride)), b.Int(int64(src.Shape[d])))
			stride *= int64(src.Shape[d])
		}
	case ir.OpPermute:
		for i, a := range n.Arg.([]int) {
			in[a] = idx[i]
		}
	case ir.OpExpand:
		for d := range in {
			if src.Shape[d] == 1 {
				in[d] = b.Int(0)
			} else {
				in[d] = idx[d]
			}
		}
	case ir.OpShrink:
		for d, r := range n.Arg.([][2]int) {
			in[d] = b.Add(idx[d], b.Int(int64(r[0])))
		}
	case ir.OpFlip:
		copy(in, idx)
		for _, a := range n.Arg.([]int) {
			in[a] = b.Sub(b.Int(int64(src.Shape[a]-1)), idx[a])
		}
	case ir.OpPad:
		var cond *ir.Expr
		for d, p := range n.Arg.([][2]int) {
			in[d] = b.Sub(idx[d], b.Int(int64(p[0])))
			if p == [2]int{} {
				continue
			}
			inside := b.And(b.Lt(b.Int(int64(p[0]-1)), idx[d]), b.Lt(idx[d], b.Int(int64(p[0]+src.Shape[d]))))
			cond = b.And(cond, inside)
		}
		x := l.expr(src, in, b.And(valid, cond), false)
		if cond == nil {
			return x
		}
		return b.Where(cond, x, b.Const(x.DType, 0))
	}
	return l.expr(src, in, valid, false)
}

// clampIndex limits an index to [0, size). An index outside that range
// comes from a PAD above and is only read under the PAD's guard, so
// clamping changes no value read; it gives the index its true bounds. A
// RESHAPE needs them: linearizing an index whose bounds spill into the
// next dimension (the gradient of a window view, whose pads undo the
// shrinks of the repeated input) leaves carries between dimensions that
// no div/mod rule can remove, and every load pays for them.
func clampIndex(b *ir.Builder, i *ir.Expr, size int) *ir.Expr {
	if i.Min < 0 {
		i = b.Alu(ir.OpMax, i, b.Int(0))
	}
	if i.Max >= int64(size) { // i < size where it is read: i%size is i
		i = b.Mod(i, b.Int(int64(size)))
	}
	return i
}
