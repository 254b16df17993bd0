package render

import (
	"fmt"

	"tgc/pkg/ir"
)

// Vector memory operations (float4) for the GPU dialects: the loads and
// stores the vec4 pass grouped (ir.Vec4, see ir/gpu.go) are printed as one
// 4-wide access each; other loads stay scalar, one per lane (a gather);
// arithmetic stays scalar per lane in every dialect (GPU ALUs are scalar
// per thread on NVIDIA and Apple; the 4-lane code is independent, which
// the compilers schedule well). Only memory traffic is vectorized.

const vecWidth = ir.Vec4Width

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

// vecLoadHook renders a vector load at the first of its lanes the
// linearized kernel reaches and names all lanes; it says whether e was a
// lane of a vector load.
func (r *renderer) vecLoadHook(vp *ir.Vec4) func(e *ir.Expr) bool {
	vd := r.lang.gpu.vec
	groups := map[*ir.Expr]*[vecWidth]*ir.Expr{}
	for i := range vp.Loads {
		for _, x := range vp.Loads[i] {
			groups[x] = &vp.Loads[i]
		}
	}
	done := map[*[vecWidth]*ir.Expr]bool{}
	return func(e *ir.Expr) bool {
		g, ok := groups[e]
		if !ok {
			return false
		}
		if done[g] {
			return true
		}
		done[g] = true
		l0 := g[0]
		buf := BufName(r.k, l0.Arg.(int))
		typ, ld := vd.load(l0.DType, buf, r.expr(l0.Src[0]))
		if len(l0.Src) > 1 {
			ld = fmt.Sprintf("(%s?%s:%s)", r.expr(l0.Src[1]), ld, vd.zero(l0.DType))
		}
		name := fmt.Sprintf("val%d", r.nval)
		r.nval++
		r.line("%s %s = %s;", typ, name, ld)
		for u, x := range g {
			r.names[x] = vd.lane(x.DType, name, u)
		}
		return true
	}
}

// vecStoreRuns maps each store of a vector store to its lanes.
func vecStoreRuns(vp *ir.Vec4) map[*ir.Expr][vecWidth]*ir.Expr {
	m := map[*ir.Expr][vecWidth]*ir.Expr{}
	for _, l := range vp.Stores {
		for _, s := range l {
			m[s] = l
		}
	}
	return m
}

// gpuVecStore renders one vector store.
func (r *renderer) gpuVecStore(l [vecWidth]*ir.Expr) {
	var vals [vecWidth]string
	for u, s := range l {
		vals[u] = r.expr(r.storeValue(s))
	}
	r.line("%s;", r.lang.gpu.vec.store(l[0].DType, BufName(r.k, l[0].Arg.(int)), r.expr(l[0].Src[0]), vals))
}

// storeValue is the value a store writes: without the cast to float16
// when the dialect's store converts itself.
func (r *renderer) storeValue(s *ir.Expr) *ir.Expr {
	v := s.Src[1]
	if _, named := r.names[v]; !named && r.lang.gpu.store != nil && v.Op == ir.OpCast && v.DType == ir.Float16 && v.Src[0].DType == ir.Float32 {
		return v.Src[0]
	}
	return v
}

// liveUses recounts the consumers of each expression of a vectorized
// kernel as it is rendered: lanes 1-3 of a vector load or store read no
// index of their own, so index math only they used is dead and must not be
// declared.
func liveUses(k *ir.Kernel, vp *ir.Vec4) map[*ir.Expr]int {
	first := map[*ir.Expr]*ir.Expr{} // each lane of a vector load → its lane 0
	for _, g := range vp.Loads {
		for _, x := range g {
			first[x] = g[0]
		}
	}
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
		if l0, ok := first[e]; ok && e != l0 {
			visit(l0)
			return
		}
		count(e.Src...)
	}
	stores := vecStoreRuns(vp)
	for _, s := range k.Stores {
		l, ok := stores[s]
		switch {
		case !ok:
			count(s.Src...)
		case l[0] == s:
			srcs := []*ir.Expr{l[0].Src[0]}
			for _, x := range l {
				srcs = append(srcs, x.Src[1])
			}
			count(srcs...)
		}
	}
	return uses
}
