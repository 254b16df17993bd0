#ifndef INFINITY
#define INFINITY (__int_as_float(0x7f800000))
#endif
#ifndef NAN
#define NAN (__int_as_float(0x7fffffff))
#endif
extern "C" __global__ void __launch_bounds__(30) E_5_6(bool *__restrict__ out0, const long long *__restrict__ in1, const unsigned long long *__restrict__ in2) {
  int gidx0 = threadIdx.x; /* 30 */
  long long val0 = in1[gidx0];
  unsigned long long alu0 = ((unsigned long long)(((((long long)((unsigned long long)val0+(unsigned long long)1))==0)?0:((((long long)((unsigned long long)val0+(unsigned long long)1))==-1)?((long long)(-(unsigned long long)val0)):(val0/((long long)((unsigned long long)val0+(unsigned long long)1)))))+((long long)((unsigned long long)val0*(unsigned long long)val0))));
  unsigned long long val1 = in2[gidx0];
  out0[gidx0] = (((alu0>val1)?alu0:val1)<(val1*2));
}
