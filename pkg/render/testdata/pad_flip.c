#include <stdint.h>
#include <math.h>
__attribute__((optimize("no-tree-loop-vectorize")))
void E_10_13(void **bufs, const int64_t *vars, int64_t start, int64_t end) {
  float *restrict out0 = (float *)bufs[0];
  const float *restrict in1 = (const float *)bufs[1];
  (void)vars;
  for (int gidx0 = start; gidx0 < end; gidx0++) {
    for (int gidx1 = 0; gidx1 < 13; gidx1++) {
      float val0 = ((((0<gidx0)&(gidx0<9))&(2<gidx1))?in1[(((gidx0*10)-gidx1)+2)]:0.0f);
      out0[((gidx0*13)+gidx1)] = sqrtf(val0);
    }
  }
}
