package ir

import (
	"fmt"
	"slices"
)

// The simd pass: vector lanes for the C dialect (GCC vector extensions).
//
// The upcast and unroll opts give a reduce group one scalar accumulator
// per lane. gcc only partly SLP-vectorizes 64 scalar accumulators (it
// spills them); the same loop written with 8-wide vector accumulators runs
// near the machine's peak (reference/machine.md). So this pass does the
// SLP step itself: within a group it looks for W (the target's vector
// width: 8 for AVX2, 16 for AVX-512), else W/2, ... down to 4 SUM or MAX
// members whose accumulated expressions are isomorphic, lane by lane:
//   - the very same expression in every lane: a broadcast of the scalar;
//   - float32 loads of one buffer at indices i, i+1, ..., i+w-1,
//     unguarded or under one guard: one unaligned vector load (under
//     the guard); unguarded ones at other constant offsets from i within
//     i..i+w-1 (x[i/2] of a pool's gradient): the window's elements
//     permuted into a vector;
//   - lanes of one vector accumulator, in order (epilogues after the loop);
//   - distinct float32 sums closed over their loops (Packed): values
//     computed once before the kernel's loops, a vector packed from them;
//   - the same op over isomorphic sources, for the ops the op table
//     spells on vectors (+ - * neg max where < == exp2);
//   - int32 lanes (+ - * & | ^ == < where, / and % by a positive constant,
//     >> by a constant or by one scalar within the width) and conversions: unguarded loads of int8, uint8
//     (or uint8 bitcast to int8) and float16 at consecutive indices
//     widened to int32 or float32 (int8 and uint8 to either: an image's
//     bytes), int32 to float32 (a quantized weight's
//     bytes and scales: the dequantization runs in vectors too).
// Such a run is accumulated in one vector. Runs of stores of w contiguous
// outputs whose values are isomorphic over vector accumulators become one
// vector store. A float sum whose pairwise tree (Unroll's: neighbours
// first) has as leaves, in order, the lanes of vectors isomorphic over
// vector accumulators (a matrix-vector row's unrolled lanes) is a
// horizontal sum of those vectors (HSum; also over vector loads: a Q4_K
// row's mins times its hoisted sums of x): the renderer adds the even and
// odd lanes as vectors, level by level, the tree's own additions, instead
// of a scalar add per lane. The plan (Kernel.SIMD) is data over the scalar DAG, which
// stays the kernel's meaning: the GO interpreter runs the scalars, Verify
// re-checks every run, and the C renderer prints the runs as vectors and
// everything else as scalar code.

// MaxVecWidth bounds a SIMD run's lanes (16: AVX-512).
const MaxVecWidth = 16

// Lanes is one vector value: W scalar expressions, one per lane (the rest
// of L nil). Lanes is comparable, so it can key maps.
type Lanes struct {
	W int
	L [MaxVecWidth]*Expr
}

// LanesOf is the tuple of the src'th source of each of es.
func LanesOf(es []*Expr, src int) Lanes {
	t := Lanes{W: len(es)}
	for l, e := range es {
		t.L[l] = e.Src[src]
	}
	return t
}

// Src is the tuple of the j'th sources of t's lanes.
func (t Lanes) Src(j int) Lanes { return LanesOf(t.L[:t.W], j) }

// ConstLanes says whether every lane of t is a constant of one type (a
// vector literal: Q5_0's shift of each lane's bit).
func ConstLanes(t Lanes) bool {
	for _, e := range t.L[:t.W] {
		if !e.IsConst() || e.DType != t.L[0].DType {
			return false
		}
	}
	return true
}

// IndexLanes says whether t's lanes are consecutive loop indices cast to
// int32, lane i lane 0's plus i (an arange along the lanes: Q5_0's shift
// of each element's bit where a half of 16 runs in two vectors of 8).
func IndexLanes(t Lanes) bool {
	for i, e := range t.L[:t.W] {
		if e.Op != OpCast || e.DType != Int32 || e.Src[0].DType != Index || !contiguous(t.L[0].Src[0], e.Src[0], int64(i)) {
			return false
		}
	}
	return true
}

// shiftsInWidth says whether every lane of c is an int32 shift amount
// bounded within [0, 32): C's >> then means the IR's shift, lane by lane.
func shiftsInWidth(c Lanes) bool {
	for _, e := range c.L[:c.W] {
		if e.DType != Int32 || e.Min < 0 || e.Max >= 32 {
			return false
		}
	}
	return true
}

// Uniform says whether every lane is the same expression (a broadcast).
func (t Lanes) Uniform() bool {
	for i := 1; i < t.W; i++ {
		if t.L[i] != t.L[0] {
			return false
		}
	}
	return true
}

// SIMD is the simd pass's plan: runs of reduce members accumulated in one
// vector and runs of stores written as one, each in lane order.
type SIMD struct {
	Width  int       // the widest run (the target's vector width)
	Accs   [][]*Expr // members of one reduce group
	Stores [][]*Expr // stores of one buffer at consecutive indices
	HSums  []HSum    // float sums of vectors' lanes, pairwise
	lane   map[*Expr]laneOf
}

// HSum is a float32 sum whose pairwise tree from Root has as leaves, in
// order, the lanes of Vecs (as many as a power of two, each of one width):
// PairwiseLeaves(Root, n) is their concatenation.
type HSum struct {
	Root *Expr
	Vecs []Lanes
}

// PairwiseLeaves returns the n values (a power of two) that the tree of
// float32 OpAdd nodes rooted at e adds pairwise: the values of a level,
// in order, are the sums of neighbours (2i and 2i+1) of the level below.
func PairwiseLeaves(e *Expr, n int) ([]*Expr, bool) {
	level, ok := []*Expr{e}, true
	for ok && len(level) < n {
		level, ok = addendsOf(level)
	}
	return level, ok
}

// addendsOf is the level below a level of a pairwise tree: the two
// addends of each of its float32 adds, in order (false where the tree
// ends).
func addendsOf(level []*Expr) ([]*Expr, bool) {
	next := make([]*Expr, 0, 2*len(level))
	for _, x := range level {
		if x.Op != OpAdd || x.DType != Float32 {
			return nil, false
		}
		next = append(next, x.Src[0], x.Src[1])
	}
	return next, true
}

// maxHSumVecs bounds the vectors of a horizontal sum (a row unrolled by
// 4 × 16 lanes has 4).
const maxHSumVecs = 16

type laneOf struct{ run, lane int }

// NewSIMD makes a plan from its runs.
func NewSIMD(width int, accs, stores [][]*Expr) *SIMD {
	s := &SIMD{Width: width, lane: map[*Expr]laneOf{}}
	for _, ms := range accs {
		s.addAccs(ms)
	}
	s.setStores(stores)
	return s
}

// setStores sets the plan's store runs.
func (s *SIMD) setStores(stores [][]*Expr) {
	s.Stores = stores
	for r, ss := range stores {
		for l, st := range ss {
			s.lane[st] = laneOf{r, l}
		}
	}
}

// addAccs adds a run of accumulators to the plan.
func (s *SIMD) addAccs(ms []*Expr) {
	for l, m := range ms {
		s.lane[m] = laneOf{len(s.Accs), l}
	}
	s.Accs = append(s.Accs, ms)
}

// Lane says which run (an index into Accs, or Stores for a store) and lane
// a reduce member or a store is.
func (s *SIMD) Lane(e *Expr) (run, lane int, ok bool) {
	l, ok := s.lane[e]
	return l.run, l.lane, ok
}

// AccOf says whether t is the lanes of one vector accumulator, in order.
func (s *SIMD) AccOf(t Lanes) (run int, ok bool) {
	if t.L[0].Op != OpReduce {
		return 0, false
	}
	l0, ok := s.lane[t.L[0]]
	if !ok || len(s.Accs[l0.run]) != t.W {
		return 0, false
	}
	for i := 0; i < t.W; i++ {
		if li, ok := s.lane[t.L[i]]; !ok || li.run != l0.run || li.lane != i || t.L[i].Op != OpReduce {
			return 0, false
		}
	}
	return l0.run, true
}

// simdVecWidths are the run widths tried, widest first: width, width/2, ... 4.
func simdVecWidths(width int) []int {
	var ws []int
	for w := width; w >= 4; w /= 2 {
		ws = append(ws, w)
	}
	return ws
}

func simdEligible(m *Expr) bool {
	op := m.Arg.(*ReduceArg).Op
	return m.Op == OpReduce && m.DType == Float32 && (op == OpSum || op == OpMaxReduce)
}

// PlanSIMD is the simd pass: it finds the vector runs of k for the
// target's width (Kernel.SIMD; none: k unchanged).
func PlanSIMD(k *Kernel, t Target) (*Kernel, error) {
	widths := simdVecWidths(int(t.Width()))
	// The reduce groups (reduces over the very same loops, Linearize's),
	// their members in walk order.
	groups, keys := reduceGroups(k)
	s := NewSIMD(widths[0], nil, nil)
	m := &simdMatcher{k: k, s: s, ok: map[Lanes]bool{}, free: map[*Expr][]*Axis{}}
	for _, key := range keys {
		if len(groups[key]) < 4 {
			continue
		}
		// Runs of earlier groups are known while later ones are planned:
		// an epilogue reduce may read an earlier accumulator's lanes.
		for _, ms := range pickRuns(groups[key], widths, simdEligible, func(ms []*Expr) bool {
			return m.match(LanesOf(ms, 0))
		}) {
			s.addAccs(ms)
		}
	}
	if len(s.Accs) == 0 {
		return planStreamedStores(k, t, m, widths[0])
	}
	stores := pickRuns(k.Stores, widths, func(st *Expr) bool {
		return k.Bufs[st.Arg.(int)].DType == Float32 && st.DType == Float32
	}, func(ss []*Expr) bool { return m.storeRun(ss) })
	s.setStores(stores)
	s.HSums = m.hsums(widths)
	nk := *k
	nk.SIMD = s
	return &nk, nil
}

// planStreamedStores plans the store runs of a kernel without reduce
// accumulators (an elementwise kernel) only where the stream_stores pass
// will write them around the caches: runs of a whole vector of the
// target's width that is one cache line, of values that read vector loads
// (hasVector), into an output streamLines accepts; or where the values
// take an exp2 (takesExp2: runs of the target's width, a line or not).
// Elsewhere gcc's own vectorizer does as well with the scalar loop; a
// non-temporal store needs the vector (Target.streamedLines blocks such
// kernels in lines).
func planStreamedStores(k *Kernel, t Target, m *simdMatcher, w int) (*Kernel, error) {
	exp2 := takesExp2(k)
	if w*4 != streamLine && !exp2 {
		return k, nil
	}
	read := readBufs(k)
	stores := pickRuns(k.Stores, []int{w}, func(st *Expr) bool {
		b := st.Arg.(int)
		return st.DType == Float32 && (streamLines(k, t, b, read) || exp2)
	}, m.vectorStoreRun)
	if len(stores) == 0 {
		return k, nil
	}
	m.s.setStores(stores)
	nk := *k
	nk.SIMD = m.s
	return &nk, nil
}

// takesExp2 says whether a kernel's stores take an exp2: in vectors the C
// prelude's tg_exp2v computes it (and a reciprocal) in half the time of
// gcc's vectorization of the scalar tg_exp2f (a C harness on the Zen 5
// guest, sigmoid of two inputs in L2, one thread: 0.139-0.149 against
// 0.289-0.296 ns an element; 8 lanes without AVX-512, as on an AVX2
// host: 0.359 against 0.578-0.626), so its elementwise kernels are worth
// vectors whether their output is streamed or not.
func takesExp2(k *Kernel) bool {
	found := false
	Walk(k.Stores, func(e *Expr) { found = found || e.Op == OpExp2 })
	return found
}

// hsums finds the horizontal sums (HSum) of k, outermost first (the
// adds of one's tree are not searched again, its lanes' values are),
// each over the fewest vectors.
func (m *simdMatcher) hsums(widths []int) []HSum {
	var out []HSum
	inside := map[*Expr]bool{} // the adds of a tree matched already
	WalkPre(m.k.Stores, func(e *Expr) bool {
		if e.Op == OpAdd && e.DType == Float32 && !inside[e] {
			if h, ok := m.hsum(e, widths); ok {
				out = append(out, h)
				// Its adds and lanes are not roots of their own; the
				// lanes' sources may hold sums (packed ones).
				for n := 1; n <= len(h.Vecs)*h.Vecs[0].W; n *= 2 {
					level, _ := PairwiseLeaves(e, n)
					for _, x := range level {
						inside[x] = true
					}
				}
			}
		}
		return true
	})
	return out
}

// hsum matches the tree at e as a horizontal sum of vectors of one of
// widths, the fewest vectors first.
func (m *simdMatcher) hsum(e *Expr, widths []int) (HSum, bool) {
	level := []*Expr{e}
	for len(level) < maxHSumVecs*widths[0] {
		var ok bool
		if level, ok = addendsOf(level); !ok {
			return HSum{}, false // the tree ends here
		}
		for _, w := range widths {
			if len(level)%w == 0 && len(level)/w <= maxHSumVecs {
				if vecs, ok := m.hsumVecs(level, w); ok {
					return HSum{Root: e, Vecs: vecs}, true
				}
			}
		}
	}
	return HSum{}, false
}

// hsumVecs cuts leaves into vectors of w lanes, each a vector value over
// at least one accumulator or vector load.
func (m *simdMatcher) hsumVecs(leaves []*Expr, w int) ([]Lanes, bool) {
	var vecs []Lanes
	for i := 0; i < len(leaves); i += w {
		t := Lanes{W: w}
		copy(t.L[:], leaves[i:i+w])
		if t.Uniform() || t.L[0].DType != Float32 || !m.match(t) || !m.hasVector(t) {
			return nil, false
		}
		vecs = append(vecs, t)
	}
	return vecs, true
}

// pickRuns chooses disjoint runs of widths[0] (else the next width)
// eligible elements of xs, at any fixed stride, in order, that ok accepts.
func pickRuns(xs []*Expr, widths []int, eligible func(*Expr) bool, ok func([]*Expr) bool) [][]*Expr {
	taken := make([]bool, len(xs))
	var runs [][]*Expr
	for i := range xs {
		if taken[i] || !eligible(xs[i]) {
			continue
		}
	widths:
		for _, w := range widths {
			for s := 1; i+(w-1)*s < len(xs); s++ {
				run := make([]*Expr, 0, w)
				for l := 0; l < w; l++ {
					j := i + l*s
					if taken[j] || !eligible(xs[j]) {
						break
					}
					run = append(run, xs[j])
				}
				if len(run) == w && ok(run) {
					for l := 0; l < w; l++ {
						taken[i+l*s] = true
					}
					runs = append(runs, run)
					break widths
				}
			}
		}
	}
	return runs
}

// simdMatcher decides which lane tuples are isomorphic, given the vector
// accumulators known so far.
type simdMatcher struct {
	k    *Kernel
	s    *SIMD
	ok   map[Lanes]bool
	free map[*Expr][]*Axis // freeAxes' answers
}

// storeRun: stores of one buffer at consecutive indices, whose values
// are isomorphic over at least one vector accumulator.
func (m *simdMatcher) storeRun(ss []*Expr) bool {
	if !contiguousStores(ss) {
		return false
	}
	t := LanesOf(ss, 1)
	return m.match(t) && m.hasAcc(t)
}

// vectorStoreRun is a store run of a kernel without accumulators
// (planStreamedStores): contiguous, its lanes isomorphic and reading a
// vector load.
func (m *simdMatcher) vectorStoreRun(ss []*Expr) bool {
	if !contiguousStores(ss) {
		return false
	}
	t := LanesOf(ss, 1)
	return m.match(t) && m.hasVector(t)
}

// contiguousStores: stores to one buffer at consecutive indices.
func contiguousStores(ss []*Expr) bool {
	for i, st := range ss {
		if st.Op != OpStore || st.Arg != ss[0].Arg || (i > 0 && !contiguous(ss[0].Src[0], st.Src[0], int64(i))) {
			return false
		}
	}
	return true
}

// hasVector says whether t reads an accumulator or a vector load (not
// only broadcasts and packed scalars): a sum of its lanes is worth a
// vector.
func (m *simdMatcher) hasVector(t Lanes) bool {
	if t.Uniform() || m.s.Packed(t, m.free) {
		return false
	}
	if m.isAcc(t) || t.L[0].Op == OpLoad {
		return true
	}
	if _, _, ok := NarrowLoad(t); ok {
		return true
	}
	if !sameShape(t) {
		return false
	}
	for j := range t.L[0].Src {
		if m.hasVector(t.Src(j)) {
			return true
		}
	}
	return false
}

func (m *simdMatcher) isAcc(t Lanes) bool {
	_, ok := m.s.AccOf(t)
	return ok
}

// Packed says whether t is a vector packed from scalars: distinct float32
// values, none a lane of the plan's runs, each closed over its loops (every
// variable it reads is a reduce axis within it) and a sum: values the
// kernel computes once per launch before its loops (a Q4_K row's hoisted
// sums of x), which a vector is built from once. free caches freeAxes.
func (s *SIMD) Packed(t Lanes, free map[*Expr][]*Axis) bool {
	if t.Uniform() {
		return false
	}
	for i, e := range t.L[:t.W] {
		if e.DType != Float32 || e.Op != OpReduce && e.Op != OpAdd || slices.Contains(t.L[:i], e) {
			return false
		}
		if _, ok := s.lane[e]; ok || len(freeAxes(e, free)) > 0 {
			return false
		}
	}
	return true
}

// freeAxes lists the loop variables e reads that no reduce within e binds.
func freeAxes(e *Expr, memo map[*Expr][]*Axis) []*Axis {
	if f, ok := memo[e]; ok {
		return f
	}
	var f []*Axis
	if e.Op == OpVar {
		f = []*Axis{e.Arg.(*Axis)}
	}
	for _, s := range e.Src {
		for _, a := range freeAxes(s, memo) {
			if !slices.Contains(f, a) && !(e.Op == OpReduce && slices.Contains(e.Arg.(*ReduceArg).Axes, a)) {
				f = append(f, a)
			}
		}
	}
	memo[e] = f
	return f
}

func (m *simdMatcher) hasAcc(t Lanes) bool {
	if _, ok := m.s.AccOf(t); ok {
		return true
	}
	// A vector packed from scalar sums has lanes of different shapes (a
	// cat of a conv's input and weight gradients: sums over the output
	// channels beside sums over the image), whose sources are no lanes.
	if t.Uniform() || t.L[0].Op == OpLoad || m.s.Packed(t, m.free) || !sameShape(t) {
		return false
	}
	for j := range t.L[0].Src {
		if m.hasAcc(t.Src(j)) {
			return true
		}
	}
	return false
}

// sameShape says whether t's lanes have one op and one number of sources
// (so that t.Src(j) is a tuple for each source j).
func sameShape(t Lanes) bool {
	for _, e := range t.L[:t.W] {
		if e.Op != t.L[0].Op || len(e.Src) != len(t.L[0].Src) {
			return false
		}
	}
	return true
}

// match says whether t is isomorphic (see the file comment).
func (m *simdMatcher) match(t Lanes) bool {
	if ok, seen := m.ok[t]; seen {
		return ok
	}
	ok := m.match1(t)
	m.ok[t] = ok
	return ok
}

func (m *simdMatcher) match1(t Lanes) bool {
	e0 := t.L[0]
	if t.Uniform() || ConstLanes(t) {
		return simdType(e0.DType)
	}
	if _, ok := m.s.AccOf(t); ok {
		return true
	}
	if m.s.Packed(t, m.free) {
		return true
	}
	for _, e := range t.L[:t.W] {
		if e.Op != e0.Op || e.DType != e0.DType || len(e.Src) != len(e0.Src) {
			return false
		}
	}
	intLanes := e0.DType == Int32 || e0.Op.IsCompare() && e0.Src[0].DType == Int32
	switch {
	case e0.Op == OpLoad:
		return (e0.DType == Float32 || e0.DType == Int32) && (m.contiguousLoads(t, true) || m.windowLoads(t))
	case e0.Op == OpCast:
		src := t.Src(0)
		if IndexLanes(t) {
			return true
		}
		if ld, elem, ok := NarrowLoad(src); ok {
			// int8 and uint8 widen to int32, or on to float32 (an image's
			// bytes read by a convolution); float16 to float32
			ok := e0.DType == Float32 || e0.DType == Int32 && elem != Float16
			return ok && m.contiguousLoads(ld, false)
		}
		return e0.DType == Float32 && src.L[0].DType == Int32 && m.match(src)
	case intLanes:
		switch e0.Op {
		case OpAdd, OpSub, OpMul, OpAnd, OpOr, OpXor, OpWhere, OpCmpLt, OpCmpEq:
		case OpDiv, OpMod, OpShr:
			// by a constant (gcc makes shifts and masks of / and %):
			// no division by zero, no shift past the width; a shift
			// also by amounts whose bounds are within the width, one
			// scalar for all lanes (Q6_K's high bits, 0 to 6 by
			// sub-block) or one per lane (Q5_0's, bit l&7 of a byte)
			c := t.Src(1)
			v, isInt := c.L[0].ConstInt()
			byBounded := e0.Op == OpShr && shiftsInWidth(c)
			if !byBounded && (!c.Uniform() || !c.L[0].IsConst() || !isInt || v <= 0 && e0.Op != OpShr || v < 0 || v >= 32 && e0.Op == OpShr) {
				return false
			}
		default:
			return false
		}
	case e0.Op.Info().SIMD == "": // the op table's vector spelling
		return false
	case e0.Op == OpCmpLt, e0.Op == OpCmpEq:
		if e0.Src[0].DType != Float32 {
			return false
		}
	case e0.DType != Float32:
		return false
	}
	for j := range e0.Src {
		s := t.Src(j)
		if s.Uniform() && s.L[0].DType == Bool && e0.Op != OpWhere {
			return false
		}
		if !m.match(s) {
			return false
		}
	}
	return true
}

// simdType says whether lanes of dt can be a vector value: float32 and
// int32 data, bool masks.
func simdType(dt DType) bool { return dt == Float32 || dt == Int32 || dt == Bool }

// contiguousLoads says whether the lanes of t are loads of one buffer, of
// the buffer's dtype, at consecutive indices, unguarded or (when guarded
// is set) all under the very same guard: the vector is loaded where the
// guard holds and zero elsewhere (a conv's padded rows, skip_zeros). Loads
// whose lanes have different guards stay scalar: a vector load would read
// the lanes a guard excludes.
func (m *simdMatcher) contiguousLoads(t Lanes, guarded bool) bool {
	e0 := t.L[0]
	if e0.Op != OpLoad || m.k.Bufs[e0.Arg.(int)].DType != e0.DType || len(e0.Src) > 1 && !guarded {
		return false
	}
	for i, e := range t.L[:t.W] {
		if e.Op != OpLoad || e.Arg != e0.Arg || len(e.Src) != len(e0.Src) || len(e.Src) > 1 && e.Src[1] != e0.Src[1] || (i > 0 && !contiguous(e0.Src[0], e.Src[0], int64(i))) {
			return false
		}
	}
	return true
}

// windowLoads says whether the lanes of t are unguarded loads of one
// buffer, of the buffer's dtype, at constant offsets from lane 0's index
// within a window of t.W elements from it (WindowOffsets): a max pool's
// gradient or a nearest upsample reads x[i/2] in lanes i, i+1, ... The C
// renderer builds the vector from the window's elements (a load and a
// permute), which keeps the lanes that read it in vectors.
func (m *simdMatcher) windowLoads(t Lanes) bool {
	e0 := t.L[0]
	if e0.Op != OpLoad || m.k.Bufs[e0.Arg.(int)].DType != e0.DType {
		return false
	}
	for _, e := range t.L[:t.W] {
		if e.Op != OpLoad || e.Arg != e0.Arg || len(e.Src) != 1 {
			return false
		}
	}
	_, ok := WindowOffsets(t)
	return ok
}

// WindowOffsets returns, for loads t, each lane's index minus lane 0's
// when all of them are constants in [0, t.W) (the same linear terms).
func WindowOffsets(t Lanes) ([]int64, bool) {
	offs := make([]int64, t.W)
	ta, ca := normalize(addTerms(nil, t.L[0].Src[0], 1))
	coef := map[*Expr]int64{}
	for _, x := range ta {
		coef[x.e] += x.k
	}
	for i, e := range t.L[:t.W] {
		tb, cb := normalize(addTerms(nil, e.Src[0], 1))
		if len(tb) != len(ta) || cb-ca < 0 || cb-ca >= int64(t.W) {
			return nil, false
		}
		for _, x := range tb {
			if coef[x.e] != x.k {
				return nil, false
			}
		}
		offs[i] = cb - ca
	}
	return offs, true
}

// NarrowLoad says whether t, the source of a conversion, is loads of a
// narrow type that a widening vector load reads (int8, uint8, float16; an
// int8 bitcast of uint8 loads reads them as int8): it returns the loads
// and the element type read.
func NarrowLoad(t Lanes) (loads Lanes, elem DType, ok bool) {
	if t.Uniform() {
		return t, 0, false
	}
	loads, elem = t, t.L[0].DType
	if t.L[0].Op == OpBitcast {
		loads = t.Src(0)
		if elem != Int8 || loads.L[0].DType != Uint8 {
			return t, 0, false
		}
	}
	if loads.L[0].Op != OpLoad || elem != Int8 && elem != Uint8 && elem != Float16 {
		return t, 0, false
	}
	for _, e := range t.L[:t.W] {
		if e.Op != t.L[0].Op {
			return t, 0, false
		}
	}
	return loads, elem, true
}

// verify checks a SIMD plan against its kernel: every run has a valid
// width, its members are eligible lanes of one reduce group (or stores of
// one float32 buffer at consecutive indices) of this kernel, no lane is in
// two runs, and every run's values are isomorphic.
func (s *SIMD) verify(k *Kernel, in map[*Expr]bool) error {
	if s.Width < 4 || s.Width > MaxVecWidth || s.Width&(s.Width-1) != 0 {
		return fmt.Errorf("simd: width %d", s.Width)
	}
	seen := map[*Expr]bool{}
	width := func(n int) bool { return n >= 4 && n <= s.Width && n&(n-1) == 0 }
	fresh := NewSIMD(s.Width, s.Accs, s.Stores)
	m := &simdMatcher{k: k, s: fresh, ok: map[Lanes]bool{}, free: map[*Expr][]*Axis{}}
	for _, ms := range s.Accs {
		if !width(len(ms)) {
			return fmt.Errorf("simd: a run of %d accumulators", len(ms))
		}
		for _, e := range ms {
			if !in[e] || e.Op != OpReduce || !simdEligible(e) || seen[e] || groupKey(e) != groupKey(ms[0]) {
				return fmt.Errorf("simd: accumulator run %s is not of distinct float32 members of one reduce group", e)
			}
			seen[e] = true
		}
		if !m.match(LanesOf(ms, 0)) {
			return fmt.Errorf("simd: the lanes of accumulator run %s... are not isomorphic", ms[0])
		}
	}
	for _, ss := range s.Stores {
		if !width(len(ss)) {
			return fmt.Errorf("simd: a run of %d stores", len(ss))
		}
		for _, e := range ss {
			if !in[e] || e.Op != OpStore || seen[e] || k.Bufs[e.Arg.(int)].DType != Float32 {
				return fmt.Errorf("simd: store run of %d lanes is not of distinct float32 stores", len(ss))
			}
			seen[e] = true
		}
		if (len(s.Accs) == 0 && !m.vectorStoreRun(ss)) || (len(s.Accs) > 0 && !m.storeRun(ss)) {
			return fmt.Errorf("simd: store run to buf%d at %s is not contiguous or not isomorphic over an accumulator", ss[0].Arg, ss[0].Src[0])
		}
	}
	roots := map[*Expr]bool{}
	for _, h := range s.HSums {
		n := len(h.Vecs)
		if n == 0 || n > maxHSumVecs || n&(n-1) != 0 || !width(h.Vecs[0].W) || !in[h.Root] || roots[h.Root] {
			return fmt.Errorf("simd: a horizontal sum of %d vectors", n)
		}
		roots[h.Root] = true
		w := h.Vecs[0].W
		leaves, ok := PairwiseLeaves(h.Root, n*w)
		if !ok {
			return fmt.Errorf("simd: %s is not a pairwise sum of %d lanes", h.Root, n*w)
		}
		vecs, ok := m.hsumVecs(leaves, w)
		if !ok || !slices.Equal(vecs, h.Vecs) {
			return fmt.Errorf("simd: the lanes summed by %s are not its plan's vectors over an accumulator", h.Root)
		}
	}
	return nil
}

// contiguous says whether index b is index a plus d (the same linear
// terms, constants d apart).
func contiguous(a, b *Expr, d int64) bool {
	ta, ca := normalize(addTerms(nil, a, 1))
	tb, cb := normalize(addTerms(nil, b, 1))
	if cb-ca != d || len(ta) != len(tb) {
		return false
	}
	coef := map[*Expr]int64{}
	for _, t := range ta {
		coef[t.e] += t.k
	}
	for _, t := range tb {
		if coef[t.e] != t.k {
			return false
		}
	}
	return true
}
