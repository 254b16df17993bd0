#include <stdint.h>
#include <math.h>
void r_64_16_32(void **bufs, const int64_t *vars, int64_t start, int64_t end) {
  float *restrict out0 = (float *)bufs[0];
  const float *restrict in1 = (const float *)bufs[1];
  const float *restrict in2 = (const float *)bufs[2];
  (void)vars;
  for (int gidx0 = start; gidx0 < end; gidx0++) {
    for (int gidx1 = 0; gidx1 < 16; gidx1++) {
      float acc0 = 0.0f;
      for (int ridx0 = 0; ridx0 < 32; ridx0++) {
        float val0 = in1[((gidx0*32)+ridx0)];
        float val1 = in2[((ridx0*16)+gidx1)];
        acc0 += (val0*val1);
      }
      out0[((gidx0*16)+gidx1)] = ((acc0>0.0f)?acc0:0.0f);
    }
  }
}
