#include <stdint.h>
#include <math.h>
void E_8_10(void **bufs, const int64_t *vars, int64_t start, int64_t end) {
  int *restrict out0 = (int *)bufs[0];
  const float *restrict in1 = (const float *)bufs[1];
  (void)vars;
  for (int gidx0 = start; gidx0 < end; gidx0++) {
    float val0 = in1[gidx0];
    out0[gidx0] = ((int)((0.0f<val0)|((val0<0.0f)&(val0!=0.0f))));
  }
}
