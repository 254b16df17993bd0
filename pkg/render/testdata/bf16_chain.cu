#ifndef INFINITY
#define INFINITY (__int_as_float(0x7f800000))
#endif
#ifndef NAN
#define NAN (__int_as_float(0x7fffffff))
#endif
#ifndef TG_BF16_TO_F32
#define TG_BF16_TO_F32
__device__ static inline float tg_bf16_to_f32(unsigned short h) { return __uint_as_float(((unsigned int)h) << 16); }
#endif
#ifndef TG_F32_TO_BF16
#define TG_F32_TO_BF16
__device__ static inline unsigned short tg_f32_to_bf16(float f) {
  unsigned int u = __float_as_uint(f);
  unsigned int r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  return (unsigned short)(f != f ? ((u >> 16) | 0x40u) : r);
}
#endif
#ifndef TG_ROUND_BF16
#define TG_ROUND_BF16
__device__ static inline float tg_round_bf16(float f) { return tg_bf16_to_f32(tg_f32_to_bf16(f)); }
#endif
extern "C" __global__ void __launch_bounds__(16) E_4_4(unsigned short *__restrict__ out0, const unsigned short *__restrict__ in1) {
  int gidx0 = threadIdx.x; /* 16 */
  float val0 = tg_bf16_to_f32(in1[gidx0]);
  float alu0 = ((float)val0);
  out0[gidx0] = tg_f32_to_bf16(sqrtf(((float)tg_round_bf16((((float)tg_round_bf16((alu0*alu0)))+alu0)))));
}
