package tensor

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"weak"

	"tgc/pkg/ir"
)

// What autograd, the optimizers and the nn layers need from the tensor
// package: the training flag, gradient leaves, detaching and assigning.

// Training is tinygrad's Tensor.training: dropout and batch statistics are
// used only while it is true. Optimizers do not set it; training loops do.
var Training bool

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

var (
	gradMu   sync.Mutex
	gradTabs = map[weak.Pointer[Tensor]]bool{} // registered tensors; true once given their own node
)

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
	wp := weak.Make(t)
	gradMu.Lock()
	own, registered := gradTabs[wp]
	gradTabs[wp] = own || b
	gradMu.Unlock()
	if !registered {
		runtime.AddCleanup(t, func(wp weak.Pointer[Tensor]) {
			gradMu.Lock()
			delete(gradTabs, wp)
			gradMu.Unlock()
		}, wp)
	}
	if b && !own {
		t.giveOwnNode()
	}
	return t
}

// RequiresGradSet reports whether SetRequiresGrad was ever called on t
// (tinygrad's requires_grad is None until set: an optimizer then makes
// such tensors parameters).
func (t *Tensor) RequiresGradSet() bool {
	gradMu.Lock()
	defer gradMu.Unlock()
	_, ok := gradTabs[weak.Make(t)]
	return ok
}

// giveOwnNode makes t's node one that no equal expression shares.
func (t *Tensor) giveOwnNode() {
	if t.node.Op != ir.OpBuffer {
		if t.node.Realized() != nil {
			t.node = aliasBuffer(t.node)
		} else {
			t.node = newNode(ir.OpContiguous, t.DType(), t.node.Shape, leafArg(NewID()), t.node)
		}
	}
}

// GradTensors returns the live tensors registered by SetRequiresGrad that
// still require a gradient.
func GradTensors() []*Tensor {
	gradMu.Lock()
	defer gradMu.Unlock()
	var out []*Tensor
	for wp := range gradTabs {
		if t := wp.Value(); t != nil && t.RequiresGrad && t.err == nil {
			out = append(out, t)
		}
	}
	return out
}

// aliasBuffer is a new BUFFER node for the realized value of n. Buffers are
// never written after they are computed, so the alias shares the memory.
func aliasBuffer(n *Node) *Node {
	b := n.Realized()
	a := &Buffer{ID: NewID(), DType: b.DType, Size: b.Size, Host: b.Host, Device: b.Device, Name: b.Name, Weight: b.Weight}
	return newNode(ir.OpBuffer, n.DType, n.Shape, a)
}

// Detach returns t's value cut off from the graph that computed it: no
// gradient flows through it and, once t is realized, it holds no reference
// to the graph. A realized tensor detaches for free (a new buffer node on
// the same memory); a lazy one becomes its own kernel when realized.
func (t *Tensor) Detach() *Tensor {
	if t.err != nil {
		return t
	}
	if t.node.Realized() != nil {
		return FromNode(aliasBuffer(t.node))
	}
	return FromNode(newNode(ir.OpContiguous, t.DType(), t.node.Shape, detachArg{}, t.node))
}

// Assign makes t hold the value of v (lazily: t's node becomes v's), as
// tinygrad's assign does for parameters and optimizer state. The shape and
// dtype must match. It returns t, or a tensor carrying the error (t is then
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
	t.node = v.node
	return t
}
