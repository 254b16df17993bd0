#include <stdint.h>
#include <math.h>
#ifndef TG_FOLD16
#define TG_FOLD16
#define tg_fold16(v) ({ tg_f16 f16_ = (v); tg_pairs8(__builtin_shufflevector(f16_, f16_, 0,1,2,3,4,5,6,7), __builtin_shufflevector(f16_, f16_, 8,9,10,11,12,13,14,15)); })
#endif
#ifndef TG_VEC
#define TG_VEC
typedef float tg_f16 __attribute__((vector_size(64)));
typedef int tg_i16 __attribute__((vector_size(64)));
typedef float tg_f8 __attribute__((vector_size(32)));
typedef int tg_i8 __attribute__((vector_size(32)));
typedef float tg_f4 __attribute__((vector_size(16)));
typedef int tg_i4 __attribute__((vector_size(16)));
#define tg_pairs16(a, b) (__builtin_shufflevector(a, b, 0,2,4,6,8,10,12,14,16,18,20,22,24,26,28,30) + __builtin_shufflevector(a, b, 1,3,5,7,9,11,13,15,17,19,21,23,25,27,29,31))
#define tg_psum16(v) ({ tg_f16 p16_ = (v); tg_psum8(__builtin_shufflevector(p16_, p16_, 0,2,4,6,8,10,12,14) + __builtin_shufflevector(p16_, p16_, 1,3,5,7,9,11,13,15)); })
#define tg_pairs8(a, b) (__builtin_shufflevector(a, b, 0,2,4,6,8,10,12,14) + __builtin_shufflevector(a, b, 1,3,5,7,9,11,13,15))
#define tg_psum8(v) ({ tg_f8 p8_ = (v); tg_psum4(__builtin_shufflevector(p8_, p8_, 0,2,4,6) + __builtin_shufflevector(p8_, p8_, 1,3,5,7)); })
#define tg_pairs4(a, b) (__builtin_shufflevector(a, b, 0,2,4,6) + __builtin_shufflevector(a, b, 1,3,5,7))
#define tg_load(T, p) ({ T v_; __builtin_memcpy(&v_, (p), sizeof v_); v_; })
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
void r_32_8_64(void **bufs, const int64_t *vars, int64_t start, int64_t end) {
  float *restrict out0 = (float *)bufs[0];
  const float *restrict in1 = (const float *)bufs[1];
  const float *restrict in2 = (const float *)bufs[2];
  (void)vars;
  for (int gidx0 = start; gidx0 < end; gidx0++) {
    int alu0 = (gidx0/4);
    int alu1 = (gidx0%4);
    int alu2 = ((alu0*32)+(alu1*2));
    tg_f16 vacc0 = {0};
    tg_f16 vacc1 = {0};
    tg_f16 vacc2 = {0};
    tg_f16 vacc3 = {0};
    tg_f16 vacc4 = {0};
    tg_f16 vacc5 = {0};
    tg_f16 vacc6 = {0};
    tg_f16 vacc7 = {0};
    for (int ridx0 = 0; ridx0 < 4; ridx0++) {
      int alu3 = (ridx0*16);
      int alu4 = ((alu0*256)+alu3);
      int alu5 = ((alu1*128)+alu3);
      tg_f16 vval0 = tg_load(tg_f16, &in1[alu4]);
      tg_f16 vval1 = tg_load(tg_f16, &in2[alu5]);
      vacc0 += (vval0*vval1);
      tg_f16 vval2 = tg_load(tg_f16, &in2[(alu5+64)]);
      vacc1 += (vval0*vval2);
      tg_f16 vval3 = tg_load(tg_f16, &in1[(alu4+64)]);
      vacc2 += (vval3*vval1);
      vacc3 += (vval3*vval2);
      tg_f16 vval4 = tg_load(tg_f16, &in1[(alu4+128)]);
      vacc4 += (vval4*vval1);
      vacc5 += (vval4*vval2);
      tg_f16 vval5 = tg_load(tg_f16, &in1[(alu4+192)]);
      vacc6 += (vval5*vval1);
      vacc7 += (vval5*vval2);
    }
    tg_f8 vhsum0 = tg_fold16(tg_pairs16(tg_pairs16(tg_pairs16(vacc0, vacc1), tg_pairs16(vacc2, vacc3)), tg_pairs16(tg_pairs16(vacc4, vacc5), tg_pairs16(vacc6, vacc7))));
    out0[alu2] = vhsum0[0];
    out0[(alu2+1)] = vhsum0[1];
    out0[(alu2+8)] = vhsum0[2];
    out0[(alu2+9)] = vhsum0[3];
    out0[(alu2+16)] = vhsum0[4];
    out0[(alu2+17)] = vhsum0[5];
    out0[(alu2+24)] = vhsum0[6];
    out0[(alu2+25)] = vhsum0[7];
  }
}
