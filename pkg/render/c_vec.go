package render

import (
	"fmt"
	"strconv"
	"strings"

	"tgc/pkg/ir"
)

// SIMD for the CPU dialect: the runs of lanes the simd pass chose
// (ir.SIMD, see ir/simd.go) printed as GCC vector-extension code: each
// accumulator run as one vector accumulator (MAX: a lane-wise select, like
// the scalar (v>acc)?v:acc) whose lanes' scalar names become vaccN[l], so
// every later use renders unchanged; its value as vector loads, broadcasts
// and vector ops; each store run as one vector store. Scalar nodes whose
// every use is vectorized are not rendered; everything else is scalar code.

// The helpers are macros, not functions: a function passing a vector
// wider than the target's registers by value draws gcc's ABI warnings.
// The width is the plan's (ir.SIMD.Width: the target's, which the CPU
// device chooses from the host's flags): gcc lowers a 16-wide vector on an AVX2 target through
// memory (0.3x the scalar form on a matmul), while on an AVX-512 host
// 8-wide vectors halve the width gcc's own vectorizer would use.
// cStreamDef writes one 64-byte line around the caches (ir.Stream, the
// stream_stores pass): AVX-512's vmovntps, the address aligned as the
// plan proves; tg_sfence orders those stores before the kernel returns.
// Without AVX-512 both are the plain forms.
const cStreamDef = `#if defined(__AVX512F__)
#define tg_stream(p, v) ({ tg_f16 s_ = (v); __asm__ volatile("vmovntps %1, %0" : "=m"(*(tg_f16 *)(p)) : "v"(s_)); })
#define tg_sfence() __asm__ volatile("sfence" ::: "memory")
#else
#define tg_stream(p, v) tg_store(p, v)
#define tg_sfence() ((void)0)
#endif`

// cStreamLineDef writes a line of 16 floats (an aligned array) to p, an
// aligned line of the output, around the caches (ir.Stream.Cols); the
// kernel ends with tg_sfence. Without AVX-512 a plain copy.
const cStreamLineDef = `typedef float tg_line16 __attribute__((vector_size(64)));
#if defined(__AVX512F__)
#define tg_stream_line(p, l) ({ tg_line16 sl_; __builtin_memcpy(&sl_, (l), 64); __asm__ volatile("vmovntps %1, %0" : "=m"(*(tg_line16 *)(p)) : "v"(sl_)); })
#define tg_sfence() __asm__ volatile("sfence" ::: "memory")
#else
#define tg_stream_line(p, l) __builtin_memcpy((p), (l), 64)
#define tg_sfence() ((void)0)
#endif`

func cVecPrelude(width int) string {
	var sb strings.Builder
	sb.WriteString("#ifndef TG_VEC\n#define TG_VEC\n")
	for w := width; w >= 4; w /= 2 {
		fmt.Fprintf(&sb, "typedef float tg_f%d __attribute__((vector_size(%d)));\n", w, 4*w)
		fmt.Fprintf(&sb, "typedef int tg_i%d __attribute__((vector_size(%d)));\n", w, 4*w)
	}
	lanes := func(from, n int) string {
		s := make([]string, n)
		for i := range s {
			s[i] = strconv.Itoa(from + 2*i)
		}
		return strings.Join(s, ",")
	}
	for w := width; w >= 4; w /= 2 {
		fmt.Fprintf(&sb, "#define tg_pairs%d(a, b) (__builtin_shufflevector(a, b, %s) + __builtin_shufflevector(a, b, %s))\n",
			w, lanes(0, w), lanes(1, w))
		if w >= 8 {
			fmt.Fprintf(&sb, "#define tg_psum%d(v) ({ tg_f%d p%d_ = (v); tg_psum%d(__builtin_shufflevector(p%d_, p%d_, %s) + "+
				"__builtin_shufflevector(p%d_, p%d_, %s)); })\n", w, w, w, w/2, w, w, lanes(0, w/2), w, w, lanes(1, w/2))
		}
	}
	sb.WriteString(`#define tg_load(T, p) ({ T v_; __builtin_memcpy(&v_, (p), sizeof v_); v_; })
#define tg_store(p, v) ({ __typeof__(v) v_ = (v); __builtin_memcpy((p), &v_, sizeof v_); })
#define tg_sel(TI, TF, m, a, b) ((TF)(((m) & (TI)(a)) | (~(m) & (TI)(b))))
/* Horizontal sums (ir.HSum), the pairwise tree's own additions:
   tg_pairsW(a, b) is the W sums of neighbours of a's lanes then b's (their
   even lanes plus their odd lanes: two permutes and an add), tg_psumW(v)
   v's lanes summed pairwise, down to (v[0]+v[1]) + (v[2]+v[3]). */
#define tg_psum4(v) ({ tg_f4 p4_ = (v); (p4_[0] + p4_[1]) + (p4_[2] + p4_[3]); })
/* tg_exp2f (c_math.go) lane by lane: the same operations on vectors, so
   the same results. The clamp is two float selects (vector selects are
   not branches), which keep NaN: it then runs through the float
   arithmetic and comes back as NaN, so the scalar's NaN mask is not
   needed. On x86 the selects are MAXPS and MINPS, which return their
   second operand when either is NaN: max(lo, x) is exactly
   x < lo ? lo : x, one instruction where the select is a compare and a
   blend. The rounding to an integer is ROUNDPS / VRNDSCALEPS to nearest
   even where the target has it, which the scalar's two adds also do in
   the clamped range (only -0 for +0 differs, and 2^-0 = 2^0): one
   instruction for two dependent adds. p*2^n is AVX-512's vscalefps where
   the target has it (one instruction for nine, rounded once as the
   scalar's two exact factors are), else the scalar's two factors. With
   vscalefps the clamp is one VFIXUPIMMPS: it maps -inf and +inf to -MAX
   and +MAX and keeps every other input (NaN too). A finite x outside
   [-151, 129] then rounds to an integer n = x, f = 0, p = 1, and p*2^n
   is 0 or inf as for the clamped x (an infinite x would have made
   f = inf - inf a NaN); the same bits for every one of the 2^32 inputs,
   one instruction for two (exp loops 7% faster on the Zen 5 guest). */
#define tg_exp2v(TI, TF, x) ({ \
  TF x_ = (x), lo_ = (TF){} - 151.0f, hi_ = (TF){} + 129.0f; \
  TF c_ = tg_clamp_of(TF)(TI, TF, x_, lo_, hi_); \
  TF nf_ = tg_rint_of(TF)(TF, c_); \
  TF f_ = c_ - nf_; \
  TF p_ = 1.0f + f_*(0.693147182f + f_*(0.240226507f + f_*(0.0555035695f + \
          f_*(0.00961808302f + f_*(0.00133908633f + f_*0.000154531634f))))); \
  tg_scale_of(TF)(TI, TF, p_, nf_); })
#define tg_clamp_of(TF) tg_clamp_of_(TF)
#define tg_clamp_of_(TF) tg_clamp_##TF
#define tg_clamp2(TI, TF, x, lo, hi) ({ \
  TF cl_ = tg_sel(TI, TF, (x) < (lo), (lo), (x)); \
  tg_sel(TI, TF, cl_ > (hi), (hi), cl_); })
#define tg_rint_of(TF) tg_rint_of_(TF)
#define tg_rint_of_(TF) tg_rint_##TF
#define tg_rint2(TF, c) (((c) + 12582912.0f) - 12582912.0f)
/* the nibbles by input class: NaN and the finite kept (1, 2: QNaN of
   it), -inf to -MAX (15), +inf to +MAX (14) */
#define tg_fix_inf 0x11EF1121
#ifdef __AVX512F__
#define tg_clamp_tg_f16(TI, TF, x, lo, hi) ({ TF fx_ = (x); \
  __builtin_ia32_fixupimmps512_mask(fx_, fx_, (TI){} + tg_fix_inf, 0, (unsigned short)-1, 4); })
#define tg_rint_tg_f16(TF, c) __builtin_ia32_rndscaleps_mask(c, 8, c, (unsigned short)-1, 4)
#else
#define tg_clamp_tg_f16 tg_clamp2
#define tg_rint_tg_f16 tg_rint2
#endif
#ifdef __AVX512VL__
#define tg_clamp_tg_f8(TI, TF, x, lo, hi) ({ TF fx_ = (x); \
  __builtin_ia32_fixupimmps256_mask(fx_, fx_, (TI){} + tg_fix_inf, 0, (unsigned char)-1); })
#define tg_rint_tg_f8(TF, c) __builtin_ia32_roundps256(c, 8)
#elif defined(__AVX__)
#define tg_clamp_tg_f8(TI, TF, x, lo, hi) __builtin_ia32_minps256(hi, __builtin_ia32_maxps256(lo, x))
#define tg_rint_tg_f8(TF, c) __builtin_ia32_roundps256(c, 8)
#else
#define tg_clamp_tg_f8 tg_clamp2
#define tg_rint_tg_f8 tg_rint2
#endif
#ifdef __AVX512VL__
#define tg_clamp_tg_f4(TI, TF, x, lo, hi) ({ TF fx_ = (x); \
  __builtin_ia32_fixupimmps128_mask(fx_, fx_, (TI){} + tg_fix_inf, 0, (unsigned char)-1); })
#elif defined(__SSE__)
#define tg_clamp_tg_f4(TI, TF, x, lo, hi) __builtin_ia32_minps(hi, __builtin_ia32_maxps(lo, x))
#else
#define tg_clamp_tg_f4 tg_clamp2
#endif
#ifdef __SSE4_1__
#define tg_rint_tg_f4(TF, c) __builtin_ia32_roundps(c, 8)
#else
#define tg_rint_tg_f4 tg_rint2
#endif
/* tg_max(TI, TF, a, b): a > b ? a : b lane by lane, the scalar MAX's
   (v>acc)?v:acc. MAXPS is exactly that (it returns its second operand
   when either is NaN and for +0 against -0): one instruction, latency 2,
   where the select is a compare into a mask and a blend (latency 6): a
   row's max pass, one dependent max per vector, ran 5x slower so. */
#define tg_max(TI, TF, a, b) tg_max_of(TF)(TI, TF, a, b)
#define tg_max_of(TF) tg_max_of_(TF)
#define tg_max_of_(TF) tg_max_##TF
#define tg_max2(TI, TF, a, b) ({ TF ma_ = (a), mb_ = (b); tg_sel(TI, TF, ma_ > mb_, ma_, mb_); })
#ifdef __AVX512F__
#define tg_max_tg_f16(TI, TF, a, b) ({ TF mb_ = (b); __builtin_ia32_maxps512_mask(a, mb_, mb_, (unsigned short)-1, 4); })
#else
#define tg_max_tg_f16 tg_max2
#endif
#ifdef __AVX__
#define tg_max_tg_f8(TI, TF, a, b) __builtin_ia32_maxps256(a, b)
#else
#define tg_max_tg_f8 tg_max2
#endif
#ifdef __SSE__
#define tg_max_tg_f4(TI, TF, a, b) __builtin_ia32_maxps(a, b)
#else
#define tg_max_tg_f4 tg_max2
#endif
#define tg_scale_of(TF) tg_scale_of_(TF)
#define tg_scale_of_(TF) tg_scale_##TF
#define tg_scale2(TI, TF, p, nf) ({ \
  TI n_ = __builtin_convertvector(nf, TI), n1_ = n_ >> 1; \
  TF s1_ = (TF)((n1_ + 127) << 23), s2_ = (TF)((n_ - n1_ + 127) << 23); \
  (p * s1_) * s2_; })
#ifdef __AVX512F__
#define tg_scale_tg_f16(TI, TF, p, nf) __builtin_ia32_scalefps512_mask(p, nf, p, (unsigned short)-1, 4)
#else
#define tg_scale_tg_f16 tg_scale2
#endif
#ifdef __AVX512VL__
#define tg_scale_tg_f8(TI, TF, p, nf) __builtin_ia32_scalefps256_mask(p, nf, p, (unsigned char)-1)
#define tg_scale_tg_f4(TI, TF, p, nf) __builtin_ia32_scalefps128_mask(p, nf, p, (unsigned char)-1)
#else
#define tg_scale_tg_f8 tg_scale2
#define tg_scale_tg_f4 tg_scale2
#endif
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
	type x86 struct{ load, ext, half, bcvt, bset string }
	forms := map[int]x86{
		4:  {"_mm_cvtsi32_si128(({int v_; __builtin_memcpy(&v_, (p), 4); v_;}))", "_mm_cvtep%s8_epi32", "_mm_cvtph_ps(_mm_loadl_epi64((const __m128i *)(p)))", "_mm_cvtph_ps", "_mm_set1_epi16"},
		8:  {"_mm_loadl_epi64((const __m128i *)(p))", "_mm256_cvtep%s8_epi32", "_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p)))", "_mm256_cvtph_ps", "_mm_set1_epi16"},
		16: {"_mm_loadu_si128((const __m128i *)(p))", "_mm512_cvtep%s8_epi32", "_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(p)))", "_mm512_cvtph_ps", "_mm256_set1_epi16"},
	}
	for w := width; w >= 4; w /= 2 {
		f := forms[w]
		fmt.Fprintf(&sb, "#define tg_wd_c%d(p) ((tg_i%d)%s(%s))\n", w, w, fmt.Sprintf(f.ext, "i"), f.load)
		fmt.Fprintf(&sb, "#define tg_wd_uc%d(p) ((tg_i%d)%s(%s))\n", w, w, fmt.Sprintf(f.ext, "u"), f.load)
		fmt.Fprintf(&sb, "#define tg_wd_h%d(p) ((tg_f%d)%s)\n", w, w, f.half)
		fmt.Fprintf(&sb, "#define tg_bh%d(p) ((tg_f%d)%s(%s(({short s_; __builtin_memcpy(&s_, (p), 2); s_;}))))\n", w, w, f.bcvt, f.bset)
	}
	sb.WriteString("#else\n")
	for w := width; w >= 4; w /= 2 {
		fmt.Fprintf(&sb, "#define tg_wd_c%d(p) __builtin_convertvector(tg_load(tg_c%d, (p)), tg_i%d)\n", w, w, w)
		fmt.Fprintf(&sb, "#define tg_wd_uc%d(p) __builtin_convertvector(tg_load(tg_uc%d, (p)), tg_i%d)\n", w, w, w)
		fmt.Fprintf(&sb, "#define tg_wd_h%d(p) __builtin_convertvector(tg_load(tg_h%d, (p)), tg_f%d)\n", w, w, w)
		fmt.Fprintf(&sb, "#define tg_bh%d(p) ({ float f_ = (float)*(p); (tg_f%d){%s}; })\n", w, w, strings.TrimSuffix(strings.Repeat("f_,", w), ","))
	}
	sb.WriteString("#endif\n#endif\n")
	return sb.String()
}

// halfBroadcast says whether a uniform tuple is a float16 load converted
// to float32 (a quantized block's scale, the same in every lane of a
// row's vectors). The renderer prints it as tg_bh, the half broadcast
// from memory and converted as a vector (vpbroadcastw, vcvtph2ps: two
// instructions on x86 instead of an insert, a scalar conversion and a
// broadcast; the value is the same, a float16 converts exactly). On the
// Zen 5 host, a C harness of the Q8_0 matrix-vector kernel with the
// matrix in L2, one core: 37 -> 39.8 GB/s, and 39.6 -> 41.0 with the
// block axis unrolled by 2 (ir's blockChains).
func halfBroadcast(t ir.Lanes) bool {
	e := t.L[0]
	return e.Op == ir.OpCast && e.DType == ir.Float32 && len(e.Src) == 1 &&
		e.Src[0].Op == ir.OpLoad && e.Src[0].DType == ir.Float16 && len(e.Src[0].Src) == 1
}

// narrowMacro is the widening load macro's prefix for an element type.
var narrowMacro = map[ir.DType]string{ir.Int8: "tg_wd_c", ir.Uint8: "tg_wd_uc", ir.Float16: "tg_wd_h"}

// vlane is a reduce member's place in the plan: its run (an index into
// the plan's Accs) and lane.
type vlane struct {
	run  int
	lane int
}

// cVec is the rendering state of a kernel's SIMD plan.
type cVec struct {
	k    *ir.Kernel
	plan *ir.SIMD
	acc  []string          // the vector accumulator of each run, once declared
	skip map[*ir.Expr]bool // scalar nodes whose every use is vectorized
	uses map[ir.Lanes]int  // parent tuples of each tuple (name it if > 1)
	// narrow: a widening load is printed (the kernel includes cNarrowPrelude)
	narrow bool
	hsum   map[*ir.Expr][]ir.Lanes   // roots of horizontal sums (ir.HSum)
	groups map[*ir.Expr][][]*ir.Expr // sums rendered together by reduce leader (hsumGroups), once computed

	free  map[*ir.Expr][]*ir.Axis // the plan's Packed cache
	names map[ir.Lanes]string     // rendered vector values in scope
	added []ir.Lanes              // names in order, for leaving a scope
	n     map[string]int          // names given, by prefix
}

func (v *cVec) fresh(prefix string) string {
	name := fmt.Sprintf("%s%d", prefix, v.n[prefix])
	v.n[prefix]++
	return name
}

// newCVec prepares the printing of k's SIMD plan (nil: none).
func newCVec(k *ir.Kernel) *cVec {
	if k.SIMD == nil {
		return nil
	}
	v := &cVec{k: k, plan: k.SIMD, acc: make([]string, len(k.SIMD.Accs)), skip: map[*ir.Expr]bool{},
		uses: map[ir.Lanes]int{}, free: map[*ir.Expr][]*ir.Axis{}, names: map[ir.Lanes]string{}, n: map[string]int{}, hsum: map[*ir.Expr][]ir.Lanes{}}
	for _, h := range k.SIMD.HSums {
		v.hsum[h.Root] = h.Vecs
	}
	v.absorb()
	return v
}

// lane is a reduce member's place in the plan.
func (v *cVec) lane(m *ir.Expr) (vlane, bool) {
	if m.Op != ir.OpReduce {
		return vlane{}, false
	}
	run, lane, ok := v.plan.Lane(m)
	return vlane{run, lane}, ok
}

// src is the accumulated values of an accumulator run.
func (v *cVec) src(run int) ir.Lanes { return ir.LanesOf(v.plan.Accs[run], 0) }

// storeRun is the run of a store of a vector store (nil: a scalar store).
func (v *cVec) storeRun(s *ir.Expr) []*ir.Expr {
	if run, _, ok := v.plan.Lane(s); ok && s.Op == ir.OpStore {
		return v.plan.Stores[run]
	}
	return nil
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
	visited := map[ir.Lanes]bool{}
	var walk func(t ir.Lanes)
	walk = func(t ir.Lanes) {
		if visited[t] {
			return
		}
		visited[t] = true
		if t.Uniform() {
			if halfBroadcast(t) {
				// printed as a conversion of the half broadcast from
				// memory (tg_bh): its scalar load and cast only where
				// another use needs them
				lanes[t.L[0]], lanes[t.L[0].Src[0]] = true, true
				v.narrow = true
				return
			}
			scalar[t.L[0]] = true
			return
		}
		if _, ok := v.plan.AccOf(t); ok {
			return
		}
		if v.plan.Packed(t, v.free) {
			for _, e := range t.L[:t.W] {
				scalar[e] = true
			}
			return
		}
		for _, e := range t.L[:t.W] {
			lanes[e] = true
		}
		if t.L[0].Op == ir.OpLoad {
			return
		}
		if t.L[0].Op == ir.OpCast {
			if _, _, ok := ir.NarrowLoad(t.Src(0)); ok {
				v.narrow = true
			}
		}
		for j := range t.L[0].Src {
			s := t.Src(j)
			v.uses[s]++
			walk(s)
		}
	}
	for _, ms := range v.plan.Accs {
		for _, m := range ms {
			vecConsumer[m] = true
		}
		src := ir.LanesOf(ms, 0)
		v.uses[src]++
		walk(src)
	}
	for _, ss := range v.plan.Stores {
		for _, s := range ss {
			vecConsumer[s] = true
		}
		val := ir.LanesOf(ss, 1)
		v.uses[val]++
		walk(val)
	}
	for _, h := range v.plan.HSums {
		// The root adds the vector's halves; the tree's scalar adds
		// between it and the lanes are not rendered (unless used
		// elsewhere).
		vecConsumer[h.Root] = true
		for n := 2; n < len(h.Vecs)*h.Vecs[0].W; n *= 2 {
			inner, _ := ir.PairwiseLeaves(h.Root, n)
			for _, e := range inner {
				lanes[e] = true
			}
		}
		for _, t := range h.Vecs {
			v.uses[t]++
			walk(t)
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
func vtype(t ir.Lanes) string {
	if t.L[0].DType != ir.Float32 {
		return fmt.Sprintf("tg_i%d", t.W)
	}
	return fmt.Sprintf("tg_f%d", t.W)
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

func (v *cVec) declare(r *renderer, t ir.Lanes, prefix, val string) string {
	name := v.fresh(prefix)
	r.line("%s %s = %s;", vtype(t), name, val)
	v.names[t] = name
	v.added = append(v.added, t)
	return name
}

// widerBroadcast names a wider broadcast of uniform tuple t's value
// already declared, whose low lanes are t's broadcast: a block whose last
// vector is a half one (56 columns as 3x16 + 8) broadcasts each weight at
// both widths, and gcc then loads the scalar once and broadcasts it twice
// from a register (on Intel a shuffle uop on the port of the second
// 512-bit FMA unit); the low half of the wide one leaves the scalar one
// use, which gcc folds into a broadcast from memory. conv2d_resnet's
// kernel in a C harness on the Xeon guest: 31.1-37.3 -> 26.2-29.2 ms.
func (v *cVec) widerBroadcast(t ir.Lanes) (string, bool) {
	for w := 2 * t.W; w <= ir.MaxVecWidth; w *= 2 {
		u := ir.Lanes{W: w}
		for i := range w {
			u.L[i] = t.L[0]
		}
		if n, ok := v.names[u]; ok {
			return n, true
		}
	}
	return "", false
}

// vexpr renders a tuple of the plan as a vector expression, declaring the
// loads, broadcasts and shared values it needs first.
func (r *renderer) vexpr(t ir.Lanes) string {
	v := r.vec
	if n, ok := v.names[t]; ok {
		return n
	}
	if run, ok := v.plan.AccOf(t); ok {
		return v.acc[run]
	}
	e0 := t.L[0]
	w := t.W
	if c0, ok := r.proCol(e0); ok && !t.Uniform() {
		// occurrences of the prologue's value (ir.Prologue): lanes of the
		// scratch row, contiguous ones one vector load
		lanes := make([]string, w)
		contiguous := true
		for i, e := range t.L[:w] {
			c, ok := r.proCol(e)
			if !ok {
				contiguous = false
				break
			}
			lanes[i] = fmt.Sprintf("tg_pro[%s]", r.expr(c))
			contiguous = contiguous && ir.Contiguous(c0, c, int64(i))
		}
		if contiguous {
			return v.declare(r, t, "vpro", fmt.Sprintf("tg_load(%s, &tg_pro[%s])", vtype(t), r.expr(c0)))
		}
		if lanes[w-1] != "" {
			return v.declare(r, t, "vpro", fmt.Sprintf("(%s){%s}", vtype(t), strings.Join(lanes, ",")))
		}
	}
	if _, named := r.names[e0]; t.Uniform() && halfBroadcast(t) && !named {
		ld := e0.Src[0]
		buf, idx := BufName(r.k, ld.Arg.(int)), r.expr(ld.Src[0])
		if row, off, isRow := r.rowOf(ld); isRow {
			buf, idx = row, off
		}
		name := v.declare(r, t, "vbc", fmt.Sprintf("tg_bh%d(&%s[%s])", w, buf, idx))
		r.prefetch(ld)
		return name
	}
	if t.Uniform() && e0.DType != ir.Bool {
		if wide, ok := v.widerBroadcast(t); ok {
			return v.declare(r, t, "vbc", fmt.Sprintf("({ %s l_; __builtin_memcpy(&l_, &%s, sizeof l_); l_; })", vtype(t), wide))
		}
	}
	if t.Uniform() {
		x := r.expr(e0)
		if _, named := r.names[e0]; !named && !e0.IsConst() {
			x = v.declareScalar(r, e0, x)
		}
		if e0.DType == ir.Bool { // a where's scalar condition
			v.names[t] = x
			v.added = append(v.added, t)
			return x
		}
		return v.declare(r, t, "vbc", "{"+strings.TrimSuffix(strings.Repeat(x+",", w), ",")+"}")
	}
	if ir.IndexLanes(t) { // lane 0's index plus each lane's number
		steps := make([]string, w)
		for i := range steps {
			steps[i] = strconv.Itoa(i)
		}
		return v.declare(r, t, "vidx", fmt.Sprintf("((%s){%s} + (int)(%s))", vtype(t), strings.Join(steps, ","), r.expr(e0.Src[0])))
	}
	if ir.ConstLanes(t) { // a vector literal
		lanes := make([]string, w)
		for i, e := range t.L[:w] {
			lanes[i] = r.expr(e)
		}
		return fmt.Sprintf("((%s){%s})", vtype(t), strings.Join(lanes, ","))
	}
	if v.plan.Packed(t, v.free) { // scalars computed before the loops
		lanes := make([]string, w)
		for i, e := range t.L[:w] {
			lanes[i] = r.expr(e)
		}
		return v.declare(r, t, "vpk", fmt.Sprintf("(%s){%s}", vtype(t), strings.Join(lanes, ",")))
	}
	if e0.Op == ir.OpLoad {
		buf, idx := BufName(r.k, e0.Arg.(int)), r.expr(e0.Src[0])
		row, off, isRow := r.rowOf(e0)
		if isRow { // its row pointer (ir.Rows): no guard
			buf, idx = row, off
		}
		offs, ok := ir.WindowOffsets(t)
		contiguous := ok
		for i, o := range offs {
			contiguous = contiguous && o == int64(i)
		}
		if ok && !contiguous {
			// A window's elements in the lanes' order (x[i/2]): gcc makes
			// one load and a permute of it.
			lanes := make([]string, w)
			for i, o := range offs {
				lanes[i] = fmt.Sprintf("%s[(%s)+%d]", buf, idx, o)
			}
			return v.declare(r, t, "vval", fmt.Sprintf("(%s){%s}", vtype(t), strings.Join(lanes, ",")))
		}
		ld := fmt.Sprintf("tg_load(%s, &%s[%s])", vtype(t), buf, idx)
		if len(e0.Src) > 1 && !isRow && !r.guardHeld(e0.Src[1]) { // one guard for all lanes (the simd pass checks)
			ld = fmt.Sprintf("(%s)?%s:(%s){0}", r.expr(e0.Src[1]), ld, vtype(t))
		}
		name := v.declare(r, t, "vval", ld)
		r.prefetch(e0)
		return name
	}
	if e0.Op == ir.OpCast {
		if ld, elem, ok := ir.NarrowLoad(t.Src(0)); ok {
			l0 := ld.L[0]
			x := fmt.Sprintf("%s%d(&%s[%s])", narrowMacro[elem], w, BufName(r.k, l0.Arg.(int)), r.expr(l0.Src[0]))
			if elem != ir.Float16 && e0.DType == ir.Float32 {
				x = fmt.Sprintf("__builtin_convertvector(%s, %s)", x, vtype(t)) // bytes widened to int32, then converted
			}
			name := v.declare(r, t, "vval", x)
			r.prefetch(l0)
			return name
		}
		var s string
		if terms, ok := nibbleSum(t.Src(0)); ok && w == 16 && e0.DType == ir.Float32 {
			// int32 lanes that are a function of other lanes' low 4 bits
			// (a sum of such) to floats: a permute of the function's 16
			// values each (AVX-512's vpermps reads an index's low 4
			// bits), which also does the masks, shifts and offsets of
			// Q4_K's, Q4_0's and Q6_K's weights
			r.need("tg_perm16", cPerm16Def)
			parts := make([]string, len(terms))
			for i, tm := range terms {
				parts[i] = fmt.Sprintf("tg_perm16((%s), %s)", tm.literal(), r.nibbleIndex(tm.src))
			}
			s = "(" + strings.Join(parts, "+") + ")"
		} else if ok && w == 8 && e0.DType == ir.Float32 && len(terms) == 1 && !affine(terms[0].table) {
			// a non-linear table (IQ4's grid) at 8 lanes: two halves of
			// 8 and a select by the index's bit 3, where converting the
			// selects' integers cost a compare and a blend per entry
			r.need("tg_perm8x2", cPerm8x2Def)
			tab := terms[0].table
			s = fmt.Sprintf("tg_perm8x2((%s), (%s), %s)", floatLiteral(tab[:8]), floatLiteral(tab[8:]), r.nibbleIndex(terms[0].src))
		} else {
			s = fmt.Sprintf("__builtin_convertvector(%s, %s)", r.vexpr(t.Src(0)), vtype(t))
		}
		if v.uses[t] > 1 {
			return v.declare(r, t, "valu", s)
		}
		return s
	}
	if s, ok := r.offsetPerm(t); ok {
		if v.uses[t] > 1 {
			return v.declare(r, t, "valu", s)
		}
		return s
	}
	if s, ok := r.scaledPerm(t); ok {
		if v.uses[t] > 1 {
			return v.declare(r, t, "valu", s)
		}
		return s
	}
	src := make([]string, len(e0.Src))
	for j := range e0.Src {
		src[j] = r.vexpr(t.Src(j))
	}
	info := e0.Op.Info()
	tmpl := info.SIMD
	switch {
	case e0.Op == ir.OpWhere && t.Src(0).Uniform():
		tmpl = info.C // a scalar condition selects whole vectors
	case e0.Op == ir.OpShr:
		tmpl = "($0>>$1)" // by a constant below the width (the simd pass checks)
	case info.SIMD == "" && info.Ints != "":
		tmpl = info.Ints // int32 lanes: % as on ints
	case info.SIMD == "":
		tmpl = info.C // int32 lanes: & | ^ == /
	}
	if vtype(t) != fmt.Sprintf("tg_f%d", w) {
		tmpl = strings.ReplaceAll(tmpl, "tg_f$w", "tg_i$w") // a select of int lanes
	}
	s := expand(tmpl, src, map[byte]string{'w': strconv.Itoa(w)})
	if v.uses[t] > 1 {
		return v.declare(r, t, "valu", s)
	}
	return s
}

// scaledPerm renders a float product of one permuted nibble table (a
// tg_perm16 conversion of one term) and a broadcast scalar as the
// permute of the scaled table: table[v]*d is (table*d)[v], the same
// float multiply, so the same bits, and the scaled table is one multiply
// for all the lanes the scalar is broadcast to (Q4_0's two halves of a
// block share d) where the product cost one per vector of weights.
func (r *renderer) scaledPerm(t ir.Lanes) (string, bool) {
	table, index, ok := r.scaledTable(t)
	if !ok {
		return "", false
	}
	return fmt.Sprintf("tg_perm16(%s, %s)", table, index), true
}

// offsetPerm renders a scaledPerm product plus or minus a broadcast
// scalar (Q2_K's d·sc·q − dmin·m, the minimum subtracted from every
// weight of its sub-block of 16, one vector) as the permute of the
// scaled and offset table: one multiply-add for the 16 entries where the
// product and the subtraction cost a multiply and a subtraction per
// vector of weights. The same float operations on the same values; the C
// compiler may contract the table's multiply and add as it may elsewhere.
func (r *renderer) offsetPerm(t ir.Lanes) (string, bool) {
	e0 := t.L[0]
	if t.W != 16 || e0.Op != ir.OpSub && e0.Op != ir.OpAdd || e0.DType != ir.Float32 {
		return "", false
	}
	for j := range 2 {
		p, m := t.Src(j), t.Src(1-j)
		if !m.Uniform() || m.L[0].DType != ir.Float32 || p.Uniform() || j == 1 && e0.Op == ir.OpSub {
			continue // m - p would need the table negated
		}
		if _, ok := r.vec.names[p]; ok || r.vec.uses[p] > 1 {
			continue // the product is a value of its own
		}
		table, index, ok := r.scaledTable(p)
		if !ok {
			continue
		}
		op := map[ir.Op]string{ir.OpSub: "-", ir.OpAdd: "+"}[e0.Op]
		return fmt.Sprintf("tg_perm16((%s%s%s), %s)", table, op, r.vexpr(m), index), true
	}
	return "", false
}

// scaledTable is scaledPerm's scaled table and the permute's index.
func (r *renderer) scaledTable(t ir.Lanes) (table, index string, ok bool) {
	e0 := t.L[0]
	if t.W != 16 || e0.Op != ir.OpMul || e0.DType != ir.Float32 {
		return "", "", false
	}
	for j := range 2 {
		c, d := t.Src(j), t.Src(1-j)
		if c.L[0].Op != ir.OpCast || !d.Uniform() || d.L[0].DType != ir.Float32 || c.Uniform() {
			continue
		}
		if _, ok := r.vec.names[c]; ok {
			continue // the conversion is a value of its own already
		}
		terms, ok := nibbleSum(c.Src(0))
		if !ok || len(terms) != 1 {
			continue
		}
		r.need("tg_perm16", cPerm16Def)
		table = fmt.Sprintf("((%s)*%s)", terms[0].literal(), r.vexpr(d))
		if j == 1 { // d*table: the product's operands in the IR's order
			table = fmt.Sprintf("(%s*(%s))", r.vexpr(d), terms[0].literal())
		}
		return table, r.nibbleIndex(terms[0].src), true
	}
	return "", "", false
}

// literal is the term's 16 values as a float vector literal.
func (tm nibbleTerm) literal() string { return floatLiteral(tm.table[:]) }

// floatLiteral is the values as a float vector literal of their count.
func floatLiteral(vs []int64) string {
	vals := make([]string, len(vs))
	for i, v := range vs {
		vals[i] = strconv.FormatInt(v, 10)
	}
	return fmt.Sprintf("(tg_f%d){%s}", len(vs), strings.Join(vals, ","))
}

// cPerm16Def is tg_perm16(table, v): table's lanes at int32 lanes v's low
// 4 bits, table[v & 15], as one vpermps with AVX-512 (gcc's and clang's
// builtins differ), a loop without (a macro: its vector types are the
// prelude's, defined by the time it is used).
const cPerm16Def = `#if defined(__AVX512F__) && defined(__clang__)
#define tg_perm16(table, v) ((tg_f16)__builtin_ia32_permvarsf512((table), (tg_i16)(v)))
#elif defined(__AVX512F__)
#define tg_perm16(table, v) ((tg_f16)__builtin_ia32_permvarsf512_mask((table), (tg_i16)(v), (tg_f16){0}, (unsigned short)-1))
#else
#define tg_perm16(table, v) ({ tg_f16 t_ = (table), r_; tg_i16 v_ = (tg_i16)(v) & 15; for (int l_ = 0; l_ < 16; l_++) r_[l_] = t_[v_[l_]]; r_; })
#endif`

// cPerm8x2Def is tg_perm8x2(lo, hi, v): 8 float lanes, lo[v & 7] where v's
// bit 3 is clear and hi[v & 7] where it is set: gcc's two-vector shuffle
// (vpermt2ps with AVX-512, two vpermps and a blend with AVX2), a loop
// elsewhere.
const cPerm8x2Def = `#if defined(__GNUC__) && !defined(__clang__)
#define tg_perm8x2(lo, hi, v) __builtin_shuffle((lo), (hi), (tg_i8)(v) & 15)
#else
#define tg_perm8x2(lo, hi, v) ({ tg_f8 l_ = (lo), h_ = (hi), r_; tg_i8 v_ = (tg_i8)(v) & 15; for (int i_ = 0; i_ < 8; i_++) r_[i_] = v_[i_] < 8 ? l_[v_[i_]] : h_[v_[i_] - 8]; r_; })
#endif`

// affine says whether a table is a + b·(i mod p) over its 16 entries for
// some p dividing 16 (Q2_K's low bits repeat every 4): the lanes' own
// integers, converted, compute it.
func affine(tab [16]int64) bool {
	for p := 1; p <= 16; p *= 2 {
		b := int64(0)
		if p > 1 {
			b = tab[1] - tab[0]
		}
		ok := true
		for i, v := range tab {
			ok = ok && v == tab[0]+b*int64(i%p)
		}
		if ok {
			return true
		}
	}
	return false
}

// nibbleTerm is int32 lanes computed from the low 4 bits of src's alone:
// lane l is table[src[l] & 15].
type nibbleTerm struct {
	src   nibbleSrc
	table [16]int64
}

// nibbleSrc is the lanes a nibbleTerm indexes by: t, or where sel holds
// (a scalar condition), alt's.
type nibbleSrc struct {
	t, alt, sel *ir.Lanes
}

// nibbleSum splits int32 lanes into terms that each depend on other
// lanes' low 4 bits only (nibbleTerms), plus constants folded into the
// first: a sum of them is exact in float32 (|values| < 2^20).
func nibbleSum(t ir.Lanes) ([]nibbleTerm, bool) {
	if tm, ok := nibbleOf(t); ok {
		return []nibbleTerm{tm}, true
	}
	e0 := t.L[0]
	if e0.DType != ir.Int32 || e0.Op != ir.OpAdd && e0.Op != ir.OpSub {
		return nil, false
	}
	if c, ok := laneConst(t.Src(1)); ok { // (a ± b) ± c: c into a's first table
		terms, ok := nibbleSum(t.Src(0))
		if !ok {
			return nil, false
		}
		if e0.Op == ir.OpSub {
			c = -c
		}
		for i := range terms[0].table {
			terms[0].table[i] += c
		}
		return terms, tableFits(terms[0].table)
	}
	a, okA := nibbleSum(t.Src(0))
	b, okB := nibbleSum(t.Src(1))
	if !okA || !okB {
		return nil, false
	}
	if e0.Op == ir.OpSub {
		for i := range b {
			for j := range b[i].table {
				b[i].table[j] = -b[i].table[j]
			}
		}
	}
	return append(a, b...), len(a)+len(b) <= 2
}

// nibbleOf is int32 lanes t as one nibbleTerm: lanes in [0, 16) (their own
// low bits), x & m for a constant m < 16, and from those, multiplied,
// shifted left or offset by constants; a scalar-conditioned select of two
// with one table.
func nibbleOf(t ir.Lanes) (nibbleTerm, bool) {
	e0 := t.L[0]
	if e0.DType != ir.Int32 {
		return nibbleTerm{}, false
	}
	ident := nibbleTerm{src: nibbleSrc{t: &t}}
	for i := range ident.table {
		ident.table[i] = int64(i)
	}
	if lanesMin(t) >= 0 && lanesMax(t) < 16 {
		return ident, true
	}
	switch e0.Op {
	case ir.OpAnd:
		for j := range 2 {
			if m, ok := laneConst(t.Src(j)); ok && m >= 0 && m < 16 {
				x := t.Src(1 - j)
				tm := nibbleTerm{src: nibbleSrc{t: &x}}
				for i := range tm.table {
					tm.table[i] = int64(i) & m
				}
				return tm, true
			}
		}
	case ir.OpShr:
		x := t.Src(0)
		if c, ok := laneConst(t.Src(1)); ok && c >= 0 && c < 31 && lanesMin(x) >= 0 && lanesMax(x)>>c < 16 {
			return ident, true // a byte's high nibble
		}
	case ir.OpMul, ir.OpShl, ir.OpAdd, ir.OpSub:
		c, ok := laneConst(t.Src(1))
		if !ok {
			return nibbleTerm{}, false
		}
		tm, ok := nibbleOf(t.Src(0))
		if !ok {
			return nibbleTerm{}, false
		}
		for i, v := range tm.table {
			switch e0.Op {
			case ir.OpMul:
				v *= c
			case ir.OpShl:
				if c < 0 || c > 20 {
					return nibbleTerm{}, false
				}
				v <<= c
			case ir.OpAdd:
				v += c
			case ir.OpSub:
				v -= c
			}
			tm.table[i] = v
		}
		return tm, tableFits(tm.table)
	case ir.OpWhere:
		if !t.Src(0).Uniform() {
			return lookupOf(t)
		}
		a, okA := nibbleOf(t.Src(1))
		b, okB := nibbleOf(t.Src(2))
		if !okA || !okB || a.table != b.table || a.src.sel != nil || b.src.sel != nil {
			return nibbleTerm{}, false
		}
		sel := t.Src(0)
		return nibbleTerm{src: nibbleSrc{t: a.src.t, alt: b.src.t, sel: &sel}, table: a.table}, true
	}
	return nibbleTerm{}, false
}

// laneConst is the integer constant all of t's lanes are (false: none).
func laneConst(t ir.Lanes) (int64, bool) {
	if !t.Uniform() || !t.L[0].IsConst() || t.L[0].DType.IsFloat() {
		return 0, false
	}
	return t.L[0].Min, true
}

// lookupOf is a select between two tables (or constants) of one source
// by lanes that compare that source's nibble with a constant:
// where(q == i, v, rest), IQ4's grid values chained over the 16 nibbles
// (nn's gridIQ4), becomes one table.
func lookupOf(t ir.Lanes) (nibbleTerm, bool) {
	cond := t.Src(0)
	if cond.L[0].Op != ir.OpCmpEq {
		return nibbleTerm{}, false
	}
	var key nibbleTerm
	var c int64
	found := false
	for j := range 2 {
		if v, ok := laneConst(cond.Src(j)); ok {
			if tm, ok := nibbleOf(cond.Src(1 - j)); ok {
				key, c, found = tm, v, true
				break
			}
		}
	}
	if !found {
		return nibbleTerm{}, false
	}
	arm := func(x ir.Lanes) (nibbleTerm, bool) {
		if v, ok := laneConst(x); ok {
			tm := nibbleTerm{src: key.src}
			for i := range tm.table {
				tm.table[i] = v
			}
			return tm, true
		}
		tm, ok := nibbleOf(x)
		return tm, ok && sameSrc(tm.src, key.src)
	}
	a, okA := arm(t.Src(1))
	b, okB := arm(t.Src(2))
	if !okA || !okB {
		return nibbleTerm{}, false
	}
	out := nibbleTerm{src: key.src}
	for i := range out.table {
		if key.table[i] == c {
			out.table[i] = a.table[i]
		} else {
			out.table[i] = b.table[i]
		}
	}
	return out, tableFits(out.table)
}

// sameSrc says whether two nibble sources are the same lanes (and the
// same scalar choice between two, if any).
func sameSrc(a, b nibbleSrc) bool {
	same := func(x, y *ir.Lanes) bool {
		return x == nil && y == nil || x != nil && y != nil && sameLanes(*x, *y)
	}
	return same(a.t, b.t) && same(a.alt, b.alt) && same(a.sel, b.sel)
}

// sameLanes says whether two lane tuples are the same expressions.
func sameLanes(a, b ir.Lanes) bool {
	if a.W != b.W || len(a.L) != len(b.L) {
		return false
	}
	for i := range a.L {
		if a.L[i] != b.L[i] {
			return false
		}
	}
	return true
}

// tableFits says whether a table's values are small enough to be exact in
// float32 and in a sum of two.
func tableFits(tab [16]int64) bool {
	for _, v := range tab {
		if v < -1<<20 || v > 1<<20 {
			return false
		}
	}
	return true
}

// nibbleIndex renders a nibbleTerm's index lanes.
func (r *renderer) nibbleIndex(s nibbleSrc) string {
	if s.sel == nil {
		return r.vexpr(*s.t)
	}
	return fmt.Sprintf("(%s?%s:%s)", r.vexpr(*s.sel), r.vexpr(*s.t), r.vexpr(*s.alt))
}

func lanesMin(t ir.Lanes) int64 {
	m := t.L[0].Min
	for _, e := range t.L[:t.W] {
		m = min(m, e.Min)
	}
	return m
}

func lanesMax(t ir.Lanes) int64 {
	m := t.L[0].Max
	for _, e := range t.L[:t.W] {
		m = max(m, e.Max)
	}
	return m
}

func (v *cVec) declareScalar(r *renderer, e *ir.Expr, val string) string {
	name := v.fresh("bc")
	r.line("%s %s = %s;", r.typ(e.DType), name, val)
	return name
}

// hsum renders a horizontal sum (ir.HSum): neighbouring vectors' lanes
// summed pairwise into one vector per pair, level by level, then the last
// vector's lanes.
func (r *renderer) hsum(vecs []ir.Lanes) string {
	xs := make([]string, len(vecs))
	for i, t := range vecs {
		xs[i] = r.vexpr(t)
	}
	w := vecs[0].W
	return fmt.Sprintf("tg_psum%d(%s)", w, pairsTree(xs, w))
}

// pairsTree is the C expression of the w-lane vectors xs (a power of two
// of them) added pairwise, neighbours first, into one vector: tg_pairsW of
// neighbouring vectors, level by level.
func pairsTree(xs []string, w int) string {
	for len(xs) > 1 {
		next := make([]string, len(xs)/2)
		for i := range next {
			next[i] = fmt.Sprintf("tg_pairs%d(%s, %s)", w, xs[2*i], xs[2*i+1])
		}
		xs = next
	}
	return xs[0]
}
