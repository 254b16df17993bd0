package render

import (
	"fmt"
	"strings"

	"tgc/pkg/ir"
)

// SIMD for the CPU dialect: GCC vector extensions for upcast reduce lanes.
//
// The upcast pass (ir/upcast.go) gives a reduce group one scalar
// accumulator per lane. gcc only partly SLP-vectorizes 64 scalar
// accumulators (it spills them); the same loop written with 8-wide vector
// accumulators runs near the machine's peak (docs: reference/machine.md).
// So the renderer does the SLP step itself: within a group it looks for W
// (the dialect's vector width: 8 for AVX2, 16 for AVX-512), else W/2, ...
// down to 4 SUM or MAX members whose accumulated expressions are isomorphic, lane
// by lane:
//   - the very same expression in every lane: a broadcast of the scalar,
//     computed once as usual ({x,x,...}: `(tg_f8){}+x` is not simplified);
//   - unguarded float32 loads of one buffer at indices i, i+1, ..., i+w-1:
//     one unaligned vector load;
//   - lanes of one vector accumulator, in order (epilogues after the loop);
//   - the same op (+ - * neg max where < exp2) over isomorphic sources;
//   - int32 lanes (+ - * & | ^ / % == <, where) and conversions: loads of
//     int8, uint8 and float16 at consecutive indices widened to int32 or
//     float32, int32 to float32 (a quantized weight's bytes and scales:
//     the dequantization runs in vectors too).
// Such a run gets one vector accumulator (MAX: a lane-wise select, like the
// scalar (v>acc)?v:acc); its lanes' scalar names become
// vaccN[l], so every later use renders unchanged. Stores of 8 contiguous
// outputs whose values are isomorphic over vector accumulators become one
// vector store. Everything else renders as scalar code, so correctness
// never depends on the pattern matching; scalar nodes whose every use was
// vectorized are not rendered.

// The helpers are macros, not functions: a function passing a vector
// wider than the target's registers by value draws gcc's ABI warnings.
// The width is the dialect's (CWithWidth), chosen by the CPU device from
// the host's flags: gcc lowers a 16-wide vector on an AVX2 target through
// memory (0.3x the scalar form on a matmul), while on an AVX-512 host
// 8-wide vectors halve the width gcc's own vectorizer would use.
func cVecPrelude(width int) string {
	var sb strings.Builder
	sb.WriteString("#ifndef TG_VEC\n#define TG_VEC\n")
	for w := width; w >= 4; w /= 2 {
		fmt.Fprintf(&sb, "typedef float tg_f%d __attribute__((vector_size(%d)));\n", w, 4*w)
		fmt.Fprintf(&sb, "typedef int tg_i%d __attribute__((vector_size(%d)));\n", w, 4*w)
	}
	sb.WriteString(`#define tg_load(T, p) ({ T v_; __builtin_memcpy(&v_, (p), sizeof v_); v_; })
#define tg_store(p, v) ({ __typeof__(v) v_ = (v); __builtin_memcpy((p), &v_, sizeof v_); })
#define tg_sel(TI, TF, m, a, b) ((TF)(((m) & (TI)(a)) | (~(m) & (TI)(b))))
/* tg_exp2f (c_math.go) lane by lane: the same operations on vectors, so
   the same results; int masks replace the scalar's integer min/max. */
#define tg_exp2v(TI, TF, x) ({ \
  TF x_ = (x); TI c_ = (TI)x_, z_ = c_ - c_; \
  c_ ^= (c_ >> 31) & 0x7fffffff; \
  TI m_ = c_ < z_ + 0x43010000; c_ = (m_ & c_) | (~m_ & (z_ + 0x43010000)); \
  m_ = c_ > z_ - 1125580801; c_ = (m_ & c_) | (~m_ & (z_ - 1125580801)); \
  c_ ^= (c_ >> 31) & 0x7fffffff; \
  TF cf_ = (TF)c_; \
  TF nf_ = (cf_ + 12582912.0f) - 12582912.0f; \
  TF f_ = cf_ - nf_; \
  TI n_ = __builtin_convertvector(nf_, TI); \
  TF p_ = 1.0f + f_*(0.693147182f + f_*(0.240226507f + f_*(0.0555035695f + \
          f_*(0.00961808302f + f_*(0.00133908633f + f_*0.000154531634f))))); \
  TI n1_ = n_ >> 1; \
  TF s1_ = (TF)((n1_ + 127) << 23), s2_ = (TF)((n_ - n1_ + 127) << 23); \
  TI r_ = (TI)((p_ * s1_) * s2_), nan_ = x_ != x_; \
  (TF)((r_ & ~nan_) | ((TI)x_ & nan_)); })
#endif
`)
	return sb.String()
}

// cNarrowPrelude declares the widening loads (only kernels that have
// them include it): tg_wd_c8(p) reads 8 int8 at p as int32 lanes (uc:
// uint8), tg_wd_h8(p) 8 float16 as float32. gcc 12 lowers
// __builtin_convertvector between element sizes to scalar code, so on x86
// they are the one-instruction sign/zero extensions and F16C conversions
// (the fallback is the portable vector form).
func cNarrowPrelude(width int) string {
	var sb strings.Builder
	sb.WriteString("#ifndef TG_VEC_NARROW\n#define TG_VEC_NARROW\n")
	for w := width; w >= 4; w /= 2 {
		fmt.Fprintf(&sb, "typedef signed char tg_c%d __attribute__((vector_size(%d)));\n", w, w)
		fmt.Fprintf(&sb, "typedef unsigned char tg_uc%d __attribute__((vector_size(%d)));\n", w, w)
		fmt.Fprintf(&sb, "typedef _Float16 tg_h%d __attribute__((vector_size(%d)));\n", w, 2*w)
	}
	sb.WriteString("#if defined(__AVX2__) && defined(__F16C__)\n#include <immintrin.h>\n")
	type x86 struct{ load, ext, half string }
	forms := map[int]x86{
		4:  {"_mm_cvtsi32_si128(({int v_; __builtin_memcpy(&v_, (p), 4); v_;}))", "_mm_cvtep%s8_epi32", "_mm_cvtph_ps(_mm_loadl_epi64((const __m128i *)(p)))"},
		8:  {"_mm_loadl_epi64((const __m128i *)(p))", "_mm256_cvtep%s8_epi32", "_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p)))"},
		16: {"_mm_loadu_si128((const __m128i *)(p))", "_mm512_cvtep%s8_epi32", "_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(p)))"},
	}
	for w := width; w >= 4; w /= 2 {
		f := forms[w]
		fmt.Fprintf(&sb, "#define tg_wd_c%d(p) ((tg_i%d)%s(%s))\n", w, w, fmt.Sprintf(f.ext, "i"), f.load)
		fmt.Fprintf(&sb, "#define tg_wd_uc%d(p) ((tg_i%d)%s(%s))\n", w, w, fmt.Sprintf(f.ext, "u"), f.load)
		fmt.Fprintf(&sb, "#define tg_wd_h%d(p) ((tg_f%d)%s)\n", w, w, f.half)
	}
	sb.WriteString("#else\n")
	for w := width; w >= 4; w /= 2 {
		fmt.Fprintf(&sb, "#define tg_wd_c%d(p) __builtin_convertvector(tg_load(tg_c%d, (p)), tg_i%d)\n", w, w, w)
		fmt.Fprintf(&sb, "#define tg_wd_uc%d(p) __builtin_convertvector(tg_load(tg_uc%d, (p)), tg_i%d)\n", w, w, w)
		fmt.Fprintf(&sb, "#define tg_wd_h%d(p) __builtin_convertvector(tg_load(tg_h%d, (p)), tg_f%d)\n", w, w, w)
	}
	sb.WriteString("#endif\n#endif\n")
	return sb.String()
}

// maxVecWidth bounds the dialect's vector width (16: AVX-512).
const maxVecWidth = 16

// vecWidths are the run widths tried, widest first: width, width/2, ... 4.
func vecWidths(width int) []int {
	var ws []int
	for w := width; w >= 4; w /= 2 {
		ws = append(ws, w)
	}
	return ws
}

// vtuple is w lane expressions (the rest nil): one vector value.
type vtuple struct {
	w int
	l [maxVecWidth]*ir.Expr
}

func (t vtuple) uniform() bool {
	for i := 1; i < t.w; i++ {
		if t.l[i] != t.l[0] {
			return false
		}
	}
	return true
}

// vrun is a run of reduce members accumulated in one vector.
type vrun struct {
	members []*ir.Expr
	src     vtuple // the members' accumulated values
	acc     string // the vector accumulator's name, once declared
}

type vlane struct {
	run  *vrun
	lane int
}

// vstore is a run of stores written as one vector store.
type vstore struct {
	stores []*ir.Expr
	val    vtuple
}

// cVec is the vectorization plan of one kernel and its rendering state.
type cVec struct {
	k      *ir.Kernel
	widths []int                // run widths, widest first
	runs   map[*ir.Expr][]*vrun // by group leader
	lane   map[*ir.Expr]vlane   // reduce member → its vector lane
	stores map[*ir.Expr]*vstore // each store of a vector store run → the run
	skip   map[*ir.Expr]bool    // scalar nodes whose every use is vectorized
	ok     map[vtuple]bool      // memo of match
	uses   map[vtuple]int       // parent tuples of each tuple (name it if > 1)

	narrow bool // widening loads matched (cNarrowPrelude)

	names map[vtuple]string // rendered vector values in scope
	added []vtuple          // names in order, for leaving a scope
	n     map[string]int    // names given, by prefix
}

func (v *cVec) fresh(prefix string) string {
	name := fmt.Sprintf("%s%d", prefix, v.n[prefix])
	v.n[prefix]++
	return name
}

func vecEligible(m *ir.Expr) bool {
	op := m.Arg.(*ir.ReduceArg).Op
	return m.DType == ir.Float32 && (op == ir.OpSum || op == ir.OpMaxReduce)
}

// planCVec finds the vector runs of k, or returns nil when there are none.
func planCVec(k *ir.Kernel, p *ir.Program, width int) *cVec {
	v := &cVec{k: k, widths: vecWidths(width), runs: map[*ir.Expr][]*vrun{}, lane: map[*ir.Expr]vlane{},
		stores: map[*ir.Expr]*vstore{}, skip: map[*ir.Expr]bool{}, ok: map[vtuple]bool{},
		uses: map[vtuple]int{}, names: map[vtuple]string{}, n: map[string]int{}}
	var leaders []*ir.Expr
	ir.Walk(k.Stores, func(e *ir.Expr) {
		if e.Op == ir.OpReduce && p.Leader[e] == e {
			leaders = append(leaders, e)
		}
	})
	for _, leader := range leaders {
		members := p.Members[leader]
		runs := pickRuns(members, v.widths, vecEligible, func(ms []*ir.Expr) bool {
			return v.match(srcTuple(ms, 0))
		})
		for _, ms := range runs {
			r := &vrun{members: ms, src: srcTuple(ms, 0)}
			v.runs[leader] = append(v.runs[leader], r)
			for i, m := range ms {
				v.lane[m] = vlane{r, i}
			}
		}
	}
	if len(v.lane) == 0 {
		return nil
	}
	stores := pickRuns(k.Stores, v.widths, func(s *ir.Expr) bool {
		return k.Bufs[s.Arg.(int)].DType == ir.Float32 && s.DType == ir.Float32
	}, func(ss []*ir.Expr) bool {
		for i, s := range ss {
			if s.Arg != ss[0].Arg || (i > 0 && !contiguous(ss[0].Src[0], s.Src[0], int64(i))) {
				return false
			}
		}
		t := srcTuple(ss, 1)
		return v.match(t) && v.hasAcc(t)
	})
	for _, ss := range stores {
		st := &vstore{stores: ss, val: srcTuple(ss, 1)}
		for _, s := range ss {
			v.stores[s] = st
		}
	}
	v.absorb()
	return v
}

func srcTuple(es []*ir.Expr, i int) vtuple {
	t := vtuple{w: len(es)}
	for l, e := range es {
		t.l[l] = e.Src[i]
	}
	return t
}

// pickRuns chooses disjoint runs of widths[0] (else the next width)
// eligible elements of xs, at any fixed stride, in order, that ok accepts.
func pickRuns(xs []*ir.Expr, widths []int, eligible func(*ir.Expr) bool, ok func([]*ir.Expr) bool) [][]*ir.Expr {
	taken := make([]bool, len(xs))
	var runs [][]*ir.Expr
	for i := range xs {
		if taken[i] || !eligible(xs[i]) {
			continue
		}
	widths:
		for _, w := range widths {
			for s := 1; i+(w-1)*s < len(xs); s++ {
				run := make([]*ir.Expr, 0, w)
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

// accOf says whether t is the lanes of one vector accumulator in order.
func (v *cVec) accOf(t vtuple) (*vrun, bool) {
	l0, ok := v.lane[t.l[0]]
	if !ok || len(l0.run.members) != t.w {
		return nil, false
	}
	for i := 0; i < t.w; i++ {
		if li, ok := v.lane[t.l[i]]; !ok || li.run != l0.run || li.lane != i {
			return nil, false
		}
	}
	return l0.run, true
}

func (v *cVec) hasAcc(t vtuple) bool {
	if _, ok := v.accOf(t); ok {
		return true
	}
	if t.uniform() || t.l[0].Op == ir.OpLoad {
		return false
	}
	for j := range t.l[0].Src {
		if v.hasAcc(srcTuple(t.l[:t.w], j)) {
			return true
		}
	}
	return false
}

var vecOps = map[ir.Op]bool{ir.OpAdd: true, ir.OpSub: true, ir.OpMul: true, ir.OpNeg: true,
	ir.OpMax: true, ir.OpWhere: true, ir.OpCmpLt: true, ir.OpExp2: true}

// intVecOps are the int32 lane ops (division and modulo by a uniform
// constant only: gcc turns them into shifts and masks).
var intVecOps = map[ir.Op]bool{ir.OpAdd: true, ir.OpSub: true, ir.OpMul: true, ir.OpAnd: true,
	ir.OpOr: true, ir.OpXor: true, ir.OpDiv: true, ir.OpMod: true, ir.OpWhere: true, ir.OpCmpLt: true, ir.OpCmpEq: true}

// narrowLoads are the element types a conversion reads as a narrow vector.
var narrowLoads = map[ir.DType]string{ir.Int8: "tg_c", ir.Uint8: "tg_uc", ir.Float16: "tg_h"}

// contiguousLoads says whether the lanes of t are unguarded loads of one
// buffer at consecutive indices.
func (v *cVec) contiguousLoads(t vtuple) bool {
	e0 := t.l[0]
	if e0.Op != ir.OpLoad || v.k.Bufs[e0.Arg.(int)].DType != e0.DType {
		return false
	}
	for i, e := range t.l[:t.w] {
		// Guarded loads stay scalar: a vector load would read the
		// lanes the guard excludes.
		if e.Op != ir.OpLoad || e.Arg != e0.Arg || len(e.Src) != 1 || (i > 0 && !contiguous(e0.Src[0], e.Src[0], int64(i))) {
			return false
		}
	}
	return true
}

// vecType says whether lanes of dt can be a vector value (float32 data,
// int32 data, bool masks).
func vecType(dt ir.DType) bool { return dt == ir.Float32 || dt == ir.Int32 || dt == ir.Bool }

// match says whether t is isomorphic (see the file comment).
func (v *cVec) match(t vtuple) bool {
	if ok, seen := v.ok[t]; seen {
		return ok
	}
	ok := v.match1(t)
	v.ok[t] = ok
	return ok
}

func (v *cVec) match1(t vtuple) bool {
	e0 := t.l[0]
	if t.uniform() {
		return vecType(e0.DType)
	}
	if _, ok := v.accOf(t); ok {
		return true
	}
	for _, e := range t.l[:t.w] {
		if e.Op != e0.Op || e.DType != e0.DType || len(e.Src) != len(e0.Src) {
			return false
		}
	}
	intLanes := e0.DType == ir.Int32 || e0.Op.IsCompare() && e0.Src[0].DType == ir.Int32
	switch {
	case e0.Op == ir.OpLoad:
		return (e0.DType == ir.Float32 || e0.DType == ir.Int32) && v.contiguousLoads(t)
	case e0.Op == ir.OpCast:
		if e0.DType != ir.Float32 && e0.DType != ir.Int32 {
			return false
		}
		src := srcTuple(t.l[:t.w], 0)
		if _, narrow := narrowLoads[src.l[0].DType]; narrow && !src.uniform() {
			ok := v.contiguousLoads(src) && (src.l[0].DType != ir.Float16 || e0.DType == ir.Float32)
			v.narrow = v.narrow || ok
			return ok
		}
		if src.l[0].DType != ir.Int32 || e0.DType != ir.Float32 {
			return false
		}
	case intLanes:
		if !intVecOps[e0.Op] {
			return false
		}
		if e0.Op == ir.OpDiv || e0.Op == ir.OpMod {
			if d := srcTuple(t.l[:t.w], 1); !d.uniform() || !d.l[0].IsConst() || d.l[0].ConstFloat() == 0 {
				return false
			}
		}
	case !vecOps[e0.Op]:
		return false
	case e0.Op == ir.OpCmpLt:
		if e0.Src[0].DType != ir.Float32 {
			return false
		}
	case e0.DType != ir.Float32:
		return false
	}
	for j := range e0.Src {
		s := srcTuple(t.l[:t.w], j)
		if s.uniform() && s.l[0].DType == ir.Bool && e0.Op != ir.OpWhere {
			return false
		}
		if !v.match(s) {
			return false
		}
	}
	return true
}

// absorb marks the scalar nodes that need not be rendered: lanes of vector
// values all of whose consumers are vectorized too.
func (v *cVec) absorb() {
	consumers := map[*ir.Expr][]*ir.Expr{}
	ir.Walk(v.k.Stores, func(e *ir.Expr) {
		seen := map[*ir.Expr]bool{}
		for _, s := range e.Src {
			if !seen[s] {
				seen[s] = true
				consumers[s] = append(consumers[s], e)
			}
		}
	})
	vecConsumer := map[*ir.Expr]bool{} // consumes only the vector form of its value
	lanes := map[*ir.Expr]bool{}
	scalar := map[*ir.Expr]bool{} // needed as a scalar (broadcast)
	visited := map[vtuple]bool{}
	var walk func(t vtuple)
	walk = func(t vtuple) {
		if visited[t] {
			return
		}
		visited[t] = true
		if t.uniform() {
			scalar[t.l[0]] = true
			return
		}
		if _, ok := v.accOf(t); ok {
			return
		}
		for _, e := range t.l[:t.w] {
			lanes[e] = true
		}
		if t.l[0].Op == ir.OpLoad {
			return
		}
		for j := range t.l[0].Src {
			s := srcTuple(t.l[:t.w], j)
			v.uses[s]++
			walk(s)
		}
	}
	for _, runs := range v.runs {
		for _, r := range runs {
			for _, m := range r.members {
				vecConsumer[m] = true
			}
			v.uses[r.src]++
			walk(r.src)
		}
	}
	for s, st := range v.stores {
		vecConsumer[s] = true
		if s == st.stores[0] {
			v.uses[st.val]++
			walk(st.val)
		}
	}
	for e := range lanes {
		if !scalar[e] {
			v.skip[e] = true
		}
	}
	for changed := true; changed; {
		changed = false
		for e := range v.skip {
			for _, c := range consumers[e] {
				if !v.skip[c] && !vecConsumer[c] {
					delete(v.skip, e)
					changed = true
					break
				}
			}
		}
	}
}

// vtype is the C vector type of a tuple: floats, or ints (int32 values
// and comparison masks).
func vtype(t vtuple) string {
	if t.l[0].DType != ir.Float32 {
		return fmt.Sprintf("tg_i%d", t.w)
	}
	return fmt.Sprintf("tg_f%d", t.w)
}

// scope returns a mark; leave(mark) forgets the vector names declared
// since, when their C block closes.
func (v *cVec) scope() int { return len(v.added) }

func (v *cVec) leave(mark int) {
	for _, t := range v.added[mark:] {
		delete(v.names, t)
	}
	v.added = v.added[:mark]
}

func (v *cVec) declare(r *renderer, t vtuple, prefix, val string) string {
	name := v.fresh(prefix)
	r.line("%s %s = %s;", vtype(t), name, val)
	v.names[t] = name
	v.added = append(v.added, t)
	return name
}

// vexpr renders a matched tuple as a vector expression, declaring the
// loads, broadcasts and shared values it needs first.
func (r *renderer) vexpr(t vtuple) string {
	v := r.vec
	if n, ok := v.names[t]; ok {
		return n
	}
	if run, ok := v.accOf(t); ok {
		return run.acc
	}
	e0 := t.l[0]
	if t.uniform() {
		x := r.expr(e0)
		if _, named := r.names[e0]; !named && !e0.IsConst() {
			x = v.declareScalar(r, e0, x)
		}
		if e0.DType == ir.Bool { // a where's scalar condition
			v.names[t] = x
			v.added = append(v.added, t)
			return x
		}
		return v.declare(r, t, "vbc", "{"+strings.TrimSuffix(strings.Repeat(x+",", t.w), ",")+"}")
	}
	if e0.Op == ir.OpLoad {
		return v.declare(r, t, "vval", fmt.Sprintf("tg_load(%s, &%s[%s])", vtype(t), BufName(r.k, e0.Arg.(int)), r.expr(e0.Src[0])))
	}
	if e0.Op == ir.OpCast {
		src := srcTuple(t.l[:t.w], 0)
		if n, narrow := narrowLoads[src.l[0].DType]; narrow && !src.uniform() {
			ld := src.l[0]
			return v.declare(r, t, "vval", fmt.Sprintf("tg_wd_%s%d(&%s[%s])", strings.TrimPrefix(n, "tg_"), t.w, BufName(r.k, ld.Arg.(int)), r.expr(ld.Src[0])))
		}
		s := fmt.Sprintf("__builtin_convertvector(%s, %s)", r.vexpr(src), vtype(t))
		if v.uses[t] > 1 {
			return v.declare(r, t, "valu", s)
		}
		return s
	}
	src := make([]string, len(e0.Src))
	for j := range e0.Src {
		src[j] = r.vexpr(srcTuple(t.l[:t.w], j))
	}
	var s string
	switch e0.Op {
	case ir.OpNeg:
		s = "(-" + src[0] + ")"
	case ir.OpExp2:
		s = fmt.Sprintf("tg_exp2v(tg_i%d, tg_f%d, %s)", t.w, t.w, src[0])
	case ir.OpMax:
		s = fmt.Sprintf("tg_sel(tg_i%d, tg_f%d, (%s>%s), %s, %s)", t.w, t.w, src[0], src[1], src[0], src[1])
	case ir.OpWhere:
		if srcTuple(t.l[:t.w], 0).uniform() {
			s = fmt.Sprintf("(%s?%s:%s)", src[0], src[1], src[2])
		} else {
			s = fmt.Sprintf("tg_sel(tg_i%d, %s, %s, %s, %s)", t.w, vtype(t), src[0], src[1], src[2])
		}
	default:
		s = "(" + src[0] + infixOps[e0.Op] + src[1] + ")"
	}
	if v.uses[t] > 1 {
		return v.declare(r, t, "valu", s)
	}
	return s
}

func (v *cVec) declareScalar(r *renderer, e *ir.Expr, val string) string {
	name := v.fresh("bc")
	r.line("%s %s = %s;", r.typ(e.DType), name, val)
	return name
}
