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
			t.node = t.newNode(ir.OpContiguous, t.DType(), t.node.Shape, leafArg(NewID()), t.node)
		}
	}
}

// aliasBuffer is a new BUFFER node for the realized value of n, sharing
// its memory (and its storage version: an in-place assign into that memory
// makes every alias made before it stale, see Buffer.Stale).
func aliasBuffer(n *Node) *Node {
	b := n.Realized()
	a := b.sameMemory(b.Host, b.Device, b.version)
	return n.ctx.newNode(ir.OpBuffer, n.DType, n.Shape, a)
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
	return FromNode(t.newNode(ir.OpContiguous, t.DType(), t.node.Shape, detachArg{}, t.node))
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
// the memory of its destination (Src[1], a realized node).
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
	if !slices.Equal(t.node.Shape, v.node.Shape) {
		return errorf("assign", "cannot assign a value of shape %s to a tensor of shape %s", FormatShape(v.node.Shape), FormatShape(t.node.Shape))
	}
	if t.DType() != v.DType() {
		return errorf("assign", "cannot assign a %s value to a %s tensor", v.DType(), t.DType())
	}
	if v.node == t.node {
		return t
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
