package realize

// sinkLeafReaders moves every kernel that reads nothing but the graph's
// leaves to just before the first kernel that reads its output. The
// schedule lists such kernels early (they are ready first); a quantized
// weight's dequantization into a prompt's scratch (a float copy of one
// matrix) then stays live while other matrices' copies are made: a Q4_K
// prefill held the gate's, the up projection's and the down projection's
// copies at once (6 MiB each for a 110M model) where one at a time is
// enough. Kernels that read memory an assign of the schedule writes keep
// their place (planAssigns ordered them before the write), and so do
// assigns and kernels nothing else reads.
func sinkLeafReaders(c *compiled, g *graph) {
	written := map[int]bool{} // memory groups the schedule's assigns write
	for _, it := range c.items {
		if it.dst >= 0 {
			written[g.group[it.dst]] = true
		}
	}
	firstUser := make([]int, len(c.items))
	for i := range firstUser {
		firstUser[i] = -1
	}
	for _, j := range c.order {
		for _, r := range c.items[j].args[1:] {
			if !r.leaf && r.idx != j && firstUser[r.idx] < 0 {
				firstUser[r.idx] = j
			}
		}
	}
	movable := make([]bool, len(c.items))
	before := map[int][]int{} // user -> the kernels to launch just before it
	for _, i := range c.order {
		it := c.items[i]
		if it.dst >= 0 || firstUser[i] < 0 {
			continue
		}
		leavesOnly := true
		for _, r := range it.args[1:] {
			if !r.leaf || written[g.group[r.idx]] {
				leavesOnly = false
				break
			}
		}
		if leavesOnly {
			movable[i] = true
			before[firstUser[i]] = append(before[firstUser[i]], i)
		}
	}
	order := make([]int, 0, len(c.order))
	for _, j := range c.order {
		if movable[j] {
			continue
		}
		order = append(order, before[j]...)
		order = append(order, j)
	}
	c.order = order
}
