#ifndef INFINITY
#define INFINITY (__int_as_float(0x7f800000))
#endif
#ifndef NAN
#define NAN (__int_as_float(0x7fffffff))
#endif
extern "C" __global__ void __launch_bounds__(16) E_4_4(int *__restrict__ out0, const unsigned char *__restrict__ in1, const signed char *__restrict__ in2) {
  int gidx0 = threadIdx.x; /* 16 */
  unsigned char val0 = in1[gidx0];
  signed char val1 = in2[gidx0];
  out0[gidx0] = (((int)((unsigned char)((unsigned int)val0*(unsigned int)2)))+((int)((signed char)(-(unsigned int)val1))));
}
