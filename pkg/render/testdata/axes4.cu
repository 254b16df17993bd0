#ifndef INFINITY
#define INFINITY (__int_as_float(0x7f800000))
#endif
#ifndef NAN
#define NAN (__int_as_float(0x7fffffff))
#endif
extern "C" __global__ void __launch_bounds__(120) E_5_3_4_2(float *__restrict__ out0, const float *__restrict__ in1) {
  int gidx3 = threadIdx.x; /* 2 */
  int gidx1 = threadIdx.y; /* 12 */
  int gidx0 = threadIdx.z; /* 5 */
  float val0 = in1[(((gidx3*60)+(gidx1*5))+gidx0)];
  out0[(((gidx0*24)+(gidx1*2))+gidx3)] = exp2f(val0);
}
