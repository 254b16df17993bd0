#ifndef INFINITY
#define INFINITY (__int_as_float(0x7f800000))
#endif
#ifndef NAN
#define NAN (__int_as_float(0x7fffffff))
#endif
extern "C" __global__ void __launch_bounds__(30) E_5_6(int *__restrict__ out0, const int *__restrict__ in1) {
  int gidx1 = threadIdx.x; /* 6 */
  int gidx0 = threadIdx.y; /* 5 */
  int alu0 = ((gidx0*6)+gidx1);
  int val0 = in1[alu0];
  int val1 = in1[((((gidx0+gidx1)%5)*6)+(alu0/5))];
  out0[alu0] = ((int)((unsigned int)(val0/3)+(unsigned int)val1));
}
