#ifndef INFINITY
#define INFINITY (__int_as_float(0x7f800000))
#endif
#ifndef NAN
#define NAN (__int_as_float(0x7fffffff))
#endif
extern "C" __global__ void __launch_bounds__(80) E_8_10(int *__restrict__ out0, const float *__restrict__ in1) {
  int gidx0 = threadIdx.x; /* 80 */
  float val0 = in1[gidx0];
  out0[gidx0] = ((int)((0.0f<val0)|((val0<0.0f)&(val0!=0.0f))));
}
