// Package autograd is reverse-mode differentiation over the primitive op
// graph of pkg/tensor: one gradient rule per primitive (rules.go), applied
// from the loss back to the targets. Gradients are lazy tensors built with
// the Tensor API, so they fuse with the forward graph and with each other
// when realized.
//
// The walk goes through realized nodes (a realized node keeps its sources),
// so the loss can be computed and read before backward. It stops at nodes
// made by Tensor.Detach. Only float nodes carry gradients: comparisons,
// integer casts and TRUNC have none.
package autograd

import (
	"fmt"
	"slices"

	"tgc/pkg/tensor"
)

// Gradient returns d loss / d target for each target, without touching any
// tensor's Grad (tinygrad's Tensor.gradient). The loss must have exactly one
// element. A target the loss does not depend on through a differentiable
// path is an error.
func Gradient(loss *tensor.Tensor, targets []*tensor.Tensor) ([]*tensor.Tensor, error) {
	seed, err := scalarSeed("gradient", loss)
	if err != nil {
		return nil, err
	}
	return GradientWith(loss, seed, targets, false)
}

// GradientWith is Gradient with an explicit gradient of the output (seed,
// the shape and dtype of out). With materialize, a target without a
// gradient path gets zeros instead of an error.
func GradientWith(out, seed *tensor.Tensor, targets []*tensor.Tensor, materialize bool) ([]*tensor.Tensor, error) {
	if err := out.Err(); err != nil {
		return nil, err
	}
	if err := seed.Err(); err != nil {
		return nil, err
	}
	if !slices.Equal(seed.Shape(), out.Shape()) || seed.DType() != out.DType() {
		return nil, fmt.Errorf("gradient: the output gradient is %s %s, the output is %s %s",
			seed.DType(), tensor.FormatShape(seed.Shape()), out.DType(), tensor.FormatShape(out.Shape()))
	}
	if !out.DType().IsFloat() {
		return nil, fmt.Errorf("gradient: the loss is %s; only float values have gradients", out.DType())
	}
	isTarget := map[*tensor.Node]bool{}
	for i, t := range targets {
		if t == nil {
			return nil, fmt.Errorf("gradient: target %d is nil", i)
		}
		if err := t.Err(); err != nil {
			return nil, err
		}
		if !t.DType().IsFloat() {
			return nil, fmt.Errorf("gradient: target %d is %s %s; only float tensors have gradients", i, t.DType(), tensor.FormatShape(t.Shape()))
		}
		isTarget[t.Node()] = true
	}
	grads, err := backprop(out.Node(), seed, isTarget)
	if err != nil {
		return nil, err
	}
	res := make([]*tensor.Tensor, len(targets))
	for i, t := range targets {
		g := grads[t.Node()]
		switch {
		case g != nil:
			res[i] = g
		case materialize:
			res[i] = t.ZerosLike()
		default:
			return nil, fmt.Errorf("gradient: target %d (%s %s) is not used to compute the loss through a differentiable path", i, t.DType(), tensor.FormatShape(t.Shape()))
		}
	}
	return res, nil
}

// Backward computes the gradient of a scalar loss with respect to every
// tensor marked with SetRequiresGrad that the loss depends on, and adds it
// to that tensor's Grad (creating Grad when it is nil). The gradients stay
// lazy; an optimizer step realizes them.
func Backward(loss *tensor.Tensor) error {
	seed, err := scalarSeed("backward", loss)
	if err != nil {
		return err
	}
	if !loss.DType().IsFloat() {
		return fmt.Errorf("backward: the loss is %s; only float values have gradients", loss.DType())
	}
	used := ancestors(loss.Node())
	var ts []*tensor.Tensor
	for _, t := range loss.Context().GradTensors() {
		if used[t.Node()] {
			if !t.DType().IsFloat() {
				return fmt.Errorf("backward: a tensor %s %s requires grad, but only float tensors have gradients", t.DType(), tensor.FormatShape(t.Shape()))
			}
			ts = append(ts, t)
		}
	}
	if len(ts) == 0 {
		return fmt.Errorf("backward: the loss does not depend on any tensor that requires grad (set requires_grad = True on the parameters before computing the loss)")
	}
	loss.Context().NoteBackward(loss) // the next optimizer step realizes it before writing parameters
	gs, err := GradientWith(loss, seed, ts, true)
	if err != nil {
		return err
	}
	for i, t := range ts {
		g := gs[i]
		if t.Grad != nil {
			g = t.Grad.Add(g)
		}
		if err := g.Err(); err != nil {
			return fmt.Errorf("backward: accumulating the gradient: %w", err)
		}
		t.Grad = g
	}
	return nil
}

// scalarSeed checks that loss has one element and returns ones like it.
func scalarSeed(op string, loss *tensor.Tensor) (*tensor.Tensor, error) {
	if loss == nil {
		return nil, fmt.Errorf("%s: the loss is nil", op)
	}
	if err := loss.Err(); err != nil {
		return nil, err
	}
	if loss.Numel() != 1 {
		return nil, fmt.Errorf("%s: the loss must be a scalar, got shape %s (reduce it first, e.g. with .mean() or .sum())", op, tensor.FormatShape(loss.Shape()))
	}
	return loss.OnesLike(), nil
}

// ancestors is every node the root is computed from, through realized
// nodes but not through detached ones.
func ancestors(root *tensor.Node) map[*tensor.Node]bool {
	seen := map[*tensor.Node]bool{}
	stack := []*tensor.Node{root}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[n] {
			continue
		}
		seen[n] = true
		if n.IsDetach() {
			continue
		}
		stack = append(stack, n.Src...)
	}
	return seen
}

// toposort orders the ancestors of root sources first and marks those on
// a path to a target.
func toposort(root *tensor.Node, isTarget map[*tensor.Node]bool) (order []*tensor.Node, onPath map[*tensor.Node]bool) {
	onPath = map[*tensor.Node]bool{}
	state := map[*tensor.Node]uint8{} // 1: entered, 2: done
	type frame struct {
		n *tensor.Node
		i int
	}
	stack := []frame{{n: root}}
	state[root] = 1
	for len(stack) > 0 {
		f := &stack[len(stack)-1]
		n := f.n
		if deps := gradDeps(n); !n.IsDetach() && f.i < len(deps) {
			s := deps[f.i]
			f.i++
			if state[s] == 0 {
				state[s] = 1
				stack = append(stack, frame{n: s})
			}
			continue
		}
		stack = stack[:len(stack)-1]
		state[n] = 2
		path := isTarget[n]
		if !n.IsDetach() {
			for _, s := range gradDeps(n) {
				path = path || onPath[s]
			}
		}
		onPath[n] = path && n.DType.IsFloat()
		order = append(order, n)
	}
	return order, onPath
}

// gradDeps are the nodes a node's gradient flows to: its sources, and
// for a node with a custom rule also the rule's inputs. Those need not be
// reachable through the sources: movement ops fold into each other (a
// reshape of a reshape is one node), so the tensor a function was called
// with may not appear in the graph it built.
func gradDeps(n *tensor.Node) []*tensor.Node {
	c := n.Custom()
	if c == nil {
		return n.Src
	}
	return append(append([]*tensor.Node{}, n.Src...), c.Inputs...)
}

// backprop walks from out (whose gradient is seed) to the targets and
// returns the gradient of every float node on a path to a target.
func backprop(out *tensor.Node, seed *tensor.Tensor, isTarget map[*tensor.Node]bool) (map[*tensor.Node]*tensor.Tensor, error) {
	order, onPath := toposort(out, isTarget)
	grads := map[*tensor.Node]*tensor.Tensor{out: seed}
	for i := len(order) - 1; i >= 0; i-- {
		n := order[i]
		g := grads[n]
		if g == nil || !onPath[n] || n.IsDetach() || len(n.Src) == 0 {
			continue
		}
		srcs, srcGrads := n.Src, []*tensor.Tensor(nil)
		if c := n.Custom(); c != nil {
			srcs, srcGrads = c.Inputs, c.Grad(g)
		} else {
			srcGrads = rule(n, g)
		}
		for j, s := range srcs {
			if j >= len(srcGrads) || srcGrads[j] == nil || !onPath[s] {
				continue
			}
			sg := srcGrads[j]
			if err := sg.Err(); err != nil {
				return nil, fmt.Errorf("internal error: gradient of %s: %w", n, err)
			}
			if !slices.Equal(sg.Shape(), s.Shape) || sg.DType() != s.DType {
				return nil, fmt.Errorf("internal error: gradient of %s gives %s %s for its source %s", n, sg.DType(), tensor.FormatShape(sg.Shape()), s)
			}
			if prev := grads[s]; prev != nil {
				sg = prev.Add(sg)
			}
			grads[s] = sg
		}
	}
	return grads, nil
}
