#ifndef INFINITY
#define INFINITY (__int_as_float(0x7f800000))
#endif
#ifndef NAN
#define NAN (__int_as_float(0x7fffffff))
#endif
extern "C" __global__ void __launch_bounds__(130) E_10_13(float *__restrict__ out0, const float *__restrict__ in1) {
  int gidx1 = threadIdx.x; /* 13 */
  int gidx0 = threadIdx.y; /* 10 */
  float val0 = ((((0<gidx0)&(gidx0<9))&(2<gidx1))?in1[(((gidx0*10)-gidx1)+2)]:0.0f);
  out0[((gidx0*13)+gidx1)] = sqrtf(val0);
}
