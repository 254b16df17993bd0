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
extern "C" __global__ void __launch_bounds__(16) E_4_4(unsigned short *__restrict__ out0, const unsigned short *__restrict__ in1) {
  int gidx0 = threadIdx.x; /* 16 */
  float val0 = tg_h2f(in1[gidx0]);
  out0[gidx0] = tg_f2h((((float)val0)*((float)val0)));
}
