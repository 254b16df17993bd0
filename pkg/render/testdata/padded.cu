#ifndef INFINITY
#define INFINITY (__int_as_float(0x7f800000))
#endif
#ifndef NAN
#define NAN (__int_as_float(0x7fffffff))
#endif
extern "C" __global__ void __launch_bounds__(256) E_1031(float *__restrict__ out0, const float *__restrict__ in1) {
  int gidx0 = (blockIdx.x*256+threadIdx.x); /* 1031 */
  if (gidx0 >= 1031) return;
  float val0 = in1[gidx0];
  out0[gidx0] = sqrtf(val0);
}
