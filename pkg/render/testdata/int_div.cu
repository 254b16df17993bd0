#ifndef INFINITY
#define INFINITY (__int_as_float(0x7f800000))
#endif
#ifndef NAN
#define NAN (__int_as_float(0x7fffffff))
#endif
extern "C" __global__ void __launch_bounds__(30) E_5_6(int *__restrict__ out0, const int *__restrict__ in1, const int *__restrict__ in2) {
  int gidx0 = threadIdx.x; /* 30 */
  int val0 = in1[gidx0];
  int val1 = in2[gidx0];
  out0[gidx0] = ((int)((unsigned int)((val1==0)?0:((val1==-1)?((int)(-(unsigned int)val0)):(val0/val1)))+(unsigned int)((val1==0)?0:((val1==-1)?0:(val0%val1)))));
}
