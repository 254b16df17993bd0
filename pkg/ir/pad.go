package ir

import (
	"fmt"
	"slices"
)

// PADTO: a global axis whose size no vector width divides (GPT-2's 50257
// classes, a 1001-wide matrix, 15000003 elements) gets no UPCAST, so its
// kernel ran in scalar code: (128x768)@(768x50257) took 2.4 s (4 GFLOP/s)
// on the Zen 5 guest, padded 37-39 ms. PadAxis rounds the axis up to a
// multiple of amt and makes its last block overlap the one before it: the
// padded axis p reads the old one as
//
//	min(p - p%amt, size - amt) + p%amt
//
// so every block of amt consecutive values of p stores amt consecutive
// elements (one vector store, loads one vector each) and the last block
// stores the last amt elements, some of them a second time. No guard, no
// index out of range, and an upcast by a multiple of amt divides the axis.
//
// Storing an element twice is harmless only when both stores write the
// same value: the kernel must not read what it writes (padRefusal), its
// output must not be an input's memory (an assign: Kernel.InPlace; the
// engine's overwrites: OverwriteRefusal), and no plan may accumulate into
// or rescale the output in place (KBLOCK: refused with PADTO; a keep plan
// does not match the overlapping index, as TestPadAxis checks).

// OptPad pads a global axis up to a multiple of Amt (PadAxis); PADTOs come
// first in a list, and the opts after them see the padded sizes.
const OptPad OptKind = "PADTO"

// padPrefix is the number of PADTOs that open opts.
func padPrefix(opts []Opt) int {
	n := 0
	for n < len(opts) && opts[n].Kind == OptPad {
		n++
	}
	return n
}

// padRefusal says why global axis i of k cannot be padded to a multiple of
// amt ("" if it can).
func padRefusal(k *Kernel, i int, amt int64) string {
	if i < 0 || i >= len(k.Global) {
		return fmt.Sprintf("axis %d out of range (%d global axes)", i, len(k.Global))
	}
	a := k.Global[i]
	switch {
	case a.Sym != nil:
		return "a symbolic trip count"
	case amt < 2 || amt > MaxLanes:
		return fmt.Sprintf("a block of %d", amt)
	case a.Size%amt == 0:
		return fmt.Sprintf("%d already divides size %d", amt, a.Size)
	case a.Size < amt:
		return fmt.Sprintf("size %d is less than one block of %d", a.Size, amt)
	case k.InPlace:
		return "its output is written over its input (an assign)"
	case k.Group != 0:
		return "a grid kernel"
	}
	reads := ""
	Walk(k.Stores, func(e *Expr) {
		if e.Op == OpLoad && k.Bufs[e.Arg.(int)].Output && reads == "" {
			reads = fmt.Sprintf("it reads its output buf%d", e.Arg.(int))
		}
	})
	return reads
}

// PadAxis pads global axis i of k to a multiple of amt (see above).
func PadAxis(k *Kernel, i int, amt int64) (*Kernel, error) {
	if why := padRefusal(k, i, amt); why != "" {
		return nil, fmt.Errorf("cannot pad axis %d to a multiple of %d: %s", i, amt, why)
	}
	last := k.Global[i].Size - amt // where the last block starts
	return roundedUp(k, []Opt{{Axis: i, Amt: amt}}, func(b *Builder, p *Expr) *Expr {
		block := b.Mul(b.Div(p, b.Int(amt)), b.Int(amt))
		// min(block, last) as last - max(last-block, 0): the bounds of
		// MAX are exact, so the index provably stays below the old size
		start := b.Sub(b.Int(last), b.Alu(OpMax, b.Sub(b.Int(last), block), b.Int(0)))
		return b.Add(start, b.Mod(p, b.Int(amt)))
	}), nil
}

// roundedUp is k with each global axis o.Axis of blocks rounded up to a
// multiple of o.Amt, its variable read as index(the new variable).
func roundedUp(k *Kernel, blocks []Opt, index func(b *Builder, v *Expr) *Expr) *Kernel {
	long := map[*Axis]*Axis{}
	for _, o := range blocks {
		a := k.Global[o.Axis]
		long[a] = &Axis{ID: a.ID, Size: (a.Size + o.Amt - 1) / o.Amt * o.Amt, Kind: a.Kind}
	}
	nk := k.rewrite(func(b *Builder, e *Expr) *Expr {
		if e.Op == OpVar {
			if l := long[e.Arg.(*Axis)]; l != nil {
				return index(b, b.Var(l))
			}
		}
		return nil
	})
	nk.Global = slices.Clone(k.Global)
	for i, a := range nk.Global {
		if l := long[a]; l != nil {
			nk.Global[i] = l
		}
	}
	return nk
}

// Padded says whether k was given a PADTO opt: its last blocks store some
// elements twice.
func (k *Kernel) Padded() bool {
	for _, o := range k.Opts {
		if o.Kind == OptPad {
			return true
		}
	}
	return false
}

// padCandidates are the global axes the heuristic may pad, each with its
// block: an axis along which a store is contiguous to a multiple of the
// vector width w (if it holds at least two vectors), or of 2w where w
// divides it and 2w does not (if at least 4w long: 11, 13 or 15 vectors
// would otherwise take one vector by 16 rows or channels, which loads 17
// values per 16 FMAs; two by 8 load 10; measured at 16 lanes: at 8,
// conv2d_resnet's 56 columns ran the same either way), any other to a
// multiple of 8 (if at least 32 long: an upcast of it reuses each load
// of the other operand; GPT-2's 50257 classes as the rows of x @ w.T),
// or of 4 if it is shorter and no register block from 3 to 8 divides it
// (the 13 rows of AlexNet's and SqueezeNet's last convs; 22 or 26 rows,
// which took blocks of 2: 64 channels 128-186 -> 214-351 GFLOP/s).
func padCandidates(k *Kernel, w int64) []Opt {
	var out []Opt
	for i, a := range k.Global {
		amt, least := int64(8), int64(32)
		if storedAlong(k, a) {
			amt, least = w, 2*w
			if a.Size%w == 0 && a.Size%(2*w) != 0 && w >= 16 {
				amt, least = 2*w, 4*w
			}
		} else if a.Size < least && largestDivisor(a.Size, 8, 7, 6, 5, 4, 3) == 1 {
			amt, least = 4, 8
		}
		if a.Sym == nil && a.Size%amt != 0 && a.Size >= least && padRefusal(k, i, amt) == "" {
			out = append(out, Opt{Kind: OptPad, Axis: i, Amt: amt})
		}
	}
	return out
}

// storedAlong says whether a store of k is contiguous along axis a.
func storedAlong(k *Kernel, a *Axis) bool {
	for _, st := range k.Stores {
		if s, ok := AxisStride(st.Src[0], a); ok && s == 1 {
			return true
		}
	}
	return false
}

// padOpts are the heuristic's opts for k with axes padded (PADTO), or nil
// where padding buys nothing over plain (the heuristic's opts for k). The
// heuristic decides for a stand-in, the kernel with each candidate axis
// as long as its padding (the padded kernel's overlapping index would
// hide its strides), without KBLOCK (which does not combine with PADTO);
// the axes it upcasts or tiles are padded. That is taken where it blocks
// more lanes than plain does, or blocks a contiguous axis in whole
// vectors where plain does not (half vectors unless the FMA units are
// known to run whole ones: on Zen 4 they cost nothing; nor the whole
// axis: a conv's 40 columns in 2x16+8 lanes waste none).
func (t Target) padOpts(k *Kernel, plain []Opt) []Opt {
	if !t.Upcast || t.GPU != nil {
		return nil
	}
	w := t.Width()
	unit := w / 2
	if int64(t.FMAWidth) >= w {
		unit = w
	}
	contiguous := func(c Opt) bool { return storedAlong(k, k.Global[c.Axis]) }
	cands := slices.DeleteFunc(padCandidates(k, w), func(c Opt) bool {
		p := upcastLanes(plain, c.Axis)
		// blocked whole, or in whole vectors (at least two where the
		// padding is to two)
		return contiguous(c) && (p%unit == 0 && (c.Amt == w || p >= c.Amt) || p == k.Global[c.Axis].Size)
	})
	for len(cands) > 0 {
		opts := slices.DeleteFunc(t.heuristicOpts(standIn(k, cands)), func(o Opt) bool { return o.Kind == OptKBlock })
		// a contiguous axis blocked in part vectors is not worth its
		// padding: decide again without it
		n := len(cands)
		cands = slices.DeleteFunc(cands, func(c Opt) bool { return contiguous(c) && upcastLanes(opts, c.Axis)%unit != 0 })
		if len(cands) < n {
			continue
		}
		var pads []Opt
		better := upcastLanes(opts, -1) > upcastLanes(plain, -1)
		for _, c := range cands {
			if slices.ContainsFunc(opts, func(o Opt) bool { return (o.Kind == OptUpcast || o.Kind == OptTile) && o.Axis == c.Axis }) {
				pads = append(pads, c)
				better = better || contiguous(c)
			}
		}
		if len(pads) == 0 || !better {
			return nil
		}
		opts = append(pads, opts...)
		pk, err := t.ApplyOpts(k, opts)
		if err != nil {
			return nil
		}
		if pl, err := t.ApplyOpts(k, plain); err == nil && t.vectorLanes(pk) < t.vectorLanes(pl) {
			// lanes the simd pass could not make vectors of (a conv
			// weight gradient through a pool's gradient at 8 lanes: 64
			// scalar accumulators, 24-29 ms against 2.5-2.7 plain)
			return nil
		}
		return opts
	}
	return nil
}

// vectorLanes counts the lanes of k (after its opts) that the simd pass
// makes vectors of: its vector accumulators', or where there are none its
// vector stores' (-1 where the passes up to simd refuse the kernel).
func (t Target) vectorLanes(k *Kernel) int {
	k, err := t.afterOpts(k, "simd")
	if err != nil {
		return -1
	}
	if k.SIMD == nil {
		return 0
	}
	if n := runLanes(k.SIMD.Accs); n > 0 {
		return n
	}
	return runLanes(k.SIMD.Stores)
}

// runLanes counts the lanes of the runs of more than one lane.
func runLanes(runs [][]*Expr) int {
	n := 0
	for _, r := range runs {
		if len(r) > 1 {
			n += len(r)
		}
	}
	return n
}

// standIn is k with each axis of cands as long as its padding, its index
// left as it is (out of range past the old size: for the heuristic's eyes
// only), and cands among its opts (the heuristic does not upcast all of a
// padded axis, see paddedWhole).
func standIn(k *Kernel, cands []Opt) *Kernel {
	nk := roundedUp(k, cands, func(_ *Builder, v *Expr) *Expr { return v })
	nk.Opts = append(slices.Clone(k.Opts), cands...)
	return nk
}

// paddedWhole says whether u lanes of axis a of k would be all of an axis
// padOpts' stand-in pads: ApplyOpts refuses that (the lanes past the old
// size repeat indices of the lanes before them, so the builder merges
// them and nothing is gained).
func paddedWhole(k *Kernel, a *Axis, u int64) bool {
	i := axisIndex(k, a)
	return u == a.Size && slices.ContainsFunc(k.Opts, func(o Opt) bool { return o.Kind == OptPad && o.Axis == i })
}

// upcastLanes is the lanes opts upcast axis i into (every axis: -1).
func upcastLanes(opts []Opt, i int) int64 {
	n := int64(1)
	for _, o := range opts {
		if o.Kind == OptUpcast && (i < 0 || o.Axis == i) {
			n *= o.Amt
		}
	}
	return n
}
