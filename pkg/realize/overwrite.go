package realize

import "tgc/pkg/ir"

// A kernel's output takes the memory of an input that dies with it (no
// later kernel reads it, the schedule does not return it) where
// ir.MayOverwrite proves that every element is read before the store
// over it: a prompt's softmax writes its probabilities over the attention
// scores (6 MiB a layer for a 110M model's 128-token chunk with 1024
// positions) instead of into a second buffer beside them. Only on targets
// whose global axes are loops (a grid runs its elements in any order),
// and not while TinyJit captures (its replay tells buffers apart by
// identity).

// planOverwrites fills each item's overwrite candidates: the argument
// positions of other items' outputs of its own type and size that its
// kernel may write over (asked once per kernel structure: first[i] is the
// item whose kernel i's repeats).
func planOverwrites(c *compiled, kernels []*ir.Kernel, first []int, t ir.Target) {
	if t.GPU != nil {
		return
	}
	type question struct{ kernel, arg int }
	may := map[question]bool{}
	for i := range c.items {
		it := &c.items[i]
		if it.dst >= 0 || it.zeroFill {
			continue
		}
		for j, r := range it.args[1:] {
			if r.leaf || r.idx == i {
				continue
			}
			if src := c.items[r.idx]; src.dtype != it.dtype || src.size != it.size || src.dst >= 0 {
				continue
			}
			q := question{first[i], j + 1}
			ok, asked := may[q]
			if !asked {
				ok = ir.MayOverwrite(kernels[q.kernel], q.arg)
				may[q] = ok
			}
			if ok {
				it.overwrite = append(it.overwrite, j+1)
			}
		}
	}
}

// placement is where a launch's output goes: exec's choice, made for the
// whole schedule before its launches so that the arena (arena.go) is laid
// out from the same choices.
type placement struct {
	zeroed bool // a fresh buffer reading as zeros (backend.ZeroAllocator), not launched
	dest   bool // an assign's destination, written in place
	over   int  // the item whose memory it takes (overwritten; -1: none)
}

// placeItems makes exec's choices for every launch in order: zero fills
// on a device that hands out zeroed buffers (zeroes), assigns in place,
// overwrites (lastUse nil: none, as while TinyJit captures), and the rest
// allocated.
func placeItems(c *compiled, lastUse []int, isOut map[int]bool, zeroes bool) []placement {
	places := make([]placement, len(c.items))
	owned := make([]bool, len(c.items))
	for pos, i := range c.order {
		it := &c.items[i]
		pl := placement{over: -1}
		switch {
		case zeroes && it.zeroFill && it.dst < 0:
			pl.zeroed, owned[i] = true, true
		case it.dst >= 0 && !it.temp:
			pl.dest = true
		default:
			if pl.over = overwritten(c, i, pos, lastUse, owned, isOut); pl.over >= 0 {
				owned[pl.over] = false
			}
			owned[i] = true
		}
		places[i] = pl
	}
	return places
}

// overwritten is the item whose buffer item i, launched at position pos,
// writes its output into, or -1: a candidate that nothing reads after
// pos, that the schedule does not return, and that i reads through no
// other argument (MayOverwrite proved one).
func overwritten(c *compiled, i, pos int, lastUse []int, owned []bool, isOut map[int]bool) int {
	it := &c.items[i]
	if isOut[i] || len(lastUse) == 0 {
		return -1 // a result: its own memory; or no lives known (a capture)
	}
	for _, j := range it.overwrite {
		src := it.args[j].idx
		if lastUse[src] != pos || !owned[src] || isOut[src] {
			continue
		}
		alone := true
		for k, r := range it.args[1:] {
			if k+1 != j && !r.leaf && r.idx == src {
				alone = false
			}
		}
		if alone {
			return src
		}
	}
	return -1
}
