package onnx

import (
	"maps"
	"slices"

	"tgc/pkg/tensor"
)

// opDef is one operator of the default domain: the opsets it is
// implemented for (since..MaxOpset, each version's attributes handled in
// run), how it builds tensors, and optionally how it folds on the host.
type opDef struct {
	since int
	run   func(n *node) []*tensor.Tensor
	// host folds the node when every input is known at load time; it
	// returns nil to leave the node to run (a case it does not fold).
	host func(n *node, in []*Array) []*Array
	// anyInput runs host whatever the inputs (Shape reads only shapes).
	anyInput bool
	// value builds the outputs as values directly (sequences).
	value func(n *node) []*value
}

// ops is the operator table, merged from one table per family.
var ops = mergeOps(elementwiseOps, reduceOps, shapeOps, nnOps, indexOps, miscOps, rnnOps, visionOps, seqOps)

func mergeOps(tables ...map[string]opDef) map[string]opDef {
	all := map[string]opDef{}
	for _, t := range tables {
		maps.Copy(all, t)
	}
	return all
}

// Operators lists the implemented operators with their first opset.
func Operators() map[string]int {
	m := map[string]int{}
	for name, d := range ops {
		m[name] = d.since
	}
	return m
}

// RefusedOperators lists the operators refused by design, by category.
func RefusedOperators() map[string]string { return maps.Clone(refusedOps) }

// one wraps a single-output builder.
func one(f func(n *node) *tensor.Tensor) func(n *node) []*tensor.Tensor {
	return func(n *node) []*tensor.Tensor { return []*tensor.Tensor{f(n)} }
}

// axis normalizes an axis attribute against rank r.
func (n *node) axis(a, r int) int {
	if a < -r || a >= r {
		if r == 0 && (a == 0 || a == -1) {
			return 0
		}
		n.fail("axis %d is out of range for rank %d", a, r)
		return 0
	}
	if a < 0 {
		a += r
	}
	return a
}

// axes normalizes a list of axes against rank r, sorted and unique.
func (n *node) axes(as []int, r int) []int {
	out := make([]int, 0, len(as))
	for _, a := range as {
		a = n.axis(a, r)
		if slices.Contains(out, a) {
			n.fail("axis %d is repeated", a)
		}
		out = append(out, a)
	}
	slices.Sort(out)
	return out
}

func ones(k int) []int { return slices.Repeat([]int{1}, k) }
