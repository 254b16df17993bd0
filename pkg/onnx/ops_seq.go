package onnx

import (
	"slices"

	"tgc/pkg/tensor"
)

// Sequences inside a graph are lists of values kept while the graph is
// built: their operators move tensors around and never compute, so a
// sequence costs nothing at run time. (A model whose inputs or outputs
// are sequences is refused: tgc's runs take and give tensors.)

var seqOps = map[string]opDef{
	"SequenceEmpty":      {since: 11, value: func(n *node) []*value { return []*value{{seq: []*value{}, isSeq: true}} }},
	"SequenceConstruct":  {since: 11, value: seqConstruct},
	"SequenceInsert":     {since: 11, value: seqInsert},
	"SequenceErase":      {since: 11, value: seqErase},
	"SequenceAt":         {since: 11, value: seqAt},
	"SequenceLength":     {since: 11, value: seqLength},
	"SplitToSequence":    {since: 11, value: splitToSequence},
	"ConcatFromSequence": {since: 11, value: concatFromSequence},
}

// seqInput returns input i, which must be a sequence.
func (n *node) seqInput(i int) []*value {
	if !n.has(i) || !n.in[i].isSeq {
		n.fail("input %d must be a sequence", i)
		return nil
	}
	return n.in[i].seq
}

// tensorIn returns input i, which must be a tensor (not a sequence).
func (n *node) tensorIn(i int) *value {
	if !n.has(i) || n.in[i].isSeq {
		n.fail("input %d must be a tensor", i)
		return nil
	}
	return n.in[i]
}

func seqConstruct(n *node) []*value {
	var s []*value
	for i := range n.in {
		if v := n.tensorIn(i); v != nil {
			s = append(s, v)
		}
	}
	return []*value{{seq: s, isSeq: true}}
}

// position reads an optional position input (default def) and checks it
// against a sequence of length l (end: l itself is allowed, for inserts).
func (n *node) position(i, def, l int, end bool) int {
	p := def
	if n.has(i) {
		ps := n.ints(i)
		if n.err != nil {
			return 0
		}
		if len(ps) != 1 {
			n.fail("position must hold one value")
			return 0
		}
		p = ps[0]
	}
	hi := l - 1
	if end {
		hi = l
	}
	if p < -l || p > hi {
		n.fail("position %d is out of range for a sequence of %d", p, l)
		return 0
	}
	if p < 0 {
		p += l
	}
	return p
}

func seqInsert(n *node) []*value {
	s := n.seqInput(0)
	v := n.tensorIn(1)
	if n.err != nil {
		return nil
	}
	p := n.position(2, len(s), len(s), true)
	if n.err != nil {
		return nil
	}
	return []*value{{seq: slices.Insert(slices.Clone(s), p, v), isSeq: true}}
}

func seqErase(n *node) []*value {
	s := n.seqInput(0)
	if n.err != nil {
		return nil
	}
	if len(s) == 0 {
		n.fail("cannot erase from an empty sequence")
		return nil
	}
	p := n.position(1, len(s)-1, len(s), false)
	if n.err != nil {
		return nil
	}
	return []*value{{seq: slices.Delete(slices.Clone(s), p, p+1), isSeq: true}}
}

func seqAt(n *node) []*value {
	s := n.seqInput(0)
	if n.err != nil {
		return nil
	}
	if !n.has(1) {
		n.fail("position is missing")
		return nil
	}
	p := n.position(1, 0, len(s), false)
	if n.err != nil {
		return nil
	}
	v := *s[p]
	return []*value{&v}
}

func seqLength(n *node) []*value {
	s := n.seqInput(0)
	if n.err != nil {
		return nil
	}
	return []*value{{h: ArrayOfInts(Int64, nil, []int64{int64(len(s))})}}
}

// splitToSequence cuts the input along axis into pieces: one per element
// (the axis dropped unless keepdims), of a scalar split's size (the last
// one shorter), or of the listed sizes.
func splitToSequence(n *node) []*value {
	x := n.x(0)
	if n.err != nil {
		return nil
	}
	axis := n.axis(n.int("axis", 0), x.Ndim())
	dim := x.Shape()[axis]
	var sizes []int
	keep := true
	if n.has(1) {
		a := n.array(1)
		if n.err != nil {
			return nil
		}
		if len(a.Shape) == 0 {
			step := int(a.Int(0))
			if step <= 0 {
				n.fail("split %d must be positive", step)
				return nil
			}
			for rest := dim; rest > 0; rest -= step {
				sizes = append(sizes, min(step, rest))
			}
		} else {
			for _, v := range a.Ints() {
				sizes = append(sizes, int(v))
			}
		}
	} else {
		sizes = slices.Repeat([]int{1}, dim)
		keep = n.int("keepdims", 1) == 1
	}
	total := 0
	for _, s := range sizes {
		if s < 0 {
			n.fail("negative split size in %v", sizes)
			return nil
		}
		total += s
	}
	if total != dim {
		n.fail("split %v does not add up to dimension %d of size %d", sizes, axis, dim)
		return nil
	}
	var seq []*value
	for _, part := range x.SplitSizes(sizes, axis) {
		if !keep {
			part = part.Squeeze(ptr(axis))
		}
		seq = append(seq, &value{t: part})
	}
	return []*value{{seq: seq, isSeq: true}}
}

// concatFromSequence concatenates a sequence along axis, or stacks it
// along a new axis (new_axis=1).
func concatFromSequence(n *node) []*value {
	s := n.seqInput(0)
	if n.err != nil {
		return nil
	}
	if len(s) == 0 {
		n.fail("cannot concatenate an empty sequence")
		return nil
	}
	ts := make([]*tensor.Tensor, len(s))
	for i, v := range s {
		t, err := v.tensor(n.ctx)
		if err != nil {
			n.fail("%v", err)
			return nil
		}
		ts[i] = t
	}
	r := ts[0].Ndim()
	if n.int("new_axis", 0) == 1 {
		axis := n.axis(n.int("axis", 0), r+1)
		if n.err != nil {
			return nil
		}
		return []*value{{t: tensor.Stack(axis, ts...)}}
	}
	axis := n.axis(n.int("axis", 0), r)
	if n.err != nil {
		return nil
	}
	return []*value{{t: ts[0].Cat(axis, ts[1:]...)}}
}
