package render

import (
	"fmt"
	"strings"

	"tgc/pkg/ir"
)

// hsumGroups are the horizontal sums of a kernel's SIMD plan that are
// rendered together, by the leader of their reduce group: single
// accumulators of one width whose reduces share a loop, final together
// when the loop ends, where the sums are computed (sumGroups), in scope
// wherever they are used. K sums of W-lane vectors are one vector of K
// sums: the accumulators' neighbours added pairwise two vectors at a time
// (tg_pairsW), K-1 of those, then the vector's halves folded down to K
// lanes. Each accumulator's lanes are added in the pairs and the order of
// tg_psumW's tree (neighbours, then neighbours of those): the same sums,
// bit for bit, in about a quarter of the vector operations for K = 4
// (a chunked prompt's query-key products, four queries a block: four
// tg_psum16 of 4 levels each against 3 pairs of 16 lanes and 2 folds).
// Groups are powers of two from 4 to W; the rest stay single.
func hsumGroups(prog *ir.Program, plan *ir.SIMD) map[*ir.Expr][][]*ir.Expr {
	type key struct {
		leader *ir.Expr
		w      int
	}
	var order []key
	roots := map[key][]*ir.Expr{}
	for _, h := range plan.HSums {
		if len(h.Vecs) != 1 {
			continue
		}
		run, ok := plan.AccOf(h.Vecs[0])
		if !ok {
			continue
		}
		k := key{prog.Leader[plan.Accs[run][0]], h.Vecs[0].W}
		if k.leader == nil {
			continue
		}
		if _, seen := roots[k]; !seen {
			order = append(order, k)
		}
		roots[k] = append(roots[k], h.Root)
	}
	groups := map[*ir.Expr][][]*ir.Expr{}
	for _, k := range order {
		rs := roots[k]
		for len(rs) >= 4 {
			n := 4
			for n*2 <= len(rs) && n*2 <= k.w {
				n *= 2
			}
			groups[k.leader] = append(groups[k.leader], rs[:n:n])
			rs = rs[n:]
		}
	}
	return groups
}

// sumGroups renders the grouped horizontal sums over the accumulators of
// leader's reduce group (hsumGroups), right after its loop, each a vector
// of the sums, and names each sum a lane of it.
func (r *renderer) sumGroups(leader *ir.Expr) {
	if r.vec == nil {
		return
	}
	if r.vec.groups == nil {
		r.vec.groups = hsumGroups(r.prog, r.vec.plan)
	}
	for _, group := range r.vec.groups[leader] {
		xs := make([]string, len(group))
		for i, g := range group {
			xs[i] = r.vexpr(r.vec.hsum[g][0])
		}
		s, folds := groupedSums(xs, r.vec.hsum[group[0]][0].W)
		for _, w := range folds {
			r.need(fmt.Sprintf("tg_fold%d", w), foldDef(w))
		}
		name := r.vec.fresh("vhsum")
		r.line("tg_f%d %s = %s;", len(group), name, s)
		for i, g := range group {
			r.names[g] = fmt.Sprintf("%s[%d]", name, i)
		}
	}
}

// groupedSums is the C expression of the vector of the lane sums of the
// w-lane vectors xs (as many as a power of two from 4 to w), and the
// widths of the tg_fold macros it uses.
func groupedSums(xs []string, w int) (string, []int) {
	k := len(xs)
	s := pairsTree(xs, w)
	var folds []int
	for ; w > k; w /= 2 {
		folds = append(folds, w)
		s = fmt.Sprintf("tg_fold%d(%s)", w, s)
	}
	return s, folds
}

// foldDef defines tg_foldW: a W-lane vector's neighbours added pairwise
// into W/2 lanes, its low half's then its high half's.
func foldDef(w int) string {
	lanes := func(from int) string {
		s := make([]string, w/2)
		for i := range s {
			s[i] = fmt.Sprint(from + i)
		}
		return strings.Join(s, ",")
	}
	return fmt.Sprintf("#define tg_fold%d(v) ({ tg_f%d f%d_ = (v); tg_pairs%d(__builtin_shufflevector(f%d_, f%d_, %s), __builtin_shufflevector(f%d_, f%d_, %s)); })",
		w, w, w, w/2, w, w, lanes(0), w, w, lanes(w/2))
}
