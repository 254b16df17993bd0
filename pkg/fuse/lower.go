package fuse

import (
	"fmt"
	"slices"
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
	vars    []tensor.Variable // the kernel's variables: vars[0..len) of its launch
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
	// An assign into a view loops over the view and stores through it.
	loopNode := root
	view := root.AssignView()
	if view != nil {
		loopNode = view
	}
	var global []*ir.Axis
	dims := loopNode.Dims()
	idx := make([]*ir.Expr, len(dims))
	for d, size := range dims {
		if size == tensor.Int(1) {
			idx[d] = l.b.Int(0)
			continue
		}
		ax := &ir.Axis{ID: l.nextAx, Size: int64(size.Max()), Kind: ir.AxisGlobal, Sym: l.symBound(size)}
		l.nextAx++
		global = append(global, ax)
		idx[d] = l.b.Var(ax)
	}
	if loopNode.Numel() == 0 {
		return nil, fmt.Errorf("cannot realize an empty tensor %s", root)
	}
	if len(global) == 0 { // a scalar result still gets one loop (the ABI splits it)
		ax := &ir.Axis{ID: 0, Size: 1, Kind: ir.AxisGlobal}
		l.nextAx++
		global = append(global, ax)
	}
	var val, at *ir.Expr
	if view != nil {
		val = l.expr(root.Src[0], idx, nil, false)
		var err error
		if at, err = l.viewIndex(view, root.AssignTarget(), idx); err != nil {
			return nil, err
		}
	} else {
		val = l.expr(root, idx, nil, true)
		at = linearIndex(l.b, idx, root.Shape)
	}
	val = l.b.Cast(storageDType(root.DType), val)
	store := l.b.Store(0, at, val)
	k := &ir.Kernel{Global: global, Stores: []*ir.Expr{store}, NumParams: len(l.vars) + 2*len(l.rands), B: l.b,
		InPlace: root.AssignTarget() != nil}
	l.placeParams(k)
	for i, a := range l.args {
		k.Bufs = append(k.Bufs, ir.BufParam{DType: a.DType, Size: int64(a.Numel()), Output: i == 0})
	}
	return &Item{Kernel: k, Out: root, Args: l.args, Rands: l.rands, Vars: l.vars}, nil
}

// placeParams gives the launch vars their final order: the variables
// first (l.vars, in the order lowering met them), then each random
// tensor's seed and counter. While lowering, a variable's param is
// numbered -1-i and a random tensor's from 0; they are renumbered here.
func (l *lowerer) placeParams(k *ir.Kernel) {
	nv := len(l.vars)
	if nv == 0 {
		return
	}
	final := func(i int) int {
		if i < 0 {
			return -1 - i
		}
		return i + nv
	}
	axes := append(append([]*ir.Axis{}, k.Global...), k.ReduceAxes()...)
	for _, a := range axes {
		if a.Sym != nil && a.Sym.Param < 0 {
			a.Sym.Param = final(a.Sym.Param)
		}
	}
	b := ir.NewBuilder()
	memo := map[*ir.Expr]*ir.Expr{}
	for i, st := range k.Stores {
		k.Stores[i] = b.Rebuild(st, func(e *ir.Expr) *ir.Expr {
			if e.Op != ir.OpParam {
				return nil
			}
			p := e.Arg.(ir.ParamArg)
			p.Index = final(p.Index)
			return b.ParamIn(p)
		}, memo)
	}
	k.B = b
}

// param is the launch-time value of variable v.
func (l *lowerer) param(v tensor.Variable) *ir.Expr {
	i := slices.Index(l.vars, v)
	if i < 0 {
		i = len(l.vars)
		l.vars = append(l.vars, v)
	}
	return l.b.ParamIn(ir.ParamArg{Index: -1 - i, Name: v.Name, Min: int64(v.Min), Max: int64(v.Max)})
}

// sint lowers a symbolic integer to an index expression.
func (l *lowerer) sint(s tensor.SInt) *ir.Expr {
	if !s.IsSym() {
		return l.b.Int(int64(s.C))
	}
	return l.b.Add(l.param(s.Var), l.b.Int(int64(s.C)))
}

// symBound is the trip count of a loop over dimension s (nil: constant).
func (l *lowerer) symBound(s tensor.SInt) *ir.SymBound {
	if !s.IsSym() {
		return nil
	}
	return &ir.SymBound{Param: l.param(s.Var).ParamIndex(), Add: int64(s.C)}
}

// viewIndex is the offset in dst's buffer of the element of view (a chain
// of movement ops over dst) at idx: where an assign into a view stores.
func (l *lowerer) viewIndex(view, dst *tensor.Node, idx []*ir.Expr) (*ir.Expr, error) {
	for n := view; ; n = n.Src[0] {
		if n == dst {
			return linearIndex(l.b, idx, dst.Shape), nil
		}
		if !n.Op.IsMovement() || n.Op == ir.OpPad || n.Op == ir.OpExpand {
			return nil, fmt.Errorf("internal error: assign through a %s view", n.Op)
		}
		idx, _ = l.moveIndex(n, idx)
	}
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
		return b.Load(i, n.DType, linearIndex(b, idx, n.Shape), b.And(valid, l.padZeros(n, idx)))
	}
	switch op := n.Op; {
	case op == ir.OpConst:
		f, i := n.ConstValue()
		if n.DType.IsFloat() {
			return b.Const(n.DType, f)
		}
		return b.ConstInt(n.DType, i)
	case op == ir.OpParam:
		return b.Cast(n.DType, l.sint(n.Arg.(tensor.SInt)))
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

// padZeros is, for a load of a stored PAD read inside a reduce loop (a
// convolution over a padded input or a padded output gradient), where the
// element read is not in the padding's zero rows: the PAD's condition on
// the outermost padded dimension whose index moves with a reduce loop (a
// window's rows), never the last (the contiguous one, read in vectors).
// The buffer holds zeros elsewhere, so the guard changes no value; it
// tells the skip_zeros pass which iterations of the reduce only add zeros
// (the border rows of a conv input gradient's windows: a sixth of conv2's
// multiply-adds in the MNIST cnn). Only the rows: a conv's register
// lanes run along an output row (or along channels), so the rows' guard
// is the same in every lane and whole vectors load under it, where the
// columns' would differ from lane to lane and keep the loads scalar.
// nil when there is none.
func (l *lowerer) padZeros(n *tensor.Node, idx []*ir.Expr) *ir.Expr {
	if n.Op != ir.OpPad {
		return nil
	}
	pads := n.Arg.([][2]int)
	for d := range len(pads) - 1 {
		p := pads[d]
		if p == [2]int{} || !usesReduce(idx[d]) {
			continue
		}
		return l.b.And(l.b.Lt(l.b.Int(int64(p[0]-1)), idx[d]), l.b.Lt(idx[d], l.b.Int(int64(p[0]+n.Src[0].Shape[d]))))
	}
	return nil
}

// usesReduce reports whether e reads a reduce loop's variable.
func usesReduce(e *ir.Expr) bool {
	uses := false
	ir.Walk([]*ir.Expr{e}, func(x *ir.Expr) {
		if x.Op == ir.OpVar && x.Arg.(*ir.Axis).Kind == ir.AxisReduce {
			uses = true
		}
	})
	return uses
}

func (l *lowerer) reduce(n *tensor.Node, idx []*ir.Expr, valid *ir.Expr) *ir.Expr {
	src := n.Src[0]
	in := make([]*ir.Expr, len(idx))
	copy(in, idx)
	arg := &ir.ReduceArg{Op: n.Op}
	dims := src.Dims()
	for _, a := range n.Arg.([]int) {
		ax := &ir.Axis{ID: l.reduces, Size: int64(src.Shape[a]), Kind: ir.AxisReduce, Sym: l.symBound(dims[a])}
		l.reduces++
		arg.Axes = append(arg.Axes, ax)
		in[a] = l.b.Var(ax)
	}
	v := l.expr(src, in, valid, false)
	return l.b.Reduce(arg, l.b.Cast(computeDType(n.DType), v))
}

func (l *lowerer) movement(n *tensor.Node, idx []*ir.Expr, valid *ir.Expr) *ir.Expr {
	in, cond := l.moveIndex(n, idx)
	if n.Op != ir.OpPad {
		return l.expr(n.Src[0], in, valid, false)
	}
	x := l.expr(n.Src[0], in, l.b.And(valid, cond), false)
	if cond == nil {
		return x
	}
	return l.b.Where(cond, x, l.b.Const(x.DType, 0))
}

// moveIndex maps the indices of a movement op's output to its source's;
// a PAD also returns the condition under which the source is read.
func (l *lowerer) moveIndex(n *tensor.Node, idx []*ir.Expr) ([]*ir.Expr, *ir.Expr) {
	b := l.b
	src := n.Src[0]
	in := make([]*ir.Expr, len(src.Shape))
	var cond *ir.Expr
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
		switch arg := n.Arg.(type) {
		case [][2]int:
			for d, r := range arg {
				in[d] = b.Add(idx[d], b.Int(int64(r[0])))
			}
		case tensor.SymShrink:
			for d, r := range arg {
				in[d] = b.Add(idx[d], l.sint(r[0]))
			}
		}
	case ir.OpFlip:
		copy(in, idx)
		for _, a := range n.Arg.([]int) {
			in[a] = b.Sub(b.Int(int64(src.Shape[a]-1)), idx[a])
		}
	case ir.OpPad:
		for d, p := range n.Arg.([][2]int) {
			in[d] = b.Sub(idx[d], b.Int(int64(p[0])))
			if p == [2]int{} {
				continue
			}
			inside := b.And(b.Lt(b.Int(int64(p[0]-1)), idx[d]), b.Lt(idx[d], b.Int(int64(p[0]+src.Shape[d]))))
			cond = b.And(cond, inside)
		}
	}
	return in, cond
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
