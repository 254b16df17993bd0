#ifndef INFINITY
#define INFINITY (__int_as_float(0x7f800000))
#endif
#ifndef NAN
#define NAN (__int_as_float(0x7fffffff))
#endif
extern "C" __global__ void __launch_bounds__(8) r_8_10(float *__restrict__ out0, const float *__restrict__ in1) {
  int gidx0 = threadIdx.x; /* 8 */
  float acc0 = -INFINITY;
  for (int ridx0 = 0; ridx0 < 10; ridx0++) {
    float val0 = in1[((gidx0*10)+ridx0)];
    acc0 = ((val0>acc0)?val0:acc0);
  }
  out0[gidx0] = acc0;
}

#ifndef INFINITY
#define INFINITY (__int_as_float(0x7f800000))
#endif
#ifndef NAN
#define NAN (__int_as_float(0x7fffffff))
#endif
extern "C" __global__ void __launch_bounds__(8) r_8_10n1(float *__restrict__ out0, const float *__restrict__ in1, const float *__restrict__ in2) {
  int gidx0 = threadIdx.x; /* 8 */
  float val0 = in2[gidx0];
  float acc0 = 0.0f;
  for (int ridx0 = 0; ridx0 < 10; ridx0++) {
    float val1 = in1[((gidx0*10)+ridx0)];
    acc0 += exp2f((val1-val0));
  }
  out0[gidx0] = acc0;
}

#ifndef INFINITY
#define INFINITY (__int_as_float(0x7f800000))
#endif
#ifndef NAN
#define NAN (__int_as_float(0x7fffffff))
#endif
extern "C" __global__ void __launch_bounds__(80) E_8_10(float *__restrict__ out0, const float *__restrict__ in1, const float *__restrict__ in2, const float *__restrict__ in3) {
  int gidx1 = threadIdx.x; /* 10 */
  int gidx0 = threadIdx.y; /* 8 */
  int alu0 = ((gidx0*10)+gidx1);
  float val0 = in1[alu0];
  float val1 = in2[gidx0];
  float val2 = in3[gidx0];
  out0[alu0] = (exp2f((val0-val1))/val2);
}
