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
// reduce's loop in root's kernel would recompute for every row, joins
// that kernel as a prologue: it is small, computed from a reduce (else
// storing it is as cheap), and not refused before.
func (r *rowKernels) prologue(n, root *tensor.Node) bool {
	if !r.on || root == nil || r.noPro[n] || n.Numel() > maxPrologue || !fromReduce(n) {
		return false
	}
	r.pro[root] = append(r.pro[root], n)
	return true
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
