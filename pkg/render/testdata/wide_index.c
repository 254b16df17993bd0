#include <stdint.h>
#include <math.h>
void E_65536_65536(void **bufs, const int64_t *vars, int64_t start, int64_t end) {
  unsigned char *restrict out0 = (unsigned char *)bufs[0];
  const unsigned char *restrict in1 = (const unsigned char *)bufs[1];
  (void)vars;
  for (int64_t gidx0 = start; gidx0 < end; gidx0++) {
    unsigned char val0 = in1[0];
    out0[gidx0] = val0;
  }
}
