package render

import (
	"fmt"

	"tgc/pkg/ir"
)

// Vector memory operations (float4) for the GPU dialects.
//
// The design is the CPU's upcast at render time: a kernel whose innermost
// global axis has a size divisible by 4 is rebuilt with that axis split
// into threads of 4 lanes (gidx = thread*4 + lane), every store duplicated
// once per lane. Each original load and store then has 4 lane versions.
// A lane group becomes one vector operation when
//   - its buffer is float32 or float16,
//   - lane u's index is lane 0's plus u (same linear terms, constant + u),
//   - lane 0's index is provably a multiple of 4 for every value of the loop
//     variables (its constant and every linear coefficient divide by 4;
//     buffers themselves are allocated aligned), and
//   - for loads, all lanes have the same guard (one guard for the vector).
// Other loads stay scalar, one per lane (a gather); arithmetic stays scalar
// per lane in every dialect (GPU ALUs are scalar per thread on NVIDIA and
// Apple; the 4-lane code is independent, which the compilers schedule
// well). Only memory traffic is vectorized.
//
// Which kernels: no grouped reduce; every store vectorizes (the output is
// written contiguously, so threads do not lose coalescing); and a kernel
// with reduces needs a vector load inside a reduce loop (a matmul's b[k,j]
// row), since splitting its outputs into lanes otherwise only costs
// threads. The vectorized kernel is planned without GROUP.

const vecWidth = 4

// vecDialect renders the vector memory operations of a GPU dialect.
type vecDialect struct {
	prelude string // type definitions, guarded for repeated inclusion
	// load is a vector load of 4 elements at buf[idx..idx+3]: the declared
	// type and the expression.
	load func(dt ir.DType, buf, idx string) (typ, expr string)
	zero func(dt ir.DType) string // a vector of zeros of load's type
	// lane reads lane u of a vector value named v, as a scalar of the
	// dialect's type for dt.
	lane  func(dt ir.DType, v string, u int) string
	store func(dt ir.DType, buf, idx string, vals [vecWidth]string) string
}

// vecPlan is a kernel rebuilt with 4 lanes and its vector memory groups.
type vecPlan struct {
	k      *ir.Kernel
	loads  map[*ir.Expr]*vecLoad // each lane of a vector load → its group
	stores [][vecWidth]*ir.Expr  // per original store: its lane stores
	vstore []bool                // per original store: one vector store
	lanes  map[*ir.Expr]int      // lane of each load of a group
	order  []*vecLoad            // groups, for stable output
}

type vecLoad struct {
	lanes [vecWidth]*ir.Expr
	done  bool
}

// linearForm splits an integer expression into linear terms and a constant.
func linearForm(e *ir.Expr, k int64, terms map[*ir.Expr]int64) int64 {
	switch {
	case e.IsConst():
		v, _ := e.ConstInt()
		return v * k
	case e.Op == ir.OpAdd:
		return linearForm(e.Src[0], k, terms) + linearForm(e.Src[1], k, terms)
	case e.Op == ir.OpSub:
		return linearForm(e.Src[0], k, terms) + linearForm(e.Src[1], -k, terms)
	case e.Op == ir.OpMul && e.Src[1].IsConst():
		v, _ := e.Src[1].ConstInt()
		return linearForm(e.Src[0], k*v, terms)
	case e.Op == ir.OpMul && e.Src[0].IsConst():
		v, _ := e.Src[0].ConstInt()
		return linearForm(e.Src[1], k*v, terms)
	}
	terms[e] += k
	return 0
}

// contiguous says whether index b is index a plus d (same linear terms).
func contiguous(a, b *ir.Expr, d int64) bool {
	ta, tb := map[*ir.Expr]int64{}, map[*ir.Expr]int64{}
	ca, cb := linearForm(a, 1, ta), linearForm(b, 1, tb)
	if cb-ca != d {
		return false
	}
	for e, k := range ta {
		if k != tb[e] {
			return false
		}
	}
	for e, k := range tb {
		if k != ta[e] {
			return false
		}
	}
	return true
}

// aligned4 proves that an integer index is a multiple of 4 for every value
// of its variables: the constant and every coefficient divide by 4.
func aligned4(e *ir.Expr) bool {
	terms := map[*ir.Expr]int64{}
	if linearForm(e, 1, terms)%vecWidth != 0 {
		return false
	}
	for _, k := range terms {
		if k%vecWidth != 0 {
			return false
		}
	}
	return true
}

func vecDType(dt ir.DType) bool { return dt == ir.Float32 || dt == ir.Float16 }

// laneGroup says whether 4 lane versions of a load or store form one
// aligned vector access.
func laneGroup(l [vecWidth]*ir.Expr, op ir.Op, k *ir.Kernel) bool {
	for u, e := range l {
		if e == nil || e.Op != op || e.Arg != l[0].Arg || len(e.Src) != len(l[0].Src) {
			return false
		}
		if u > 0 && !contiguous(l[0].Src[0], e.Src[0], int64(u)) {
			return false
		}
		if op == ir.OpLoad && len(e.Src) > 1 && e.Src[1] != l[0].Src[1] {
			return false // lanes with different guards: gather
		}
	}
	return vecDType(k.Bufs[l[0].Arg.(int)].DType) && aligned4(l[0].Src[0])
}

// planVector rebuilds k with its innermost global axis split into lanes,
// or returns nil when the kernel does not vectorize.
func planVector(d *gpuDialect, k *ir.Kernel, lim Limits) *vecPlan {
	if d.vec == nil || len(k.Global) == 0 || len(k.Stores) == 0 || k.HasSym() {
		return nil
	}
	inner := k.Global[len(k.Global)-1]
	if inner.Size%vecWidth != 0 {
		return nil
	}
	if planLaunch(k, ir.Linearize(k), lim).Group > 0 {
		return nil
	}
	nk := *k
	nk.B = ir.NewBuilder()
	b := nk.B
	split := &ir.Axis{ID: inner.ID, Size: inner.Size / vecWidth, Kind: ir.AxisGlobal}
	nk.Global = append(append([]*ir.Axis{}, k.Global[:len(k.Global)-1]...), split)
	var memos [vecWidth]map[*ir.Expr]*ir.Expr
	var stores []*ir.Expr
	vp := &vecPlan{k: &nk, loads: map[*ir.Expr]*vecLoad{}}
	vp.stores = make([][vecWidth]*ir.Expr, len(k.Stores))
	for u := 0; u < vecWidth; u++ {
		memos[u] = map[*ir.Expr]*ir.Expr{}
		for i, s := range k.Stores {
			ns := b.Rebuild(s, func(e *ir.Expr) *ir.Expr {
				if e.Op == ir.OpVar && e.Arg.(*ir.Axis) == inner {
					return b.Add(b.Mul(b.Var(split), b.Int(vecWidth)), b.Int(int64(u)))
				}
				return nil
			}, memos[u])
			vp.stores[i][u] = ns
			stores = append(stores, ns)
		}
	}
	nk.Stores = stores
	vp.vstore = make([]bool, len(k.Stores))
	for i := range k.Stores {
		if !laneGroup(vp.stores[i], ir.OpStore, &nk) {
			return nil
		}
		vp.vstore[i] = true
	}
	hasReduce, reduceVec := false, false
	inReduce := map[*ir.Expr]bool{} // original loads inside some reduce's loop
	ir.Walk(k.Stores, func(e *ir.Expr) {
		if e.Op != ir.OpReduce {
			return
		}
		hasReduce = true
		axes := map[*ir.Axis]bool{}
		for _, a := range e.Arg.(*ir.ReduceArg).Axes {
			axes[a] = true
		}
		ir.Walk([]*ir.Expr{e.Src[0]}, func(x *ir.Expr) {
			if x.Op == ir.OpLoad && usesAxis(x, axes) {
				inReduce[x] = true
			}
		})
	})
	ir.Walk(k.Stores, func(e *ir.Expr) {
		if e.Op != ir.OpLoad {
			return
		}
		var l [vecWidth]*ir.Expr
		for u := range l {
			l[u] = memos[u][e]
		}
		if !laneGroup(l, ir.OpLoad, &nk) {
			return
		}
		for u, x := range l {
			if _, taken := vp.loads[x]; taken {
				return
			}
			for v := 0; v < u; v++ {
				if l[v] == x {
					return
				}
			}
		}
		g := &vecLoad{lanes: l}
		for _, x := range l {
			vp.loads[x] = g
		}
		reduceVec = reduceVec || inReduce[e]
	})
	if hasReduce && !reduceVec {
		return nil
	}
	return vp
}

func usesAxis(e *ir.Expr, axes map[*ir.Axis]bool) bool {
	found := false
	ir.Walk([]*ir.Expr{e}, func(x *ir.Expr) {
		found = found || x.Op == ir.OpVar && axes[x.Arg.(*ir.Axis)]
	})
	return found
}

// vecLoadHook renders a vector load at the first of its lanes the
// linearized kernel reaches and names all lanes; it says whether e was a
// lane of a vector load.
func (r *renderer) vecLoadHook(vp *vecPlan) func(e *ir.Expr) bool {
	vd := r.lang.gpu.vec
	return func(e *ir.Expr) bool {
		g, ok := vp.loads[e]
		if !ok {
			return false
		}
		if g.done {
			return true
		}
		g.done = true
		l0 := g.lanes[0]
		buf := BufName(r.k, l0.Arg.(int))
		typ, ld := vd.load(l0.DType, buf, r.expr(l0.Src[0]))
		if len(l0.Src) > 1 {
			ld = fmt.Sprintf("(%s?%s:%s)", r.expr(l0.Src[1]), ld, vd.zero(l0.DType))
		}
		name := fmt.Sprintf("val%d", r.nval)
		r.nval++
		r.line("%s %s = %s;", typ, name, ld)
		for u, x := range g.lanes {
			r.names[x] = vd.lane(x.DType, name, u)
		}
		return true
	}
}

// vecStores renders the stores of a vectorized kernel: one vector store per
// original store.
func (r *renderer) vecStores(vp *vecPlan) {
	g := r.lang.gpu
	for _, l := range vp.stores {
		var vals [vecWidth]string
		for u, s := range l {
			vals[u] = r.expr(r.storeValue(s))
		}
		r.line("%s;", g.vec.store(l[0].DType, BufName(r.k, l[0].Arg.(int)), r.expr(l[0].Src[0]), vals))
	}
}

// storeValue is the value a store writes: without the cast to float16
// when the dialect's store converts itself.
func (r *renderer) storeValue(s *ir.Expr) *ir.Expr {
	v := s.Src[1]
	if _, named := r.names[v]; !named && r.lang.gpu.store != nil && v.Op == ir.OpCast && v.DType == ir.Float16 {
		return v.Src[0]
	}
	return v
}

// liveUses recounts the consumers of each expression of a vectorized
// kernel as it is rendered: lanes 1-3 of a vector load or store read no
// index of their own, so index math only they used is dead and must not be
// declared.
func liveUses(vp *vecPlan) map[*ir.Expr]int {
	uses := map[*ir.Expr]int{}
	seen := map[*ir.Expr]bool{}
	var visit func(e *ir.Expr)
	count := func(srcs ...*ir.Expr) {
		done := map[*ir.Expr]bool{}
		for _, s := range srcs {
			if !done[s] {
				done[s] = true
				uses[s]++
				visit(s)
			}
		}
	}
	visit = func(e *ir.Expr) {
		if seen[e] {
			return
		}
		seen[e] = true
		if g, ok := vp.loads[e]; ok {
			if e != g.lanes[0] {
				visit(g.lanes[0])
				return
			}
		}
		count(e.Src...)
	}
	for _, l := range vp.stores {
		srcs := []*ir.Expr{l[0].Src[0]}
		for _, s := range l {
			srcs = append(srcs, s.Src[1])
		}
		count(srcs...)
	}
	return uses
}
