package ir

import (
	"fmt"
	"slices"
	"strings"
)

// Opts are the kernel optimizer's decisions as data: the heuristic picks a
// list, BEAM search tries many and stores the winner on disk, and applying
// the same list to the same kernel always gives the same code. Axes are
// positions in the Global list of the kernel the opts apply to (the kernel
// after simplify and merge_axes), so a stored list replays on a rebuilt
// kernel.

// OptKind names one kind of decision.
type OptKind string

const (
	// OptUpcast splits a global axis into a loop and Amt register lanes
	// (repeated upcasts of one axis multiply).
	OptUpcast OptKind = "UPCAST"
	// OptUnroll splits a reduce axis (Axis indexes ReduceAxes) into a loop
	// and Amt lanes with one accumulator each, combined after the loop.
	OptUnroll OptKind = "UNROLL"
	// OptOuter makes a global axis the outermost loop: the one split across
	// cores, and the one that varies slowest (loop order for locality).
	OptOuter OptKind = "OUTER"
	// OptKBlock blocks a reduce axis (Axis indexes ReduceAxes) into an
	// outer loop over blocks of Amt, accumulating in the output (KBlock).
	OptKBlock OptKind = "KBLOCK"
	// OptTile blocks a global axis (cache blocking of an output axis,
	// GotoBLAS's mc): an outermost loop over blocks of Amt of its elements
	// (the loop split across cores) around the loop within a block, which
	// keeps the axis's place (see Tile).
	OptTile OptKind = "TILE"
	// OptGroup splits each top-level reduce of a grid kernel across the
	// Amt lanes of a work-group, one work-group per output (see gpu.go).
	OptGroup OptKind = "GROUP"
)

// Opt is one decision.
type Opt struct {
	Kind OptKind `json:"kind"`
	Axis int     `json:"axis"`
	Amt  int64   `json:"amt,omitempty"`
}

func (o Opt) String() string {
	switch o.Kind {
	case OptUpcast, OptUnroll, OptKBlock, OptTile, OptPad:
		return fmt.Sprintf("%s(%d,%d)", o.Kind, o.Axis, o.Amt)
	case OptGroup:
		return fmt.Sprintf("%s(%d)", o.Kind, o.Amt)
	}
	return fmt.Sprintf("%s(%d)", o.Kind, o.Axis)
}

// FormatOpts prints a list for DEBUG lines ("[]" for none).
func FormatOpts(opts []Opt) string {
	s := make([]string, len(opts))
	for i, o := range opts {
		s[i] = o.String()
	}
	return "[" + strings.Join(s, " ") + "]"
}

// MaxLanes bounds the lanes of one register block: the accumulators must
// live in registers (16 AVX2 registers of 8 floats, 32 AVX-512 ones of 16;
// more spills, and the C compiler's time grows steeply with the lanes).
// BEAM's actions stay within the target's accumulator budget (Target.Accs).
const MaxLanes = 256

// ApplyOpts applies a list of decisions; an invalid list (axis out of
// range, an amount that does not divide its axis, too many lanes) is an
// error, so a stale cache entry can never produce a wrong kernel.
func ApplyOpts(k *Kernel, opts []Opt) (*Kernel, error) {
	plan := map[*Axis]int64{}
	unroll := map[*Axis]int64{}
	raxes := k.ReduceAxes()
	outer := -1
	lanes := int64(1)
	var kblock *Axis
	var kc int64
	tile, tileAmt := -1, int64(0)
	group := int64(0)
	var padded []*Axis
	for i, o := range opts {
		switch o.Kind {
		case OptPad:
			// first, so that the opts after it (and their checks) see
			// the padded kernel; its axes keep their places
			if i >= padPrefix(opts) {
				return nil, fmt.Errorf("%s: PADTO comes before the other opts", o)
			}
			pk, err := PadAxis(k, o.Axis, o.Amt)
			if err != nil {
				return nil, fmt.Errorf("%s: %v", o, err)
			}
			k, raxes, padded = pk, pk.ReduceAxes(), append(padded, pk.Global[o.Axis])
			continue
		case OptGroup:
			if group > 0 || o.Amt < 2 || o.Amt > maxGroupLanes || o.Amt&(o.Amt-1) != 0 || o.Axis != 0 || !hasReduce(k) {
				return nil, fmt.Errorf("%s: needs one power-of-two lane count and a kernel with a reduce", o)
			}
			if !groupableSym(k) {
				return nil, fmt.Errorf("%s: a symbolic trip count on a global axis or an inner reduce axis", o)
			}
			group = o.Amt
			continue
		case OptKBlock:
			if o.Axis < 0 || o.Axis >= len(raxes) {
				return nil, fmt.Errorf("%s: reduce axis %d out of range (%d reduce axes)", o, o.Axis, len(raxes))
			}
			a := raxes[o.Axis]
			if kblock != nil {
				return nil, fmt.Errorf("%s: a reduce axis is already blocked", o)
			}
			if a.Sym != nil {
				return nil, fmt.Errorf("%s: reduce axis %d has a symbolic trip count", o, o.Axis)
			}
			if o.Amt < 2 || o.Amt >= a.Size || a.Size%o.Amt != 0 {
				return nil, fmt.Errorf("%s: blocks of %d do not divide axis size %d", o, o.Amt, a.Size)
			}
			if err := kblockable(k, a); err != nil {
				return nil, fmt.Errorf("%s: %v", o, err)
			}
			kblock, kc = a, o.Amt
			continue
		case OptUnroll:
			if o.Axis < 0 || o.Axis >= len(raxes) {
				return nil, fmt.Errorf("%s: reduce axis %d out of range (%d reduce axes)", o, o.Axis, len(raxes))
			}
			a := raxes[o.Axis]
			if a.Sym != nil {
				return nil, fmt.Errorf("%s: reduce axis %d has a symbolic trip count", o, o.Axis)
			}
			u, err := splitLanes(o, unroll[a], a.Size, &lanes)
			if err != nil {
				return nil, err
			}
			unroll[a] = u
			continue
		}
		if o.Axis < 0 || o.Axis >= len(k.Global) {
			return nil, fmt.Errorf("%s: axis %d out of range (%d global axes)", o, o.Axis, len(k.Global))
		}
		a := k.Global[o.Axis]
		switch o.Kind {
		case OptUpcast:
			if a.Sym != nil {
				return nil, fmt.Errorf("%s: axis %d has a symbolic trip count", o, o.Axis)
			}
			u, err := splitLanes(o, plan[a], a.Size, &lanes)
			if err != nil {
				return nil, err
			}
			plan[a] = u
		case OptTile:
			if tile >= 0 {
				return nil, fmt.Errorf("%s: axis %d is already tiled", o, tile)
			}
			if a.Sym != nil || o.Amt < 2 || o.Amt >= a.Size || a.Size%o.Amt != 0 {
				return nil, fmt.Errorf("%s: blocks of %d do not divide axis size %d", o, o.Amt, a.Size)
			}
			tile, tileAmt = o.Axis, o.Amt
		case OptOuter:
			if outer >= 0 {
				return nil, fmt.Errorf("%s: the outer axis is already %d", o, outer)
			}
			outer = o.Axis
		default:
			return nil, fmt.Errorf("unknown opt kind %q", o.Kind)
		}
	}
	if len(padded) > 0 && (kblock != nil || group > 0) {
		// KBLOCK adds into the output: a twice-stored element would be
		// added twice
		return nil, fmt.Errorf("%s: PADTO does not combine with KBLOCK or GROUP", FormatOpts(opts))
	}
	for _, a := range padded {
		if plan[a] == a.Size {
			// one iteration holding the last block and the one before it
			// stores the same elements at the same (constant) indices;
			// all of the axis needs no padding
			return nil, fmt.Errorf("%s: upcasts all of a padded axis (upcast it unpadded)", FormatOpts(opts))
		}
	}
	if kblock != nil && unroll[kblock] > 0 {
		return nil, fmt.Errorf("%s: reduce axis %d both unrolled and blocked", FormatOpts(opts), kblock.ID)
	}
	if lanes > MaxLanes {
		lanes = laneCount(k, plan, unroll) // the product overcounts reduces that do not use every axis
	}
	if lanes > MaxLanes {
		return nil, fmt.Errorf("%s: %d lanes exceed %d", FormatOpts(opts), lanes, MaxLanes)
	}
	if group > 0 && (lanes > 1 || kblock != nil) {
		// A grouped reduce is rendered one member at a time.
		return nil, fmt.Errorf("%s: GROUP does not combine with UPCAST, UNROLL or KBLOCK", FormatOpts(opts))
	}
	var tiled *Axis
	if tile >= 0 {
		u := max(plan[k.Global[tile]], 1)
		if tileAmt%u != 0 || tileAmt/u < 2 {
			return nil, fmt.Errorf("%s: blocks of %d are not a multiple of 2x its %d lanes", FormatOpts(opts), tileAmt, u)
		}
		tileAmt /= u // in steps of the upcast loop
	}
	if group > 0 && tile >= 0 {
		return nil, fmt.Errorf("%s: GROUP does not combine with TILE", FormatOpts(opts))
	}
	if len(plan) > 0 {
		k = UpcastAxes(k, plan)
	}
	if len(unroll) > 0 {
		k = UnrollAxes(k, unroll)
	}
	if tile >= 0 {
		tiled = k.Global[tile]
	}
	if outer > 0 {
		nk := *k
		nk.Global = append([]*Axis{k.Global[outer]}, k.Global[:outer]...)
		nk.Global = append(nk.Global, k.Global[outer+1:]...)
		k = &nk
	}
	if tiled != nil {
		k = Tile(k, tiled, tileAmt)
	}
	if kblock != nil {
		k = KBlock(k, kblock, kc)
	}
	if len(opts) > 0 {
		nk := *k
		nk.Opts = append(append([]Opt{}, k.Opts...), opts...)
		if group > 0 {
			nk.Group = group
		}
		k = &nk
	}
	return k, nil
}

// ApplyOpts is ApplyOpts for the target: it also refuses the kinds of
// opts the target cannot run. GROUP needs a work-group (a grid device);
// KBLOCK needs its block loop to run in order within each core and TILE
// its block loop outermost (loop targets: on a grid, KBLOCK's partial
// sums would race, and a grid has no loop order to block). PADTO stays on
// loop targets too: the grid renderers' plans were never checked against
// its overlapping last block.
func (t Target) ApplyOpts(k *Kernel, opts []Opt) (*Kernel, error) {
	for _, o := range opts {
		if o.Kind == OptGroup && t.GPU == nil || (o.Kind == OptKBlock || o.Kind == OptTile || o.Kind == OptPad) && t.GPU != nil {
			return nil, fmt.Errorf("%s: not an opt of this target", o)
		}
	}
	return ApplyOpts(k, opts)
}

func hasReduce(k *Kernel) bool {
	found := false
	Walk(k.Stores, func(e *Expr) { found = found || e.Op == OpReduce })
	return found
}

// splitLanes checks one more split of an axis of size by o.Amt (prev: the
// lanes the axis has so far, 0 for none) and returns the axis's lanes. The
// amount is bounded before any product is formed, so an amount read from a
// file (4611686018427387904) cannot overflow into a division by zero; the
// running product of all amounts (an upper bound of the lanes, checked by
// ApplyOpts) saturates instead of overflowing.
func splitLanes(o Opt, prev, size int64, lanes *int64) (int64, error) {
	prev = max(prev, 1)
	if o.Amt < 2 || o.Amt > size/prev || size%(prev*o.Amt) != 0 {
		return 0, fmt.Errorf("%s: %d×%d lanes do not divide axis size %d", o, prev, o.Amt, size)
	}
	*lanes = min(*lanes, 1<<20) * min(o.Amt, 1<<20)
	return prev * o.Amt, nil
}

// searchable says whether a kernel has decisions worth making: a reduce
// long enough for register blocking to pay.
func searchable(k *Kernel) bool {
	if len(k.Global) == 0 {
		return false
	}
	reduceSize := int64(0)
	Walk(k.Stores, func(e *Expr) {
		if e.Op == OpReduce {
			n := int64(1)
			for _, a := range e.Arg.(*ReduceArg).Axes {
				n *= a.Size
			}
			reduceSize = max(reduceSize, n)
		}
	})
	return reduceSize >= 16
}

// Searchable says whether BEAM searches a kernel: searchable, and with
// constant trip counts (timing a symbolic one would time one value of it).
func Searchable(k *Kernel) bool { return !k.HasSym() && searchable(k) }

// Actions lists the single decisions that extend opts on kernel k (the
// kernel before any opts) for the default vector width; see Target.Actions.
func Actions(k *Kernel, opts []Opt) []Opt { return Target{}.Actions(k, opts) }

// Actions lists the single decisions that extend opts on kernel k (the
// kernel before any opts): BEAM's neighbourhood of a candidate, within 8
// vector accumulators of the target's width.
func (t Target) Actions(k *Kernel, opts []Opt) []Opt {
	if !Searchable(k) {
		return nil
	}
	if t.GPU != nil {
		return t.GPU.actions(k, opts)
	}
	// The opts after the PADTOs see the padded kernel, and no KBLOCK
	// (ApplyOpts); more PADTOs only before any other opt.
	n := padPrefix(opts)
	pk := k
	for _, o := range opts[:n] {
		var err error
		if pk, err = PadAxis(pk, o.Axis, o.Amt); err != nil {
			return nil
		}
	}
	out := t.loopActions(pk, opts[n:])
	if n > 0 {
		out = slices.DeleteFunc(out, func(o Opt) bool {
			if o.Kind == OptUpcast && slices.ContainsFunc(opts[:n], func(p Opt) bool { return p.Axis == o.Axis }) {
				// not all of a padded axis
				return upcastLanes(opts[n:], o.Axis)*o.Amt == pk.Global[o.Axis].Size
			}
			return o.Kind == OptKBlock
		})
	}
	if n == len(opts) {
		out = append(out, padCandidates(pk, t.Width())...)
	}
	return out
}

// loopActions are Actions on a loop target.
func (t Target) loopActions(k *Kernel, opts []Opt) []Opt {
	searchLanes := t.Accs() * t.Width()
	upcast := map[int]int64{}
	unroll := map[int]int64{}
	lanes := int64(1)
	hasOuter, hasKBlock, hasTile := false, false, false
	blocked := map[int]bool{}
	tiled := map[int]int64{} // a tiled axis's block, in elements
	for _, o := range opts {
		switch o.Kind {
		case OptUpcast:
			upcast[o.Axis] = max(upcast[o.Axis], 1) * o.Amt
			lanes *= o.Amt
		case OptUnroll:
			unroll[o.Axis] = max(unroll[o.Axis], 1) * o.Amt
			lanes *= o.Amt
		case OptOuter:
			hasOuter = true
		case OptKBlock:
			hasKBlock = true
			blocked[o.Axis] = true
		case OptTile:
			hasTile = true
			tiled[o.Axis] = o.Amt
		}
	}
	var out []Opt
	for i, a := range k.Global {
		for _, amt := range []int64{2, 3, 4, 5, 6, 8, 16} {
			u := max(upcast[i], 1) * amt
			if n := tiled[i]; n > 0 && (n%u != 0 || n/u < 2) {
				continue // the tile's block must stay whole register blocks
			}
			if a.Size%u == 0 && lanes*amt <= searchLanes {
				out = append(out, Opt{Kind: OptUpcast, Axis: i, Amt: amt})
			}
		}
	}
	for i, a := range k.ReduceAxes() {
		if blocked[i] {
			continue
		}
		for _, amt := range []int64{2, 4, 8, 16} {
			u := max(unroll[i], 1) * amt
			if a.Size%u == 0 && a.Size > u && lanes*amt <= searchLanes {
				out = append(out, Opt{Kind: OptUnroll, Axis: i, Amt: amt})
			}
		}
	}
	if !hasKBlock {
		for i, a := range k.ReduceAxes() {
			if unroll[i] > 0 || kblockable(k, a) != nil {
				continue
			}
			for _, kc := range []int64{64, 128, 256, 512} {
				if kc < a.Size && a.Size%kc == 0 {
					out = append(out, Opt{Kind: OptKBlock, Axis: i, Amt: kc})
				}
			}
		}
	}
	if !hasTile {
		// Row groups (GotoBLAS's mc) of 2 to 32 register blocks, for
		// kernels with at least two global axes (one to group, one for
		// the panels inside a group).
		for i, a := range k.Global {
			if len(k.Global) < 2 || a.Sym != nil {
				break
			}
			u := max(upcast[i], 1)
			for _, blocks := range []int64{2, 8, 32} {
				if n := u * blocks; n < a.Size && a.Size%n == 0 {
					out = append(out, Opt{Kind: OptTile, Axis: i, Amt: n})
				}
			}
		}
	}
	if !hasOuter {
		for i := 1; i < len(k.Global); i++ {
			if k.Global[i].Size/max(upcast[i], 1) >= 2 {
				out = append(out, Opt{Kind: OptOuter, Axis: i})
			}
		}
	}
	return out
}

// HeuristicOpts is the heuristic for the default vector width (see
// Target.HeuristicOpts); BEAM starts from it.
func HeuristicOpts(k *Kernel) []Opt { return Target{}.HeuristicOpts(k) }

// HeuristicOpts is the default without search, sized in vectors of the
// target's width W: register blocking of up to 2W lanes along the
// contiguous axis times up to 4 along an axis whose loads are reused
// across those lanes (see chooseUpcastAxes), at most 8 vector accumulators
// (AVX2, W=8: 4x16 lanes in 8 ymm registers; AVX-512, W=16: 4x32 in 8 zmm).
func (t Target) HeuristicOpts(k *Kernel) []Opt {
	if k.HasSym() {
		return t.symOpts(k)
	}
	plain := t.heuristicOpts(k)
	if opts := t.padOpts(k, plain); opts != nil {
		return opts
	}
	return plain
}

// symOpts blocks the loops of constant size in a kernel that has loops of
// symbolic size (a decode step's attention over start_pos+1 cached
// positions: its 64 head lanes or its 64-long dot): no lane split divides
// a symbolic trip count, so opts on those loops are dropped, and if what
// is left does not apply, the kernel keeps its plain loops.
func (t Target) symOpts(k *Kernel) []Opt {
	if t.GPU != nil {
		if n := t.GPU.groupLanes(k); n > 0 && groupableSym(k) {
			return []Opt{{Kind: OptGroup, Amt: n}}
		}
		return nil
	}
	if opts := t.symDotOpts(k); opts != nil {
		return opts
	}
	raxes := k.ReduceAxes()
	var opts []Opt
	for _, o := range t.heuristicOpts(k) {
		switch o.Kind {
		case OptUnroll, OptKBlock:
			if raxes[o.Axis].Sym != nil {
				continue
			}
		case OptGroup:
			continue
		default:
			if k.Global[o.Axis].Sym != nil {
				continue
			}
		}
		opts = append(opts, o)
	}
	if _, err := t.ApplyOpts(k, opts); err != nil {
		return nil
	}
	return opts
}

func (t Target) heuristicOpts(k *Kernel) []Opt {
	if t.GPU != nil {
		return t.GPU.heuristic(k)
	}
	if !searchable(k) {
		if o, ok := t.streamedLines(k); ok {
			return o
		}
		if o := t.windowOpts(k); o != nil {
			return o
		}
		// elementwise kernels vectorize as they are, mostly
		return t.transposeOpts(k, splitOpts(k))
	}
	if hoistsRows(k) {
		return t.rowOpts(k)
	}
	w := t.Width()
	lanesCap := laneBudget(k)
	inner, outer := chooseUpcastAxes(k)
	var opts []Opt
	innerAmt := int64(1)
	widened := false // the contiguous axis blocked in full vectors (fullVectors)
	if inner != nil {
		u := largestDivisor(inner.Size, capSizes(blockSizes(2*w), lanesCap)...)
		if u == w && outer != nil {
			// 3 vectors by 4 rows where one vector divides the axis and
			// two do not (a conv's 48 or 144 columns), 5 or 7 by 2 for a
			// product's (one reduce axis) 80 or 112: a block of one vector
			// by 16 outer lanes loads 17 values per 16 FMAs, three by 4
			// load 7 per 12. On the Zen 5 guest, 64 channels at 48x48
			// 243-304 -> 404-450 GFLOP/s (batch 1), 321-347 -> 415-440
			// (batch 8), 144x144 298-365 -> 431-434; (4096x512)·(512xN)
			// N=48 133-178 -> 274-278, 80 168-178 -> 245-263, 112
			// 152-184 -> 230-249. Not 5 or 7 for a conv's columns (80
			// and 112 ran 0-15 % slower so); not past 9 vectors:
			// matmul_1001's padded 1008 columns in blocks of 4 rows, 6.0
			// -> 10.9 ms (the right operand, rows 4 KB apart, read again
			// for every 4 rows instead of every 16).
			vecs := []int64{3}
			if len(k.ReduceAxes()) == 1 {
				vecs = []int64{3, 5, 7}
			}
			for _, v := range vecs {
				if inner.Size%(v*w) == 0 && inner.Size <= 9*w && v*w <= lanesCap && !paddedWhole(k, inner, v*w) {
					u = v * w
					break
				}
			}
		}
		if inner != k.Global[0] && inner.Size <= min(2*w, lanesCap) && inner.Size%4 == 0 {
			// All of a short contiguous axis (a split sum's 16 lanes): a
			// leftover loop would read each cache line in separate passes.
			// (Not the outermost axis: that one is split across cores.)
			u = inner.Size
		}
		if rowSlices(k, inner, outer, w) {
			u = inner.Size
		}
		if u == 1 && inner.Size > 1 && inner.Size <= 8 {
			u = inner.Size // a small odd axis (a 5x5 kernel's columns): all of it
		}
		if u == 1 {
			u = largestDivisor(inner.Size, 6, 5, 3) // the 10 columns of a small image: 2 blocks of 5
		}
		if t.wideFMA() {
			v := fullVectors(inner.Size, u, w, lanesCap)
			widened, u = v != u, v
		}
		if u > 1 {
			innerAmt = u
			opts = append(opts, Opt{Kind: OptUpcast, Axis: axisIndex(k, inner), Amt: u})
		}
	}
	// A small odd block along the contiguous output axis (a 5x5 kernel's
	// columns in a weight gradient) makes no vectors: then the contiguous
	// reduce axis (the image columns) is blocked into vectors too, and the
	// other axis keeps 4 lanes (measured on the MNIST conv2 weight
	// gradient: 5 x 4 x 4-lane vectors 1.8x faster than 5 x 8 scalars).
	// The reduce axes to block into vector lanes: the contiguous axis of
	// every reduce (a fused FFN's gate and up projections are two).
	var unrollRs []int
	var unrollAxes []*Axis
	if innerAmt%4 != 0 && !scalarMath(k) {
		for _, r := range contiguousReduceAxes(k) {
			if largestDivisor(k.ReduceAxes()[r].Size, blockSizes(w)...) > 1 {
				unrollRs, unrollAxes = append(unrollRs, r), append(unrollAxes, k.ReduceAxes()[r])
			}
		}
	}
	unrolled := len(unrollRs) > 0
	// The unroll amount first when the output axis takes no vector (a
	// matrix-vector product): whole vectors along the reduce axis, then
	// as many rows as the budget leaves.
	unrollAmt := int64(1)
	if unrolled && innerAmt == 1 {
		unrollAmt = int64(1 << 62)
		for _, a := range unrollAxes {
			unrollAmt = min(unrollAmt, largestDivisor(a.Size, capSizes(blockSizes(w), lanesCap)...))
		}
	}
	outerAmt := int64(1)
	if inner == nil && unrolled && outer != nil {
		// x·wᵀ with both operands contiguous along the sum (a linear
		// layer's (out, in) weight): no output axis takes vectors, so the
		// vectors run along the sum and the accumulators form a block of
		// rows of x by rows of w, each load reused across the other's
		// rows (8x2x16 lanes: 10 loads per 16 FMAs, against 17 for a 16x1
		// block; BEAM's choice for 128x768 by 2048x768, 6x faster).
		if a, b := dotAxes(k); a != nil {
			if opts := t.dotOpts(k, a, b); opts != nil {
				return opts
			}
		}
	}
	if outer != nil && !unrolled && innerAmt > 1 {
		if o := t.streamOpts(k, outer, innerAmt); o != nil {
			// A streaming reduce (a split sum's partials): every load in
			// the loop reads along outer at a stride past a page, so rows
			// of outer side by side reuse nothing and are as many streams
			// (16M floats summed: 16 accumulators 1 MiB apart per core).
			// Most of the accumulators go along the reduce instead, 4
			// streams of consecutive vectors per core.
			return append(opts, o...)
		}
	}
	rowAtATime := outer != nil && unrolled && innerAmt == 1
	if rowAtATime {
		// A matrix-vector product (a decode step's weights, read once) is
		// bound by the memory bus, not by loads of the vector: one row at
		// a time reads the matrix in address order, which the hardware
		// prefetcher follows; a block of rows read side by side at the
		// row stride is as many short streams (measured on the Zen 4
		// host, 768x768 f16 and Q8_0 from DRAM: 1 row 2.3x and 2.8x
		// faster than 4, 8 or 16 interleaved rows). Two vectors of the
		// row's sum, not four: on the Xeon host a 110M model's F16 decode
		// step took 8.4-8.9 ms with two against 9.7-10.1 with four, every
		// matrix-vector kernel faster (its fused gate and up 199 against
		// 245-264 µs); F32, Q8_0 and 8 lanes the same within the noise.
		outer = nil
	}
	sliced := inner != nil && innerAmt == inner.Size && rowSlices(k, inner, outer, w)
	if outer != nil {
		// At most 8 vector accumulators: 8 rows (conv output channels) when
		// the contiguous axis takes one vector, 4 when it takes two (BEAM's
		// choice for the ResNet conv: 8 channels x 8 columns beat 4 x 8 by 1.5x).
		vecs := w + w/2
		if factorable(k) {
			// factor_reduces gives every lane a second (inner) accumulator.
			vecs = t.Accs() / 2
		}
		// Odd blocks where no even one divides the axis (the 27 rows of
		// SqueezeNet's and AlexNet's 27x27 convs, 64 channels, vectors
		// along them: 3 rows x 2 vectors, 85-99 -> 206-246 GFLOP/s on
		// the Zen 5 guest, batch 8 and 1; PADTO takes the primes, see
		// padCandidates).
		var cands []int64
		for _, c := range []int64{16, 8, 7, 6, 5, 4, 3, 2} {
			// With vectors along the reduce axis every lane pair is a vector
			// accumulator: keep them within 3/4 of the registers (12 AVX2, 24 AVX-512).
			if c*innerAmt*unrollAmt <= min(t.Accs()*w, lanesCap) && (!unrolled || c*innerAmt <= vecs) &&
				(!widened || c*vecRuns(innerAmt, w) <= t.Accs()) && (!sliced || c*innerAmt <= rowSliceVecs*w) {
				cands = append(cands, c)
			}
		}
		// All of the axis where no smaller block divides it (the 5 or 7
		// rows of a 5x5 or 7x7 image), unless the cores split it (the
		// outermost): a 3x3 conv of 256 channels at 5x5, batch 4, 2.2-2.3
		// -> 0.60-0.69 ms on the Zen 5 guest (32 channels by 5 rows
		// against 32 channels by one).
		u := largestDivisor(outer.Size, cands...)
		if u == 1 && outer != k.Global[0] && slices.Contains(cands, outer.Size) {
			u = outer.Size
		}
		if u > 1 {
			outerAmt = u
			opts = append(opts, Opt{Kind: OptUpcast, Axis: axisIndex(k, outer), Amt: u})
		}
	}
	opts = append(opts, t.blockOpts(k, inner, outer, innerAmt, outerAmt, unrolled)...)
	factored := rowAtATime && factorable(k)
	var chains []Opt
	for i, r := range unrollRs {
		var sizes []int64
		bs := blockSizes(w)
		if rowAtATime {
			bs = append([]int64{2 * w}, bs...)
		}
		for _, u := range bs {
			if innerAmt*outerAmt*u <= min(MaxLanes, lanesCap) {
				sizes = append(sizes, u)
			}
		}
		u := largestDivisor(unrollAxes[i].Size, sizes...)
		if factored && unrollAxes[i].Size == w && slices.Contains(sizes, w) {
			u = w
			chains = append(chains, subBlockChains(k, r)...)
		}
		if u > 1 {
			opts = append(opts, Opt{Kind: OptUnroll, Axis: r, Amt: u})
		}
	}
	if factored {
		opts = append(opts, blockChains(k, unrollRs)...)
	}
	return append(opts, chains...)
}

// subBlockChains unrolls by 2 the loop around a quantized matrix-vector
// product's sub-blocks of one vector each (reduce axis r, unrolled whole:
// Q6_K's 16 weights, Q4_0's and Q4_1's halves of 16 at 16 lanes), the
// reduce's axis just outside r: each sub-block is then one vector FMA and
// its scale's multiply-add, and two sub-blocks side by side make two
// chains of them. A 768x2048 Q6_K product on the Xeon guest (both cores):
// 149 µs with 8 lanes (two vectors a sub-block, one chain), 118 with the
// sub-block whole, 92 so; Q4_0 57.7, 52.4 and 46.8-50.7 µs; 8 lanes
// (16 = two vectors) 149, 142, 130, not done (the rule needs r whole in
// one vector).
func subBlockChains(k *Kernel, r int) []Opt {
	raxes := k.ReduceAxes()
	if r == 0 {
		return nil
	}
	var opts []Opt
	Walk(k.Stores, func(e *Expr) {
		if e.Op != OpReduce || len(opts) > 0 {
			return
		}
		axes := e.Arg.(*ReduceArg).Axes
		if i := slices.Index(axes, raxes[r]); i > 0 && axes[i-1] == raxes[r-1] && raxes[r-1].Sym == nil && raxes[r-1].Size%2 == 0 {
			opts = append(opts, Opt{Kind: OptUnroll, Axis: r - 1, Amt: 2})
		}
	})
	return opts
}

// streamOpts blocks a streaming reduce (nil for any other kernel): one
// whose every load inside the reduce loops reads along outer at a stride
// of 4 KiB or more, while a reduce axis (the innermost such) continues
// inner's innerAmt lanes (stride innerAmt). Rows of outer side by side
// then reuse nothing: each is a stream of its own. Up to 4 rows go side
// by side (UPCAST), each summing 2 vectors along the reduce (UNROLL),
// whose lanes read consecutive vectors: 8 accumulators in 4 streams
// (fewer rows where the accumulators or the lanes run out). Measured on
// the Zen 5 host, sum_16M's kernel in a C harness (two threads, huge
// pages, cold, 9 forms alternated, medians of 40): 16 rows (the usual
// block) 0.81-0.92 ms, 8 rows 0.76-0.86, 1 row of 8 vectors 0.81-0.83,
// 2 rows 0.71-0.77, 4 rows of 2 vectors 0.67-0.72 (of 4: the same);
// software prefetch on the 1-row form 4 or 16 KiB ahead was slower
// (0.90-0.97). Only where the rows are whole vectors and every buffer
// the loop reads is at least the L3 (it streams from memory): the MNIST
// step's batch-norm partial sums (rows of 20 and 24 lanes, 26-38 MB
// inputs, mostly in L3) were slower so or no faster, by per-kernel
// minima.
func (t Target) streamOpts(k *Kernel, outer *Axis, innerAmt int64) []Opt {
	raxes := k.ReduceAxes()
	if len(raxes) == 0 || scalarMath(k) || t.L3 <= 0 || innerAmt%t.Width() != 0 {
		return nil
	}
	var idxs []*Expr
	inMemory := true
	Walk(k.Stores, func(e *Expr) {
		if e.Op != OpLoad {
			return
		}
		for _, r := range raxes {
			if usesVar(e.Src[0], r) {
				idxs = append(idxs, e.Src[0])
				inMemory = inMemory && k.Bufs[e.Arg.(int)].Size*int64(e.DType.Size()) >= t.L3
				return
			}
		}
	})
	if len(idxs) == 0 || !inMemory {
		return nil
	}
	for _, idx := range idxs {
		if s, dep := laneStride(idx, outer); !dep || s < 1024 {
			return nil
		}
	}
	for i := len(raxes) - 1; i >= 0; i-- {
		if slices.ContainsFunc(idxs, func(idx *Expr) bool { s, _ := laneStride(idx, raxes[i]); return s != innerAmt }) {
			continue
		}
		// the most rows up to 4, then the most vectors up to 8 in all
		for rows := int64(4); rows >= 1; rows /= 2 {
			for u := 8 / rows; u >= 2; u /= 2 {
				if outer.Size%rows == 0 && raxes[i].Size%u == 0 && rows*innerAmt*u <= min(MaxLanes, laneBudget(k)) &&
					rows*u*vecRuns(innerAmt, t.Width()) <= t.Accs() {
					var opts []Opt
					if rows > 1 {
						opts = append(opts, Opt{Kind: OptUpcast, Axis: axisIndex(k, outer), Amt: rows})
					}
					return append(opts, Opt{Kind: OptUnroll, Axis: i, Amt: u})
				}
			}
		}
		return nil
	}
	return nil
}

// blockChains unrolls the block axis of a quantized matrix-vector product
// by 2 (opts for the heuristic's row-at-a-time case). factor_reduces
// makes such a row's sum an outer sum over blocks of a scale times an
// inner dot product (Q8_0, Q4_0, Q4_1: a block of 32 weights), so the
// outer accumulator is one chain of FMAs, one per block: two lanes of the
// block axis are two accumulators (even and odd blocks, added after the
// loop) and half the loop's overhead per block. Only for a reduce over
// two axes, a block axis and the unrolled one within a block: the K
// quants' super-blocks (Q4_K, Q6_K) nest more, and their bodies take the
// registers. Measured on the Zen 5 host with a C harness of the rendered
// Q8_0 kernel (2304x768, the matrix in L2, one core, best of 400):
// 31.5 -> 36.7 GB/s (23 -> 25.7 with the core shared).
func blockChains(k *Kernel, unrolled []int) []Opt {
	raxes := k.ReduceAxes()
	var opts []Opt
	Walk(k.Stores, func(e *Expr) {
		if e.Op != OpReduce {
			return
		}
		axes := e.Arg.(*ReduceArg).Axes
		if len(axes) != 2 {
			return
		}
		r := slices.Index(raxes, axes[0])
		if r < 0 || slices.Contains(unrolled, r) || !slices.Contains(unrolled, slices.Index(raxes, axes[1])) {
			return
		}
		if a := axes[0]; a.Sym == nil && a.Size%2 == 0 && a.Size >= 4 {
			opts = append(opts, Opt{Kind: OptUnroll, Axis: r, Amt: 2})
		}
	})
	return opts
}

// scalarMath reports float math in a reduce body that the C renderer's
// vectors cannot express (log2, sin, sqrt, division): blocking the
// reduce axis into lanes then only makes scalar copies, while the plain
// loop is left to the C compiler's own vectorizer (softmax's exp-and-sum:
// 7.8 ms plain, 62 ms as 16 scalar lanes).
//
// Math that does not depend on the reduce's loop (an RMSNorm's 1/sqrt of
// the row's mean square, fused into the matmul that reads the row) is
// computed once before it and does not count.
func scalarMath(k *Kernel) bool {
	found := false
	Walk(k.Stores, func(e *Expr) {
		if e.Op != OpReduce || found {
			return
		}
		axes := e.Arg.(*ReduceArg).Axes
		inLoop := map[*Expr]bool{}
		Walk([]*Expr{e.Src[0]}, func(x *Expr) {
			if x.Op == OpVar && slices.Contains(axes, x.Arg.(*Axis)) {
				inLoop[x] = true
			}
			for _, s := range x.Src {
				inLoop[x] = inLoop[x] || inLoop[s]
			}
			if !inLoop[x] {
				return
			}
			switch x.Op {
			case OpLog2, OpSin, OpSqrt, OpRecip, OpDiv, OpTrunc:
				if x.DType.IsFloat() {
					found = true
				}
			}
		})
	})
	return found
}

// laneBudget bounds the lanes of a kernel with a big body: every lane
// repeats the body, and GCC's -O3 time grows faster than the code (a
// BatchNorm-and-pool gradient reduce of ~60 ops per lane took 10 s to
// compile with 64 lanes). About 1500 body ops in all keeps a kernel under
// ~0.3 s; small bodies (a matmul's one FMA) are not limited. An epilogue
// (the ops after the reduces: a convolution's BatchNorm, ReLU and residual
// add) of ops the simd pass writes on vectors (loads and the op table's
// vector ops) counts a quarter per lane: it becomes one vector statement
// per 4 to 16 lanes, run once per output block, not a loop body GCC
// unrolls; an epilogue op without a vector form (a square root) counts
// whole, as the scalar code it becomes.
func laneBudget(k *Kernel) int64 {
	inReduce := map[*Expr]bool{}
	Walk(k.Stores, func(e *Expr) {
		if e.Op == OpReduce {
			Walk(e.Src, func(s *Expr) { inReduce[s] = true })
		}
	})
	body, epilogue := int64(0), int64(0)
	Walk(k.Stores, func(e *Expr) {
		switch {
		case !(e.Op.IsALU() || e.Op == OpLoad) || !e.DType.IsFloat():
		case inReduce[e]:
			body += 4
		case e.Op == OpLoad || e.Op.Info().SIMD != "":
			epilogue++
		default:
			epilogue += 4
		}
	})
	ops := (body + epilogue + 3) / 4
	b := int64(MaxLanes)
	for b > 4 && b*ops > 1500 {
		b /= 2
	}
	return b
}

// capSizes keeps the sizes of a list that do not exceed limit.
func capSizes(sizes []int64, limit int64) []int64 {
	var out []int64
	for _, s := range sizes {
		if s <= limit {
			out = append(out, s)
		}
	}
	return out
}

// blockSizes lists n, n/2, ... down to 4: lane counts to try, largest
// first (an image row of 20 columns still takes 4 lanes at any width).
func blockSizes(n int64) []int64 {
	var s []int64
	for ; n >= 4; n /= 2 {
		s = append(s, n)
	}
	return s
}

// windowOpts blocks a kernel of short reduces (under 16 elements per
// output: a pool's window) along its contiguous output axis, in up to four
// vectors: each lane's reduce is then one vector accumulator of the simd
// pass, its loads vector loads under a guard the same for every lane (a
// channels-last max pool's padding). Left alone, the C compiler keeps the
// window's loop scalar (ResNet's stem pool, 64 channels: 13 GFLOP/s).
func (t Target) windowOpts(k *Kernel) []Opt {
	if !hasReduce(k) || hoistsRows(k) {
		return nil
	}
	inner, _ := chooseUpcastAxes(k)
	if inner == nil || inner.Size%4 != 0 {
		return nil
	}
	w := t.Width()
	u := largestDivisor(inner.Size, capSizes(blockSizes(4*w), laneBudget(k))...)
	if inner != k.Global[0] && inner.Size <= min(4*w, laneBudget(k)) {
		u = inner.Size // all of it: the outermost axis is the one split across cores
	}
	if u < 4 {
		return nil
	}
	opts := []Opt{{Kind: OptUpcast, Axis: axisIndex(k, inner), Amt: u}}
	// Lanes of a guarded load whose bounds Verify cannot prove: the plain loop.
	if nk, err := t.ApplyOpts(k, opts); err != nil || nk.Verify() != nil {
		return nil
	}
	return opts
}

// splitOpts upcasts the innermost axis of a kernel without a long reduce
// by 2 or 4 (all of it when it is a short row) when a load reads it
// through a division by that amount (a pool's gradient or a nearest
// upsample: x[i/2]) and the split makes every load affine in the loop, and
// a short row whole when a load's guard reads it (a padded copy): the C
// compiler vectorizes affine loads, but not one indexed by i/2 (it stays
// scalar, ~5x slower).
func splitOpts(k *Kernel) []Opt {
	if len(k.Global) == 0 {
		return nil
	}
	a := k.Global[len(k.Global)-1]
	var idxs []*Expr
	Walk(k.Stores, func(e *Expr) {
		if e.Op == OpLoad || e.Op == OpStore {
			idxs = append(idxs, e.Src[0])
		}
	})
	affine := func(u int64) bool {
		for _, idx := range idxs {
			if !affineIn(idx, a, u) {
				return false
			}
		}
		return true
	}
	// A short row whole (up to 32 columns: a pool's 20 or 6, a padded
	// image's 28) is straight-line code that gcc's SLP vectorizer takes,
	// with a padding guard's column tests constant in each lane; the loop
	// over the columns it left scalar where a load reads x[i/2] or sits
	// under a guard that reads the column (the MNIST cnn's step, DEBUG=2
	// minima side by side at load 3: the BatchNorm and pool backward
	// E_512_32_20_20 5.7 -> 1.8 ms, E_512_64_6_6 1.5 -> 0.8 ms, conv2's
	// padded gradient E_512_32_28_28 4.4 -> 2.1-2.4 ms).
	whole := []Opt{{Kind: OptUpcast, Axis: len(k.Global) - 1, Amt: a.Size}}
	short := a.Size > 4 && a.Size <= 2*MaxVecWidth
	if affine(1) {
		if short && guardReads(k, a) {
			return whole
		}
		return nil
	}
	for _, u := range []int64{2, 4} {
		if a.Size%u == 0 && a.Size > u && affine(u) {
			if short {
				return whole
			}
			return []Opt{{Kind: OptUpcast, Axis: len(k.Global) - 1, Amt: u}}
		}
	}
	return nil
}

// streamedLines blocks an elementwise kernel's contiguous axis in cache
// lines (UPCAST by 16 float32 lanes) when its outputs are ones the
// stream_stores pass writes around the caches (PlanStream: outputs the
// kernel does not read): that pass streams the simd
// pass's store runs, and a kernel without opts has none (gcc vectorizes
// its loop itself, with plain stores, each of which reads its line from
// memory first). Only where a line is one vector (16 lanes: AVX-512),
// every access is affine in the blocked axis, and the output is at least
// the L3 (streamLines). Measured on the Zen 5 host,
// a C harness of elementwise_16M's kernel, two threads, best of ten at
// load 4: 2.38-2.95 ms plain, 1.54-2.39 ms streamed. Also where the
// kernel takes an exp2 (takesExp2), streamed or not, in vectors of the
// target's width (8 on an AVX2 host).
func (t Target) streamedLines(k *Kernel) ([]Opt, bool) {
	exp2 := takesExp2(k)
	lanes := int64(streamLine / 4)
	if t.Width() < lanes && exp2 && t.VecRegs < 32 {
		// vectors for the exp2 alone (nothing streams at this width), on
		// an AVX2 host: with AVX-512 beneath 8 lanes, gcc vectorizes the
		// scalar loop in 16 (gelu_16M at TGC_VEC_WIDTH=8 on the Zen 5
		// guest, CPU time: 3.8-4.0 ms gcc's, 4.3-4.6 in 8-lane vectors)
		lanes = t.Width()
	}
	if t.GPU != nil || t.Width() < lanes || t.L3 <= 0 || t.BufAlign < streamLine || t.BufAlign%streamLine != 0 || len(k.Global) == 0 {
		return nil, false
	}
	a := k.Global[len(k.Global)-1]
	if a.Size%lanes != 0 || a.Size < 2*lanes {
		return nil, false
	}
	read := readBufs(k)
	ok, streamed, any := true, false, false
	Walk(k.Stores, func(e *Expr) {
		switch e.Op {
		case OpReduce, OpRand:
			ok = false // a reduce's kernel is not elementwise; RAND's lanes are scalar code
		case OpLoad:
			ok = ok && affineIn(e.Src[0], a, lanes)
		case OpStore:
			b, b0 := e.Arg.(int), NewBuilder()
			s, lin := AxisStride(e.Src[0], a)
			if e.DType == Float32 && lin && s == 1 && alignedTo(substVar(b0, e.Src[0], a, b0.Int(0)), lanes) {
				if streamLines(k, t, b, read) && lanes*4 == streamLine {
					streamed, any = true, true
				}
				any = any || exp2
			}
			ok = ok && affineIn(e.Src[0], a, lanes)
		}
	})
	if !ok || !any {
		return nil, false
	}
	opts := []Opt{{Kind: OptUpcast, Axis: len(k.Global) - 1, Amt: lanes}}
	if !streamed {
		// For the exp2 alone the lines pay only as vectors: 16 scalar
		// lanes (an op without a vector spelling: a float division, a
		// mask from index compares) ran slower than gcc's vectorized
		// loop (a prompt's masked attention exponentials: 0.26 against
		// 0.10 ms).
		nk, err := t.ApplyOpts(k, opts)
		if err == nil {
			nk, err = PlanSIMD(nk, t)
		}
		if err != nil || nk.SIMD == nil || len(nk.SIMD.Stores) == 0 {
			return nil, false
		}
	}
	return opts, true
}

// guardReads says whether a guarded load's guard reads axis a.
func guardReads(k *Kernel, a *Axis) bool {
	found := false
	Walk(k.Stores, func(e *Expr) {
		found = found || e.Op == OpLoad && len(e.Src) > 1 && usesVar(e.Src[1], a)
	})
	return found
}

// affineIn says whether idx, with axis a split as a = u*a' + lane for
// each constant lane < u, is affine in a' (a' appears only as a term
// a'*c).
func affineIn(idx *Expr, a *Axis, u int64) bool {
	for l := int64(0); l < u; l++ {
		b := NewBuilder()
		na := &Axis{ID: a.ID, Size: a.Size / u, Kind: AxisGlobal}
		ni := b.Rebuild(idx, func(e *Expr) *Expr {
			if e.Op == OpVar && e.Arg.(*Axis) == a {
				return b.Add(b.Mul(b.Var(na), b.Int(u)), b.Int(l))
			}
			return nil
		}, map[*Expr]*Expr{})
		ts, _ := normalize(addTerms(nil, ni, 1))
		for _, t := range ts {
			if t.e == nil || (t.e.Op == OpVar && t.e.Arg.(*Axis) == na) {
				continue
			}
			if usesVar(t.e, na) {
				return false
			}
		}
	}
	return true
}

// contiguousReduceAxes lists, for every reduce (the first of the
// reduces over the same loops), the last of its axes along which one of
// its loads reads neighbouring elements, as an index into ReduceAxes.
func contiguousReduceAxes(k *Kernel) []int {
	raxes := k.ReduceAxes()
	index := map[*Axis]int{}
	for i := len(raxes) - 1; i >= 0; i-- {
		index[raxes[i]] = i
	}
	var out []int
	seen := map[*Axis]bool{}
	Walk(k.Stores, func(e *Expr) {
		if e.Op != OpReduce || seen[groupKey(e)] {
			return
		}
		seen[groupKey(e)] = true
		var idxs []*Expr
		Walk([]*Expr{e.Src[0]}, func(x *Expr) {
			if x.Op == OpLoad {
				idxs = append(idxs, x.Src[0])
			}
		})
		axes := e.Arg.(*ReduceArg).Axes
		for i := len(axes) - 1; i >= 0; i-- {
			for _, idx := range idxs {
				if s, _ := laneStride(idx, axes[i]); s == 1 {
					out = append(out, index[axes[i]])
					return
				}
			}
		}
	})
	return out
}

func axisIndex(k *Kernel, a *Axis) int {
	for i, g := range k.Global {
		if g == a {
			return i
		}
	}
	return -1
}

// dotOpts blocks a product of two operands read along the sum (dotAxes
// a, b): a block of ua rows of one by ub of the other, each reduce axis in
// vectors of up to 16 lanes, at most t.Accs() vector accumulators over all
// the reduces (a SwiGLU kernel's two products share the loads of x, so
// 4x2 blocks each). nil when the axes do not divide.
func (t Target) dotOpts(k *Kernel, a, b *Axis) []Opt {
	nested := false
	Walk(k.Stores, func(e *Expr) { nested = nested || e.Op == OpReduce && nestedReduce(e.Src[0]) })
	if nested {
		return nil // a reduce inside another's loop: its lanes would multiply
	}
	// each reduce in vectors along its innermost axis (the contiguous one)
	raxes := k.ReduceAxes()
	var unroll []Opt
	nred := int64(0)
	done := map[*Axis]bool{}
	bad := false
	Walk(k.Stores, func(e *Expr) {
		if e.Op != OpReduce || bad {
			return
		}
		nred++
		axes := e.Arg.(*ReduceArg).Axes
		r := axes[len(axes)-1]
		v := largestDivisor(r.Size, blockSizes(t.Width())...)
		i := slices.Index(raxes, r)
		if v < 4 || i < 0 {
			bad = true
		} else if !done[r] {
			done[r] = true
			unroll = append(unroll, Opt{Kind: OptUnroll, Axis: i, Amt: v})
		}
	})
	if bad || nred == 0 {
		return nil
	}
	accs := t.Accs() / nred
	ub := largestDivisor(b.Size, 2)
	var cands []int64
	for _, c := range []int64{8, 4, 2} {
		if c*ub <= accs {
			cands = append(cands, c)
		}
	}
	ua := largestDivisor(a.Size, cands...)
	if ua < 2 || ub < 2 {
		return nil
	}
	return append([]Opt{{Kind: OptUpcast, Axis: axisIndex(k, a), Amt: ua}, {Kind: OptUpcast, Axis: axisIndex(k, b), Amt: ub}}, unroll...)
}

// dotAxes finds the two output axes of a product of two operands each
// read along the sum: every load inside the reduce depends on at most one
// of them, and each is read by some load (a is the earlier in Global, the
// one split across cores). nil when the kernel is not such a product.
func dotAxes(k *Kernel) (a, b *Axis) {
	raxes := k.ReduceAxes()
	var idxs []*Expr
	Walk(k.Stores, func(e *Expr) {
		if e.Op == OpLoad && slices.ContainsFunc(raxes, func(r *Axis) bool { return usesVar(e.Src[0], r) }) {
			idxs = append(idxs, e.Src[0])
		}
	})
	var used []*Axis
	for _, g := range k.Global {
		for _, idx := range idxs {
			if usesVar(idx, g) {
				used = append(used, g)
				break
			}
		}
	}
	if len(used) != 2 {
		return nil, nil
	}
	for _, idx := range idxs {
		if usesVar(idx, used[0]) && usesVar(idx, used[1]) {
			return nil, nil
		}
	}
	return used[0], used[1]
}

// wideFMA says whether the target's FMA units run its full vector width
// at full rate (Target.FMAWidth).
func (t Target) wideFMA() bool { return t.FMAWidth >= int(t.Width()) && t.Width() >= 16 }

// vecRuns is the number of vectors the simd pass makes of n contiguous
// lanes at width w: greedily w, w/2, ... down to 4, then scalars.
func vecRuns(n, w int64) int64 {
	runs := int64(0)
	for v := w; v >= 4 && n > 0; v /= 2 {
		runs += n / v
		n %= v
	}
	return runs + n
}

// fullVectors blocks a contiguous output axis of size n, for which the
// usual choice is u lanes, into the block (a divisor of n, a multiple of
// 4, at most 4 vectors of width w and the lane budget) whose vectors are
// fullest: the lanes over the lanes of the vectors the simd pass makes.
// A 56-column image row at w=16 takes 8 lanes (one half-empty vector per
// FMA) by the usual rule, 56 here (3 full vectors and one of 8: each
// input vector load feeds 4 FMAs instead of 16 broadcasts feeding 16
// FMAs of half width). Measured on the Zen 5 host, conv2d_resnet's 3x3
// kernel on one core, CPU time: 89 GFLOP/s with 8x16 lanes, 160 with
// 56x4.
func fullVectors(n, u, w, lanesCap int64) int64 {
	full := func(d int64) float64 { return float64(d) / float64(vecRuns(d, w)*w) }
	best := u
	for d := int64(4); d <= 4*w && d <= n && d <= lanesCap; d += 4 {
		if n%d == 0 && full(d) > full(best) {
			best = d
		}
	}
	return best
}

// rowSliceVecs bounds the vector accumulators of a kernel that reads row
// slices (rowSlices): the rows stream from memory, so more accumulators
// would not be faster, and more outer pieces split evenly over the cores.
const rowSliceVecs = 8

// rowSlices says whether k sums, over a loop of symbolic length, slices of
// rows that each lane of outer reads apart: a decode step's attention
// weights times the cached values, Σ_p P[h,p]·V[p, h·64+d] over start_pos+1
// positions, each head h (outer) its own 64 columns d (inner, at most
// rowSliceVecs vectors) of every cached row. Then inner is taken whole, so
// that each row's slice is read in one pass, one row after the other:
// split in two vectors (the general rule), the row was read twice, half of
// each head's slice a pass, and the values streamed at 13-15 GB/s on one
// core of the Xeon guest at 990 positions against 21-25 with the whole
// slice (C harness, the 12 layers' caches read after a 64 MiB flush; two or
// three heads a piece alike). With 8 lanes a head is 8 vectors, one head a
// piece (it was 16 columns, the row in four passes): the kernel 229-248 ->
// 126-140 µs a layer at ~990 positions, `-n 1000` 141-144 -> 151-155 tok/s.
func rowSlices(k *Kernel, inner, outer *Axis, w int64) bool {
	if inner == nil || outer == nil || inner.Size%w != 0 || inner.Size > rowSliceVecs*w || inner.Sym != nil || outer.Sym != nil {
		return false
	}
	raxes := k.ReduceAxes()
	symbolic := false
	for _, a := range raxes {
		symbolic = symbolic || a.Sym != nil
	}
	if !symbolic {
		return false
	}
	reads := false
	ok := true
	Walk(k.Stores, func(e *Expr) {
		if e.Op != OpLoad || !ok {
			return
		}
		inLoop := false
		for _, r := range raxes {
			inLoop = inLoop || usesVar(e.Src[0], r)
		}
		if inLoop && usesVar(e.Src[0], inner) {
			reads = true
			ok = usesVar(e.Src[0], outer) // a load outer's lanes share: a product with reuse (a prompt's rows)
		}
	})
	return ok && reads
}

// symDotOpts blocks a product of two operands along their common
// contiguous sum where one operand's axis is of symbolic length and the
// other's constant (a prompt chunk's attention scores: for each head, the
// chunk's 128 queries times the keys of its start_pos+128 positions, both
// read along head_dim): the constant axis by symDotRows rows, each sharing
// the other operand's loads, and the sum in one vector (a sum is then one
// accumulator, summed across its lanes once). The general rule took one
// row and the sum in two vectors: a 900-token prompt's scores 129-143 ms
// against 101-116 (Xeon guest, alternated; 8 rows 124-129, 16 rows
// 169-171, 2 rows with two vectors 122-136). Axes that every load reads
// (the heads) are a batch, not an operand's. nil for any other kernel.
func (t Target) symDotOpts(k *Kernel) []Opt {
	raxes := k.ReduceAxes()
	if len(raxes) != 1 || raxes[0].Sym != nil {
		return nil
	}
	var idxs []*Expr
	Walk(k.Stores, func(e *Expr) {
		if e.Op == OpLoad && usesVar(e.Src[0], raxes[0]) {
			idxs = append(idxs, e.Src[0])
		}
	})
	if len(idxs) != 2 {
		return nil
	}
	var own [2][]*Axis // the global axes only one operand reads
	for _, g := range k.Global {
		a, b := usesVar(idxs[0], g), usesVar(idxs[1], g)
		switch {
		case a && !b:
			own[0] = append(own[0], g)
		case b && !a:
			own[1] = append(own[1], g)
		}
	}
	if len(own[0]) != 1 || len(own[1]) != 1 {
		return nil
	}
	rows, sym := own[0][0], own[1][0]
	if rows.Sym != nil {
		rows, sym = sym, rows
	}
	if sym.Sym == nil || rows.Sym != nil || rows.Size%symDotRows != 0 || rows == k.Global[0] {
		return nil
	}
	w := t.Width()
	for _, idx := range idxs {
		if s, ok := AxisStride(idx, raxes[0]); !ok || s != 1 {
			return nil
		}
	}
	if raxes[0].Size%w != 0 {
		return nil
	}
	opts := []Opt{{Kind: OptUpcast, Axis: axisIndex(k, rows), Amt: symDotRows}, {Kind: OptUnroll, Axis: 0, Amt: w}}
	if _, err := t.ApplyOpts(k, opts); err != nil {
		return nil
	}
	return opts
}

// symDotRows is the rows symDotOpts blocks together.
const symDotRows = 4
