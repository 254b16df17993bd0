#include <stdint.h>
#include <math.h>
void E_4_4(void **bufs, const int64_t *vars, int64_t start, int64_t end) {
  int *restrict out0 = (int *)bufs[0];
  const unsigned char *restrict in1 = (const unsigned char *)bufs[1];
  const signed char *restrict in2 = (const signed char *)bufs[2];
  (void)vars;
  for (int gidx0 = start; gidx0 < end; gidx0++) {
    unsigned char val0 = in1[gidx0];
    signed char val1 = in2[gidx0];
    out0[gidx0] = (((int)((unsigned char)((uint32_t)val0*(uint32_t)2)))+((int)((signed char)(-(uint32_t)val1))));
  }
}
