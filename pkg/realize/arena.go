package realize

import (
	"cmp"
	"slices"

	"tgc/pkg/backend"
	"tgc/pkg/ir"
)

// The one-shot arena. While SetOneShotScratch is on (a prompt's chunks)
// and the device can carve buffers (backend.Carver), a schedule's scratch
// is placed at offsets in one allocation planned before its launches:
// buffers whose lives do not overlap share memory whatever their sizes,
// where the device's pool reuses a freed buffer only for a request of its
// own size, so that the pool holds the largest number of each size live at
// once, not the most bytes live at once. A 900-token Q4_K prompt of a 110M
// model: 13.6 MB of pooled scratch, 9.2 MB live at most (launched as
// topoOrder orders them). The plan is TFLite's greedy by size (the largest
// buffers first, each at the lowest offset free for its whole life) or
// greedy by life (the longest lived first: the residual stream, written
// over by each layer, at the bottom), whichever needs less: 9.2 MB there,
// where by size alone left 0.66 MB of holes. The engine keeps the arena
// across the chunks' schedules (grown when one needs more) until the
// prompt ends.

// arenaAlign is what every buffer's offset in the arena is a multiple of:
// a cache line, as the lines a kernel streams to memory and its widest
// vectors want.
const arenaAlign = 64

// arenaPlan is where a schedule's scratch goes.
type arenaPlan struct {
	off  []int // each item's byte offset in the arena (-1: not in it)
	size int   // the arena's bytes
}

// planArena finds, from exec's choices (placeItems), each scratch
// buffer's life, from the launch that writes it to the last that reads it
// (an overwrite extends its input's), then places them.
func planArena(c *compiled, places []placement, lastUse []int, isOut map[int]bool) arenaPlan {
	var blocks []block
	in := make([]int, len(c.items)) // each item's block (-1: none)
	for i := range in {
		in[i] = -1
	}
	for pos, i := range c.order {
		it, pl := &c.items[i], places[i]
		switch {
		case pl.zeroed || pl.dest:
		case pl.over >= 0:
			if in[i] = in[pl.over]; in[i] >= 0 {
				blocks[in[i]].end = max(blocks[in[i]].end, lastUse[i])
			}
		case !isOut[i]:
			in[i] = len(blocks)
			size := (it.size*it.dtype.Size() + arenaAlign - 1) / arenaAlign * arenaAlign
			blocks = append(blocks, block{start: pos, end: max(pos, lastUse[i]), size: size})
		}
	}
	// Greedy by size, and greedy by life (the longest first: a residual
	// stream written over by each layer lives through the whole schedule
	// and is best at the bottom): the smaller arena.
	bySize := make([]int, len(blocks))
	for b := range bySize {
		bySize[b] = b
	}
	byLife := slices.Clone(bySize)
	slices.SortStableFunc(bySize, func(a, b int) int { return cmp.Compare(blocks[b].size, blocks[a].size) })
	slices.SortStableFunc(byLife, func(a, b int) int {
		return cmp.Or(cmp.Compare(blocks[b].end-blocks[b].start, blocks[a].end-blocks[a].start), cmp.Compare(blocks[b].size, blocks[a].size))
	})
	offs, size := place(blocks, bySize)
	if o, s := place(blocks, byLife); s < size {
		offs, size = o, s
	}
	plan := arenaPlan{off: make([]int, len(c.items)), size: size}
	for i := range plan.off {
		plan.off[i] = -1
		if in[i] >= 0 {
			plan.off[i] = offs[in[i]]
		}
	}
	return plan
}

// block is a buffer's life in the arena: the launches from the one that
// writes it to the last that reads it, and its bytes.
type block struct{ start, end, size int }

// place puts each block, in the order given, at the lowest offset free for
// its whole life; it returns the offsets and the arena's size.
func place(blocks []block, order []int) ([]int, int) {
	offs := make([]int, len(blocks))
	var placed []int // by offset
	size := 0
	for _, b := range order {
		bl := blocks[b]
		off := 0
		for _, p := range placed {
			q := blocks[p]
			if q.start > bl.end || bl.start > q.end {
				continue // their lives do not overlap
			}
			if off+bl.size <= offs[p] {
				break
			}
			off = max(off, offs[p]+q.size)
		}
		offs[b] = off
		size = max(size, off+bl.size)
		at, _ := slices.BinarySearchFunc(placed, off, func(p, o int) int { return cmp.Compare(offs[p], o) })
		placed = slices.Insert(placed, at, b)
	}
	return offs, size
}

// oneShotArena is the arena, at least size bytes: a larger one replaces
// it, and the old one's memory goes back to the system at once (a
// prompt's first chunk, shorter than the rest, plans a smaller arena).
func (e *Engine) oneShotArena(size int) (backend.Buffer, error) {
	if e.arena != nil && e.arenaSize >= size {
		return e.arena, nil
	}
	e.dropArena()
	b, err := e.allocScratch(ir.Uint8, max(size, 1))
	if err != nil {
		return nil, err
	}
	e.arena, e.arenaSize = b, size
	return b, nil
}

// dropArena frees the arena, its memory back to the system.
func (e *Engine) dropArena() {
	if e.arena == nil {
		return
	}
	e.arena.Free()
	e.arena, e.arenaSize = nil, 0
	if m, ok := e.Dev.(backend.MemoryCounter); ok {
		m.ReleasePooled()
	}
}
