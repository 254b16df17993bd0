#ifndef INFINITY
#define INFINITY (__int_as_float(0x7f800000))
#endif
#ifndef NAN
#define NAN (__int_as_float(0x7fffffff))
#endif
#ifndef TG_SAT_INT32
#define TG_SAT_INT32
__device__ static inline int tg_sat_int32(float x) { return x != x ? 0 : x <= -2147483648.0f ? (-2147483647-1) : x >= 2147483648.0f ? (int)2147483647 : (int)x; }
#endif
#ifndef TG_SAT_UINT8
#define TG_SAT_UINT8
__device__ static inline unsigned char tg_sat_uint8(float x) { return x != x ? 0 : x <= 0.0f ? 0 : x >= 256.0f ? (unsigned char)255 : (unsigned char)x; }
#endif
extern "C" __global__ void __launch_bounds__(80) E_8_10(int *__restrict__ out0, const float *__restrict__ in1) {
  int gidx0 = threadIdx.x; /* 80 */
  float val0 = in1[gidx0];
  out0[gidx0] = ((int)((unsigned int)tg_sat_int32(((float)val0))+(unsigned int)((int)tg_sat_uint8(((float)val0)))));
}
