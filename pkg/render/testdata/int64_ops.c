#include <stdint.h>
#include <math.h>
void E_5_6(void **bufs, const int64_t *vars, int64_t start, int64_t end) {
  _Bool *restrict out0 = (_Bool *)bufs[0];
  const long long *restrict in1 = (const long long *)bufs[1];
  const unsigned long long *restrict in2 = (const unsigned long long *)bufs[2];
  (void)vars;
  for (int gidx0 = start; gidx0 < end; gidx0++) {
    long long val0 = in1[gidx0];
    unsigned long long alu0 = ((unsigned long long)(((((long long)((uint64_t)val0+(uint64_t)1))==0)?0:((((long long)((uint64_t)val0+(uint64_t)1))==-1)?((long long)(-(uint64_t)val0)):(val0/((long long)((uint64_t)val0+(uint64_t)1)))))+((long long)((uint64_t)val0*(uint64_t)val0))));
    unsigned long long val1 = in2[gidx0];
    out0[gidx0] = (((alu0>val1)?alu0:val1)<(val1*2));
  }
}
