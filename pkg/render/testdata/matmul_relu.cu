#ifndef INFINITY
#define INFINITY (__int_as_float(0x7f800000))
#endif
#ifndef NAN
#define NAN (__int_as_float(0x7fffffff))
#endif
extern "C" __global__ void __launch_bounds__(256) r_64_16_32(float *__restrict__ out0, const float *__restrict__ in1, const float *__restrict__ in2) {
  int gidx1 = threadIdx.x; /* 16 */
  int gidx0 = (blockIdx.y*16+threadIdx.y); /* 64 */
  float acc0 = 0.0f;
  for (int ridx0 = 0; ridx0 < 32; ridx0++) {
    float val0 = in1[((gidx0*32)+ridx0)];
    float val1 = in2[((ridx0*16)+gidx1)];
    acc0 += (val0*val1);
  }
  out0[((gidx0*16)+gidx1)] = ((acc0>0.0f)?acc0:0.0f);
}
