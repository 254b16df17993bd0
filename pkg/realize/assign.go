package realize

import (
	"fmt"
	"slices"

	"tgc/pkg/backend"
	"tgc/pkg/fuse"
	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// In-place assign. An assign node (tensor.Node.AssignTarget) is a kernel
// whose output is its destination's existing buffer, so parameters and
// optimizer state keep their memory across steps. planAssigns orders the
// launches so that every kernel reading the destination's old value runs
// before the write. An assign that cannot be ordered so — its own kernel
// reads the destination at another index (x.assign(x.flip(0))), or a
// kernel that reads the old value also needs the new one — writes a
// temporary buffer, copied into the destination after every launch.
// When several assigns of one schedule target the same memory, only the
// last one writes it; the others get buffers of their own.

// planAssigns fills c.order and c.copies, and the dst/temp fields.
func planAssigns(c *compiled, sched *fuse.Schedule, g *graph, itemIdx map[*tensor.Node]int) {
	n := len(c.items)
	c.order = make([]int, n)
	for i := range c.order {
		c.order[i] = i
	}
	last := map[int]int{} // memory group -> the assign writing it
	for i := range c.items {
		if d := c.items[i].dst; d >= 0 {
			if j, ok := last[g.group[d]]; ok {
				c.items[j].dst = -1
			}
			last[g.group[d]] = i
		}
	}
	if len(last) == 0 {
		return
	}
	// readers of each memory group, and each item's dependents
	readers := map[int][]int{}
	users := make([][]int, n)
	for i, it := range c.items {
		for _, r := range it.args[1:] {
			if r.leaf {
				grp := g.group[r.idx]
				if !slices.Contains(readers[grp], i) {
					readers[grp] = append(readers[grp], i)
				}
			} else if r.idx != i && !slices.Contains(users[r.idx], i) {
				users[r.idx] = append(users[r.idx], i)
			}
		}
	}
	after := make([][]int, n) // extra edges: after[a] = items that must run before a
	for _, a := range last {
		it := &c.items[a]
		grp := g.group[it.dst]
		if readsShifted(sched.Items[a].Out, g, grp, itemIdx) {
			it.temp = true
			continue
		}
		down := descendants(a, users)
		for _, r := range readers[grp] {
			if r == a {
				continue
			}
			if down[r] {
				it.temp = true
				break
			}
			after[a] = append(after[a], r)
		}
		if it.temp {
			after[a] = nil
		}
	}
	feeds := feedsAssigns(c, users)
	for {
		order, stuck := topoOrder(n, users, after, feeds)
		if stuck < 0 {
			c.order = order
			break
		}
		c.items[stuck].temp = true // break the cycle with a copy
		after[stuck] = nil
	}
	for i, it := range c.items {
		if it.dst >= 0 && it.temp {
			c.copies = append(c.copies, i)
		}
	}
}

// readsShifted reports whether the kernel of assign node a reads memory
// group grp other than elementwise at the index it writes (through a
// movement op or a reduce), so that writing in place could clobber
// elements it has yet to read.
func readsShifted(a *tensor.Node, g *graph, grp int, itemIdx map[*tensor.Node]int) bool {
	group := map[*tensor.Node]int{}
	for i, l := range g.leaves {
		group[l] = g.group[i]
	}
	type key struct {
		n    *tensor.Node
		pure bool
	}
	seen := map[key]bool{}
	var walk func(n *tensor.Node, pure bool) bool
	walk = func(n *tensor.Node, pure bool) bool {
		if seen[key{n, pure}] {
			return false
		}
		seen[key{n, pure}] = true
		if n.Realized() != nil {
			grpN, ok := group[n]
			return ok && grpN == grp && !pure
		}
		if _, ok := itemIdx[n]; ok {
			return false // another kernel's output
		}
		pure = pure && n.Op.IsALU()
		for _, s := range n.Src {
			if walk(s, pure) {
				return true
			}
		}
		return false
	}
	return walk(a.Src[0], true)
}

// descendants are the items that read a's output, directly or not.
func descendants(a int, users [][]int) map[int]bool {
	down := map[int]bool{}
	stack := []int{a}
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, u := range users[i] {
			if !down[u] {
				down[u] = true
				stack = append(stack, u)
			}
		}
	}
	return down
}

// feedsAssigns marks the items whose values go only into memory that
// already exists: an assign writing its destination, and an item all of
// whose readers are so marked (an assign's value computed from scratch
// nothing else reads).
func feedsAssigns(c *compiled, users [][]int) []bool {
	feeds := make([]bool, len(c.items))
	for i := len(c.items) - 1; i >= 0; i-- { // readers come later in the schedule
		it := &c.items[i]
		if it.dst >= 0 && !it.temp {
			feeds[i] = true
			continue
		}
		feeds[i] = len(users[i]) > 0 && !slices.Contains(c.outs, i)
		for _, u := range users[i] {
			feeds[i] = feeds[i] && feeds[u]
		}
	}
	return feeds
}

// topoOrder orders the items so that each runs after the items it reads
// and the items in after[i]: among the ready ones, the first in the
// schedule of those that only feed assigns (feeds), else the first. An
// assign's value then goes into its memory as soon as it can, and the
// scratch it is computed from is freed before work that does not feed
// one: a prompt's keys and values go into the KV cache before the chunk's
// scores are computed, so the value projection's dequantized weights are
// not live beside the softmax over them (a 110M model's chunk: 0.66 MB of
// its 9.8 MB arena). On a cycle it returns the smallest blocked item that
// has extra edges.
func topoOrder(n int, users, after [][]int, feeds []bool) ([]int, int) {
	indeg := make([]int, n)
	succ := make([][]int, n)
	for i := range n {
		for _, u := range users[i] {
			succ[i] = append(succ[i], u)
			indeg[u]++
		}
		for _, r := range after[i] {
			succ[r] = append(succ[r], i)
			indeg[i]++
		}
	}
	done := make([]bool, n)
	var order []int
	for len(order) < n {
		next := -1
		for i := range n {
			if !done[i] && indeg[i] == 0 && (next < 0 || feeds[i] && !feeds[next]) {
				next = i
			}
		}
		if next < 0 {
			for i := range n {
				if !done[i] && len(after[i]) > 0 {
					return nil, i
				}
			}
			panic("realize: cycle in a schedule without assigns")
		}
		done[next] = true
		order = append(order, next)
		for _, s := range succ[next] {
			indeg[s]--
		}
	}
	return order, -1
}

// copyBuffer copies src into dst (through the host: the rare assigns that
// cannot write in place).
func copyBuffer(dst, src backend.Buffer, dt ir.DType, size int) error {
	data := make([]byte, size*dt.Size())
	if err := src.CopyOut(data); err != nil {
		return err
	}
	return dst.CopyIn(data)
}

func staleError(n *tensor.Node) error {
	if b := n.Realized(); b != nil && b.Released() {
		return fmt.Errorf("this tensor (%s) reads memory that was given back to the device (Tensor.Release)", n)
	}
	return fmt.Errorf("this tensor (%s) was computed from a buffer that an in-place assign (an optimizer step or .assign) has overwritten since: realize it before the assign (call .realize() on it, or compute it before opt.step())", n)
}
