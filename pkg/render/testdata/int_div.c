#include <stdint.h>
#include <math.h>
void E_5_6(void **bufs, const int64_t *vars, int64_t start, int64_t end) {
  int *restrict out0 = (int *)bufs[0];
  const int *restrict in1 = (const int *)bufs[1];
  const int *restrict in2 = (const int *)bufs[2];
  (void)vars;
  for (int gidx0 = start; gidx0 < end; gidx0++) {
    int val0 = in1[gidx0];
    int val1 = in2[gidx0];
    out0[gidx0] = ((int)((uint32_t)((val1==0)?0:((val1==-1)?((int)(-(uint32_t)val0)):(val0/val1)))+(uint32_t)((val1==0)?0:((val1==-1)?0:(val0%val1)))));
  }
}
