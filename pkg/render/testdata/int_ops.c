#include <stdint.h>
#include <math.h>
void E_5_6(void **bufs, const int64_t *vars, int64_t start, int64_t end) {
  int *restrict out0 = (int *)bufs[0];
  const int *restrict in1 = (const int *)bufs[1];
  (void)vars;
  for (int gidx0 = start; gidx0 < end; gidx0++) {
    for (int gidx1 = 0; gidx1 < 6; gidx1++) {
      int alu0 = ((gidx0*6)+gidx1);
      int val0 = in1[alu0];
      int val1 = in1[((((gidx0+gidx1)%5)*6)+(alu0/5))];
      out0[alu0] = ((int)((uint32_t)(val0/3)+(uint32_t)val1));
    }
  }
}
