package ir

import (
	"fmt"
	"strings"
)

// Decisions for grid devices (the GPU dialects), made as opts by the opts
// pass and as a plan by the vec4 pass, so that they are verified, dumped
// and searchable like the CPU's:
//
//   - GROUP(n): in a kernel with a small output and a large top-level
//     reduce (tinygrad's GROUP), each output is one work-group whose n
//     lanes stride through the reduce and combine their partial results
//     in local memory (Kernel.Group).
//   - UPCAST(inner, 4): each thread computes 4 neighbouring outputs, so
//     that its loads and stores can be 4-wide vector accesses; the vec4
//     pass then picks the accesses that are (Kernel.Vec4).

// GPU describes a grid device: the limits its launches are planned in.
type GPU struct {
	MaxWorkGroup int64    // threads per work-group
	MaxLocal     [3]int64 // work-group size limit per dimension
	MaxGroups    [3]int64 // number of work-groups per dimension (0: no limit)
	LocalMem     int64    // bytes of local (shared) memory per work-group
	Vec4         bool     // the dialect has 4-wide vector loads and stores
}

// Thresholds of the GROUP heuristic: at most groupMaxOut outputs, each a
// work-group, and a top-level reduce of at least groupMinReduce elements;
// or a reduce of at least groupMinRow elements with rows read along it
// (readsRows) whatever the output count, or into at most groupFewOut
// outputs (one thread each would leave the GPU idle), with about
// groupRowPerLane elements per lane.
const (
	groupMaxOut     = 8192
	groupMinReduce  = 1024
	groupLanes      = 256
	groupMinRow     = 256
	groupRowPerLane = 8
	rowMinStride    = 16 // elements between neighbouring outputs' rows
	groupFewOut     = 64 // fewer outputs than a GPU has multiprocessors
)

// maxGroupLanes bounds a GROUP's lanes (a work-group's threads).
const maxGroupLanes = 1024

// Vec4Width is the lanes of a GPU vector access.
const Vec4Width = 4

// gpuHeuristic picks a grid device's opts: GROUP for a large reduce into
// few outputs or along rows (groupLanes), else 4 lanes along the innermost
// axis when every store and (in a reduce kernel) some load inside a reduce
// loop become vector accesses; splitting outputs into lanes otherwise only
// costs threads.
func (g *GPU) heuristic(k *Kernel) []Opt {
	if n := g.groupLanes(k); n > 0 {
		return []Opt{{Kind: OptGroup, Amt: n}}
	}
	if g.Vec4 && vec4Pays(k) {
		return []Opt{{Kind: OptUpcast, Axis: len(k.Global) - 1, Amt: Vec4Width}}
	}
	return nil
}

// topReduces are the reduces evaluated at the top level of a kernel.
func topReduces(k *Kernel) []*Expr {
	var rs []*Expr
	for _, e := range Linearize(k).Top.Nodes {
		if e.Op == OpReduce {
			rs = append(rs, e)
		}
	}
	return rs
}

func reduceSize(e *Expr) int64 {
	n := int64(1)
	for _, a := range e.Arg.(*ReduceArg).Axes {
		n *= a.Size
	}
	return n
}

func pow2Floor(n int64) int64 {
	p := int64(1)
	for p*2 <= n {
		p *= 2
	}
	return p
}

// groupLanes is the lanes of a grouped reduce for k, or 0: the
// heuristic's thresholds (few outputs and a large reduce, or rows read
// along a reduce), then maxGroup.
func (g *GPU) groupLanes(k *Kernel) int64 {
	n := int64(0)
	for _, e := range topReduces(k) {
		n = max(n, reduceSize(e))
	}
	switch {
	case k.GlobalSize() <= groupMaxOut && n >= groupMinReduce:
		return g.maxGroup(k)
	case n >= groupMinRow && (k.GlobalSize() <= groupFewOut || readsRows(k)):
		if lanes := min(g.maxGroup(k), pow2Floor(n/groupRowPerLane)); lanes >= 16 {
			return lanes
		}
	}
	return 0
}

// groupableSym: a grouped reduce's lanes stride through its loops
// flattened, so a symbolic trip count (a decode step's attended positions)
// may only be a top-level reduce's outermost loop's (the flat count is
// then that trip times constants); the global axes are the work-groups and
// stay constant.
func groupableSym(k *Kernel) bool {
	for _, a := range k.Global {
		if a.Sym != nil {
			return false
		}
	}
	for _, e := range topReduces(k) {
		for _, a := range e.Arg.(*ReduceArg).Axes[1:] {
			if a.Sym != nil {
				return false
			}
		}
	}
	return true
}

// readsRows: a load inside a top-level reduce walks memory along the
// reduce (stride 1 on its innermost axis) while neighbouring outputs (the
// innermost global axis, a grid's dimension 0) lie rows apart, as a
// matrix-vector product's weights do. One thread per output would make
// every warp-wide load touch a line per thread; a work-group's lanes
// striding through the row read consecutive addresses instead.
func readsRows(k *Kernel) bool {
	if len(k.Global) == 0 {
		return false
	}
	inner := k.Global[len(k.Global)-1]
	rows := false
	for _, r := range topReduces(k) {
		axes := r.Arg.(*ReduceArg).Axes
		along := axes[len(axes)-1]
		Walk([]*Expr{r.Src[0]}, func(x *Expr) {
			if x.Op != OpLoad {
				return
			}
			if s, ok := AxisStride(x.Src[0], along); !ok || s != 1 {
				return
			}
			s, ok := AxisStride(x.Src[0], inner)
			rows = rows || ok && (s >= rowMinStride || s <= -rowMinStride)
		})
	}
	return rows
}

// maxGroup is the most lanes (a power of two, 16 to 256) the device's
// limits allow a grouped reduce of k, or 0: one work-group per output, the
// lanes' partial results in local memory.
func (g *GPU) maxGroup(k *Kernel) int64 {
	if g.MaxGroups[1] > 0 && k.GlobalSize() > g.MaxGroups[1] {
		return 0
	}
	rs := topReduces(k)
	if len(rs) == 0 {
		return 0
	}
	bytes := int64(0)
	for _, e := range rs {
		bytes += int64(e.DType.Size())
	}
	lanes := pow2Floor(min(groupLanes, max(g.MaxWorkGroup, 1), max(g.MaxLocal[0], 1)))
	for lanes >= 16 && g.LocalMem > 0 && lanes*bytes > g.LocalMem {
		lanes /= 2
	}
	if lanes < 16 {
		return 0
	}
	return lanes
}

// actions are BEAM's choices on a grid device: a GROUP of any lane count
// the limits allow, or 4 lanes along the innermost axis for vector
// accesses. They do not combine: a list holds one.
func (g *GPU) actions(k *Kernel, opts []Opt) []Opt {
	if len(opts) > 0 {
		return nil
	}
	var out []Opt
	for n := int64(16); n <= g.maxGroup(k); n *= 2 {
		out = append(out, Opt{Kind: OptGroup, Amt: n})
	}
	if n := len(k.Global); g.Vec4 && n > 0 && k.Global[n-1].Size%Vec4Width == 0 {
		out = append(out, Opt{Kind: OptUpcast, Axis: n - 1, Amt: Vec4Width})
	}
	return out
}

// vec4Pays: the innermost axis splits into 4 lanes, every store becomes a
// vector store, and a kernel with reduces gets a vector load inside a
// reduce loop (a matmul's b[k, j] row).
func vec4Pays(k *Kernel) bool {
	if len(k.Global) == 0 || len(k.Stores) == 0 {
		return false
	}
	inner := k.Global[len(k.Global)-1]
	if inner.Size%Vec4Width != 0 {
		return false
	}
	nk := UpcastAxes(k, map[*Axis]int64{inner: Vec4Width})
	v := planVec4(nk)
	if len(v.Stores)*Vec4Width != len(nk.Stores) {
		return false
	}
	hasReduce, reduceVec := false, false
	inReduce := map[*Expr]bool{} // loads inside some reduce's loop
	Walk(nk.Stores, func(e *Expr) {
		if e.Op != OpReduce {
			return
		}
		hasReduce = true
		Walk([]*Expr{e.Src[0]}, func(x *Expr) {
			if x.Op == OpLoad && usesAnyVar(x, e.Arg.(*ReduceArg).Axes) {
				inReduce[x] = true
			}
		})
	})
	for _, l := range v.Loads {
		reduceVec = reduceVec || inReduce[l[0]]
	}
	return !hasReduce || reduceVec
}

func usesAnyVar(e *Expr, axes []*Axis) bool {
	for _, a := range axes {
		if usesVar(e, a) {
			return true
		}
	}
	return false
}

// Vec4 is the vec4 pass's plan: loads and stores done as one aligned
// 4-wide vector access each, lanes in order.
type Vec4 struct {
	Loads  [][Vec4Width]*Expr
	Stores [][Vec4Width]*Expr
}

// PlanVec4 is the vec4 pass: it groups a kernel's loads and stores into
// aligned 4-wide vector accesses (Kernel.Vec4; none: k unchanged). A
// kernel with a grouped reduce keeps scalar accesses.
func PlanVec4(k *Kernel, _ Target) (*Kernel, error) {
	if k.Group > 0 {
		return k, nil
	}
	v := planVec4(k)
	if len(v.Loads) == 0 && len(v.Stores) == 0 {
		return k, nil
	}
	nk := *k
	nk.Vec4 = v
	return &nk, nil
}

// vec4Access: the fields a vector access's lanes share, and its place.
type vec4Access struct {
	op    Op
	buf   any
	guard *Expr
	terms string // the index's linear terms
}

// planVec4 finds every 4 loads (or stores) of one float32 or float16
// buffer, under one guard, at indices i, i+1, i+2, i+3 with i a multiple
// of 4 for every value of the loop variables (its constant and every
// coefficient divide by 4; buffers are allocated aligned). Such groups
// cannot overlap: their first index is 0 mod 4.
func planVec4(k *Kernel) *Vec4 {
	v := &Vec4{}
	type access struct {
		key vec4Access
		c   int64
	}
	at := map[*Expr]access{}
	byPlace := map[vec4Access]map[int64]*Expr{}
	var order []*Expr
	Walk(k.Stores, func(e *Expr) {
		if e.Op != OpLoad && e.Op != OpStore || !vec4DType(k.Bufs[e.Arg.(int)].DType) {
			return
		}
		ts, c := normalize(addTerms(nil, e.Src[0], 1))
		key := vec4Access{op: e.Op, buf: e.Arg, terms: termKey(ts)}
		if e.Op == OpLoad && len(e.Src) > 1 {
			key.guard = e.Src[1]
		}
		at[e] = access{key, c}
		if byPlace[key] == nil {
			byPlace[key] = map[int64]*Expr{}
		}
		if _, dup := byPlace[key][c]; !dup {
			byPlace[key][c] = e
			order = append(order, e)
		}
	})
	for _, e := range order {
		a := at[e]
		if !aligned4(e.Src[0]) {
			continue
		}
		var g [Vec4Width]*Expr
		for u := range g {
			g[u] = byPlace[a.key][a.c+int64(u)]
		}
		if g[1] == nil || g[2] == nil || g[3] == nil {
			continue
		}
		if e.Op == OpLoad {
			v.Loads = append(v.Loads, g)
		}
	}
	// Stores in kernel order (a group at its first lane), so the vector
	// stores are written in the order of the stores they replace.
	stores := map[*Expr]bool{}
	for _, s := range k.Stores {
		a := at[s]
		if at[s].key.op != OpStore || stores[s] {
			continue
		}
		base := a.c - ((a.c%Vec4Width)+Vec4Width)%Vec4Width
		var g [Vec4Width]*Expr
		for u := range g {
			g[u] = byPlace[a.key][base+int64(u)]
		}
		if g[0] == nil || g[1] == nil || g[2] == nil || g[3] == nil || !aligned4(g[0].Src[0]) {
			continue
		}
		v.Stores = append(v.Stores, g)
		for _, x := range g {
			stores[x] = true
		}
	}
	return v
}

// termKey is a comparable form of linear terms.
func termKey(ts []term) string {
	var sb strings.Builder
	for _, t := range ts {
		fmt.Fprintf(&sb, "%p*%d+", t.e, t.k)
	}
	return sb.String()
}

func vec4DType(dt DType) bool { return dt == Float32 || dt == Float16 }

// aligned4 proves that an integer index is a multiple of 4 for every value
// of its variables.
func aligned4(e *Expr) bool { return alignedTo(e, Vec4Width) }

// verify checks a Vec4 plan against its kernel.
func (v *Vec4) verify(k *Kernel, in map[*Expr]bool) error {
	seen := map[*Expr]bool{}
	check := func(g [Vec4Width]*Expr, op Op) error {
		for u, e := range g {
			if e == nil || !in[e] || e.Op != op || seen[e] || e.Arg != g[0].Arg || len(e.Src) != len(g[0].Src) ||
				!vec4DType(k.Bufs[e.Arg.(int)].DType) {
				return fmt.Errorf("vec4: a %s group is not of 4 distinct float accesses to one buffer", op)
			}
			if op == OpLoad && len(e.Src) > 1 && e.Src[1] != g[0].Src[1] {
				return fmt.Errorf("vec4: a load group has lanes with different guards")
			}
			if u > 0 && !contiguous(g[0].Src[0], e.Src[0], int64(u)) {
				return fmt.Errorf("vec4: the lanes of a %s group at %s are not contiguous", op, g[0].Src[0])
			}
			seen[e] = true
		}
		if !aligned4(g[0].Src[0]) {
			return fmt.Errorf("vec4: a %s group at %s is not 4-aligned", op, g[0].Src[0])
		}
		return nil
	}
	if k.Group > 0 && (len(v.Loads) > 0 || len(v.Stores) > 0) {
		return fmt.Errorf("vec4: vector accesses in a grouped kernel")
	}
	for _, g := range v.Loads {
		if err := check(g, OpLoad); err != nil {
			return err
		}
	}
	for _, g := range v.Stores {
		if err := check(g, OpStore); err != nil {
			return err
		}
	}
	return nil
}
