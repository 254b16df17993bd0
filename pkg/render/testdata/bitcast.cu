#ifndef INFINITY
#define INFINITY (__int_as_float(0x7f800000))
#endif
#ifndef NAN
#define NAN (__int_as_float(0x7fffffff))
#endif
#ifndef TG_HALF
#define TG_HALF
__device__ static inline float tg_h2f(unsigned short h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
__device__ static inline unsigned short tg_f2h(float f) { unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
#endif
#ifndef TG_VEC
#define TG_VEC
struct alignas(16) tg_float4 { float x, y, z, w; };
struct alignas(8) tg_half4 { unsigned short x, y, z, w; };
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
extern "C" __global__ void __launch_bounds__(4) E_4_4(float *__restrict__ out0, const unsigned short *__restrict__ in1, const float *__restrict__ in2, const unsigned short *__restrict__ in3) {
  int gidx0 = threadIdx.x; /* 4 */
  int alu0 = (gidx0*4);
  unsigned short val0 = in1[alu0];
  tg_float4 val1 = *((const tg_float4*)(in2+alu0));
  float val2 = tg_bf16_to_f32(in3[alu0]);
  int alu1 = (alu0+1);
  unsigned short val3 = in1[alu1];
  float val4 = tg_bf16_to_f32(in3[alu1]);
  int alu2 = (alu0+2);
  unsigned short val5 = in1[alu2];
  float val6 = tg_bf16_to_f32(in3[alu2]);
  int alu3 = (alu0+3);
  unsigned short val7 = in1[alu3];
  float val8 = tg_bf16_to_f32(in3[alu3]);
  *((tg_float4*)(out0+alu0)) = tg_float4{((((float)tg_h2f(((unsigned short)val0)))*((float)((int)__float_as_uint(val1.x))))+((float)((short)tg_f32_to_bf16(val2)))), ((((float)tg_h2f(((unsigned short)val3)))*((float)((int)__float_as_uint(val1.y))))+((float)((short)tg_f32_to_bf16(val4)))), ((((float)tg_h2f(((unsigned short)val5)))*((float)((int)__float_as_uint(val1.z))))+((float)((short)tg_f32_to_bf16(val6)))), ((((float)tg_h2f(((unsigned short)val7)))*((float)((int)__float_as_uint(val1.w))))+((float)((short)tg_f32_to_bf16(val8))))};
}
