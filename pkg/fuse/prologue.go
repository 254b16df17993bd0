package fuse

import (
	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// Prologues (Options.HoistReduces, on targets whose global axes are
// loops): a small vector computed from a reduce, which the one kernel
// that needs it reads whole inside a reduce's loop broadcast over its
// rows (a decode step's RMSNorm, x·rsqrt(mean(x²)+eps)·g, read by the
// next matrix-vector product: the fused qkv, the FFN's gate and up, the
// classifier), joins that kernel instead of being a kernel of its own.
// Its reduce is computed once per launch piece (ir.Linearize hoists a
// reduce that reads no global axis out of the row loop), and the ir pass
// `prologue` has the C renderer compute the vector once per launch piece
// into a scratch row that the rows then read (ir.Prologue): one launch
// less per norm, and no more work per weight than a load of the stored
// vector. Whether the kernel's shape allows it is known after lowering:
// a kernel that has no such value (ir.PrologueValues) refuses it, and the
// vector is stored as before.

// maxPrologue is the most elements a prologue's vector may have: its
// scratch row stays in L1 (ir.MaxPrologue).
const maxPrologue = ir.MaxPrologue

// prologue says whether elementwise node n, which an EXPAND inside a
// reduce's loop in the kernels of roots would recompute for every row,
// joins those kernels as a prologue: it is small, computed from a reduce
// (else storing it is as cheap), and not refused before. Several kernels
// (Q4_K's q, k and v, three products of one norm) each compute it.
func (r *rowKernels) prologue(n *tensor.Node, roots []*tensor.Node) bool {
	if !r.on || len(roots) == 0 || r.noPro[n] || n.Numel() > maxPrologue || !fromReduce(n) {
		return false
	}
	for _, root := range roots {
		r.pro[root] = append(r.pro[root], n)
	}
	return true
}

// joinPrologues says whether reduce n, the mean of a prologue that the
// kernels of roots compute (so needed by several kernels), joins each of
// them: it sums at most maxPrologue elements, so each computes it once
// per launch piece rather than a kernel of its own storing it.
func (r *rowKernels) joinPrologues(n *tensor.Node, roots []*tensor.Node) bool {
	if !r.on || r.refused[n] || r.stored[n] || reduceLen(n) > maxPrologue {
		return false
	}
	for _, root := range roots {
		r.joined[root] = append(r.joined[root], n)
	}
	return true
}

// addRoot adds root to roots once.
func addRoot(roots []*tensor.Node, root *tensor.Node) []*tensor.Node {
	for _, x := range roots {
		if x == root {
			return roots
		}
	}
	return append(roots, root)
}

// fromReduce says whether n is computed, through elementwise and movement
// ops of nodes not realized, from a reduce that an EXPAND broadcasts over
// it (RMSNorm's mean over the vector), the reduce's value being less than
// a tenth of n's: a value computed once for the vector, not one of its
// elements (the q of a product's output, rotated).
func fromReduce(n *tensor.Node) bool {
	seen := map[*tensor.Node]bool{}
	var walk func(x *tensor.Node, expanded bool) bool
	walk = func(x *tensor.Node, expanded bool) bool {
		if seen[x] || x.Realized() != nil {
			return false
		}
		seen[x] = true
		if x.Op.IsReduce() {
			return expanded && x.Numel()*10 <= n.Numel()
		}
		if !x.Op.IsALU() && !x.Op.IsMovement() {
			return false
		}
		for _, s := range x.Src {
			if walk(s, expanded || x.Op == ir.OpExpand) {
				return true
			}
		}
		return false
	}
	return walk(n, false)
}

// refusePrologues refuses the prologues joined to root's kernel k when k
// has none the ir pass can compute once per launch (they are stored from
// the next try on), and says so.
func (r *rowKernels) refusePrologues(root *tensor.Node, k *ir.Kernel) bool {
	if len(r.pro[root]) == 0 || len(ir.PrologueValues(k)) > 0 {
		return false
	}
	for _, n := range r.pro[root] {
		r.noPro[n] = true
	}
	return true
}
