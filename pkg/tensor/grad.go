package tensor

import (
	"fmt"
	"slices"

	"tgc/pkg/ir"
)

// What autograd, the optimizers and the nn layers need from the tensor
// package: gradient leaves, detaching and assigning (the training flag is
// the context's).

// Arguments of CONTIGUOUS nodes that autograd reads.
type (
	// detachArg marks a CONTIGUOUS node through which no gradient flows.
	detachArg struct{}
	// leafArg gives a gradient leaf its own node: equal lazy values are
	// one interned node, but two parameters must never share a gradient.
	leafArg uint64
)

func (detachArg) String() string { return "detach" }
func (a leafArg) String() string { return fmt.Sprintf("leaf%d", uint64(a)) }

// IsDetach reports whether n stops gradients (it was made by Detach).
func (n *Node) IsDetach() bool {
	_, ok := n.Arg.(detachArg)
	return n.Op == ir.OpContiguous && ok
}

// SetRequiresGrad marks (or unmarks) t as a tensor whose gradient Backward
// computes, and registers it so that Backward can find it from the loss.
// Marking gives t a node of its own when it does not have one already (a
// lazy value is shared by every equal expression), so set it before using
// t in the computation to differentiate. Setting the RequiresGrad field
// directly does not register the tensor.
func (t *Tensor) SetRequiresGrad(b bool) *Tensor {
	if t.err != nil {
		return t
	}
	t.RequiresGrad = b
	if own := t.node.ctx.register(t, b); b && !own {
		t.giveOwnNode()
	}
	return t
}

// RequiresGradSet reports whether SetRequiresGrad was ever called on t
// (tinygrad's requires_grad is None until set: an optimizer then makes
// such tensors parameters).
func (t *Tensor) RequiresGradSet() bool {
	return t.err == nil && t.node.ctx.registered(t)
}

// giveOwnNode makes t's node one that no equal expression shares.
func (t *Tensor) giveOwnNode() {
	if t.node.Op != ir.OpBuffer {
		if t.node.Realized() != nil {
			t.node = aliasBuffer(t.node)
		} else {
			t.node = t.like(ir.OpContiguous, t.DType(), leafArg(NewID()), t.node)
		}
	}
}

// aliasBuffer is a new BUFFER node for the realized value of n, sharing
// its memory (and its storage version: an in-place assign into that memory
// makes every alias made before it stale, see Buffer.Stale).
func aliasBuffer(n *Node) *Node {
	b := n.Realized()
	a := b.sameMemory(b.Host, b.Device, b.version)
	return n.ctx.makeNode(ir.OpBuffer, n.DType, n.Shape, n.Sym, a)
}

// Detach returns t's value cut off from the graph that computed it: no
// gradient flows through it and, once t is realized, it holds no reference
// to the graph. A realized tensor detaches for free (a new buffer node on
// the same memory, which an in-place Assign to t later overwrites); a lazy
// one becomes its own kernel when realized.
func (t *Tensor) Detach() *Tensor {
	if t.err != nil {
		return t
	}
	if t.node.Realized() != nil {
		return FromNode(aliasBuffer(t.node))
	}
	return FromNode(t.like(ir.OpContiguous, t.DType(), detachArg{}, t.node))
}

// Rebind makes a realized t hold a plain buffer node on the same memory,
// cutting it off the graph that computed it (so the graph can be
// collected) without a copy; a lazy t is unchanged.
func (t *Tensor) Rebind() *Tensor {
	if t.err == nil && t.node.Op != ir.OpBuffer && t.node.Realized() != nil {
		t.node = aliasBuffer(t.node)
	}
	return t
}

// assignArg marks a CONTIGUOUS node that writes its value (Src[0]) into
// the memory of its destination (Src[1], a realized node). An assign into
// a view (x[a:b].assign(v)) has the view as Src[2]: a chain of movement
// ops over the destination saying where v's elements go; the node's value
// is the whole destination, the elements outside the view unchanged.
type assignArg struct{}

func (assignArg) String() string { return "assign" }

// AssignTarget returns the destination of an assign node (made by Assign
// on a realized tensor), or nil when n is not one. The engine writes the
// node's value into the destination's buffer instead of a new one.
func (n *Node) AssignTarget() *Node {
	if n.Op == ir.OpContiguous {
		if _, ok := n.Arg.(assignArg); ok {
			return n.Src[1]
		}
	}
	return nil
}

// AssignView returns the view an assign node writes through (nil: the
// whole destination).
func (n *Node) AssignView() *Node {
	if n.AssignTarget() != nil && len(n.Src) > 2 {
		return n.Src[2]
	}
	return nil
}

// Assign makes t hold the value of v, with tinygrad's meaning: when t is
// realized, the new value is written into t's existing buffer when it is
// realized (so parameters and optimizer state keep their memory across
// steps, which TinyJit replays rely on); a lazy t just takes v's graph.
// The write is lazy: t's node becomes an assign node that the next realize
// of t (or of anything using it) computes. Kernels of the same schedule
// that read the old value run before the write. A tensor built from the
// old value and realized only after the write is stale: reading it is an
// error, never the new value (see Buffer.Stale). The shape and dtype must
// match. It returns t, or a tensor carrying the error (t is then
// unchanged).
func (t *Tensor) Assign(v *Tensor) *Tensor {
	if e := firstErr(t, v); e != nil {
		return e
	}
	if !slices.Equal(t.node.Shape, v.node.Shape) || !slices.Equal(t.node.Sym, v.node.Sym) {
		return errorf("assign", "cannot assign a value of shape %s to a tensor of shape %s", v.node.shapeString(), t.node.shapeString())
	}
	if t.DType() != v.DType() {
		return errorf("assign", "cannot assign a %s value to a %s tensor", v.DType(), t.DType())
	}
	if v.node == t.node {
		return t
	}
	if t.base != nil && t.node.Op.IsMovement() {
		return t.assignView(v)
	}
	dst := t.node
	if d := dst.AssignTarget(); d != nil && dst.Realized() == nil {
		dst = d // a pending assign: the new value goes to the same memory
	}
	if dst.Realized() == nil || v.node.AssignTarget() == dst {
		t.node = v.node
		return t
	}
	t.node = t.newNode(ir.OpContiguous, t.DType(), t.node.Shape, assignArg{}, v.node, dst)
	return t
}

// assignView writes v through the view t into the memory of the tensor t
// is a view of (tinygrad's x[a:b].assign(v)): the base tensor becomes an
// assign node whose kernel stores only the view's elements, and t becomes
// the same view of the new value.
func (t *Tensor) assignView(v *Tensor) *Tensor {
	base := t.base
	var chain []*Node // movement ops from the base up to t
	for n := t.node; n != base.node; n = n.Src[0] {
		switch n.Op {
		case ir.OpShrink, ir.OpReshape, ir.OpPermute, ir.OpFlip:
		case ir.OpExpand, ir.OpPad:
			return errorf("assign", "cannot assign through a %s view: it does not name each element of the destination once", n.Op)
		default:
			return errorf("assign", "the tensor this is a view of has changed since the view was taken: take the view again")
		}
		if n.Realized() != nil {
			return errorf("assign", "cannot assign into a realized copy of a view")
		}
		chain = append(chain, n)
	}
	if base.node.Realized() == nil {
		return errorf("assign", "the tensor this is a view of has a pending assign: realize it first")
	}
	// A plain buffer node as the destination: the previous step's graph
	// (which the realized node keeps as its sources) can then be collected.
	dst := base.node
	if dst.Op != ir.OpBuffer {
		dst = aliasBuffer(dst)
	}
	replay := func(n *Node) *Node {
		for i := len(chain) - 1; i >= 0; i-- {
			c := chain[i]
			n = n.ctx.makeNode(c.Op, c.DType, c.Shape, c.Sym, c.Arg, n)
		}
		return n
	}
	a := base.like(ir.OpContiguous, base.DType(), assignArg{}, v.node, dst, replay(dst))
	base.node = a
	t.node = replay(a)
	return t
}
