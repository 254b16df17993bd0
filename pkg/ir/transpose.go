package ir

// transposeOpts blocks a transposing elementwise kernel for the L1. Such a
// kernel writes along its innermost axis and reads some input contiguous
// along an outer axis A instead, at a stride of a cache line or more along
// the innermost one (a prompt's RoPE over the projections that
// `weight @ x.T` left feature-major: E_128_12_64 reads q[f][t] and writes
// out[t][h][d]). Each line it reads holds 16 values of A, used one per
// iteration of A's loop, and the loops inside A read so many other lines
// between those uses (two a pair, 12 heads × 32 pairs: 768 lines, 48 KiB)
// that the L1 has lost the line by then. TILE blocks A (the block loop
// outermost, split across the cores) and OUTER puts the axis after A
// outside A's loop within a block: [t, h, d] becomes [t/8, h, t%8, d], and
// a head's 64 lines serve the block's tokens from the L1 (C harness, one
// thread, rows in L2: 79-82 µs → 36 µs, 33 with blocks of 16; in place, a
// prompt's RoPE launches 0.066-0.072 → 0.044-0.049 ms, those of the form
// with the pairs stacked 0.054-0.059 → 0.043). Blocks of 16 where
// A keeps 16 blocks for the cores, else of 8. opts are the kernel's other
// opts (splitOpts': a pair's lanes), kept; where no input is read that way,
// or its lines fit in half the L1, opts are returned as they are. (Two axes
// [t, f], a plain transposed copy, would need the tokens innermost and the
// stores scattered: gcc's code for that ran 2x slower for a prompt's, so
// those get transpose2D's tiles only where the rows are far apart.)
func (t Target) transposeOpts(k *Kernel, opts []Opt) []Opt {
	n := len(k.Global)
	if hasReduce(k) || k.HasSym() {
		return opts
	}
	if n == 2 {
		if o := t.transpose2D(k); o != nil {
			return o
		}
	}
	if n < 3 {
		return opts
	}
	for _, o := range opts {
		if o.Kind != OptUpcast {
			return opts // only the lanes splitOpts plans
		}
	}
	l1 := t.L1
	if l1 <= 0 {
		l1 = 32 << 10
	}
	lanes, err := t.ApplyOpts(k, opts) // its axes, the lanes split off, where the axes were
	if err != nil || len(lanes.Global) != n {
		return opts
	}
	var loads []*Expr
	Walk(lanes.Stores, func(e *Expr) {
		if e.Op == OpLoad {
			loads = append(loads, e)
		}
	})
	for i, a := range lanes.Global[:n-2] {
		if a.Size%16 != 0 || a.Size < 32 {
			continue
		}
		// the lines the loads read that way touch in the loops inside a:
		// a line an iteration of each inner loop they stride along by a
		// line or more (a stack's axis of two, read the same, adds none)
		lines := int64(0)
		for _, ld := range loads {
			if sa, _ := AxisStride(ld.Src[0], a); sa != 1 {
				continue
			}
			n := int64(1)
			for _, g := range lanes.Global[i+1:] {
				if s, ok := AxisStride(ld.Src[0], g); ok && abs64(s)*int64(ld.DType.Size()) >= 64 {
					n *= g.Size
				}
			}
			if n > 1 {
				lines += n
			}
		}
		if lines*64 <= l1/2 {
			continue
		}
		for _, o := range opts {
			if o.Axis == i {
				return opts // its lanes would have to divide the block
			}
		}
		amt := int64(16)
		if a.Size/16 < 16 {
			amt = 8 // at least 16 blocks to share among the cores
		}
		tiled := append(append([]Opt{}, opts...), Opt{Kind: OptTile, Axis: i, Amt: amt}, Opt{Kind: OptOuter, Axis: i + 1})
		if _, err := t.ApplyOpts(k, tiled); err != nil {
			return opts
		}
		return tiled
	}
	return opts
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// transpose2D blocks a plain transposed copy [a, b] (out[a][b] = in[b][a],
// an operand copied with another axis contiguous: a conv's weight with
// its output channels last) into 16x16 tiles: TILE a, a vector of 16
// along b, b's blocks outside a's within a tile, so that the tile's 16
// input lines serve its 16 rows from L1. Left as it is, the loop over b
// reads a line of every input row for each a, each line used for 16
// consecutive a's; at a row stride of 2 KiB or more (a/16 lines) those
// lines fall in 2 or fewer of the L1's 64 sets and 1/32 of the L2's,
// and from 256 rows on they are read again from farther out for every a.
// Measured on the Zen 5 guest (min of launches, the copy fused with a
// scale): 512x4608 into 4608x512 2.0-2.2 -> 0.72-0.79 ms, the other
// way 3.9-4.4 -> 1.0-1.1, 1024x1024 2.4 -> 1.2, 1024x256 0.34-0.41 ->
// 0.15-0.20; at 1 KiB strides (256x1024) the tiles were slower (0.21-0.25
// -> 0.31-0.34), as with 128 rows of 3 KiB (0.084 -> 0.093-0.101) and a
// prompt's transposes (12x64 by 128 tokens: 0.14-0.15 -> 0.32-0.37).
func (t Target) transpose2D(k *Kernel) []Opt {
	a, b := k.Global[0], k.Global[1]
	if a.Size%16 != 0 || b.Size%16 != 0 || b.Size < 256 {
		return nil
	}
	found := false
	Walk(k.Stores, func(e *Expr) {
		if e.Op != OpLoad {
			return
		}
		if sa, _ := AxisStride(e.Src[0], a); sa != 1 {
			return
		}
		if sb, ok := AxisStride(e.Src[0], b); ok && abs64(sb)*int64(e.DType.Size()) >= 2048 {
			found = true
		}
	})
	if !found {
		return nil
	}
	tiled := []Opt{{Kind: OptUpcast, Axis: 1, Amt: 16}, {Kind: OptTile, Axis: 0, Amt: 16}, {Kind: OptOuter, Axis: 1}}
	if _, err := t.ApplyOpts(k, tiled); err != nil {
		return nil
	}
	return tiled
}
