#include <stdint.h>
#include <math.h>
void r_8_10(void **bufs, const int64_t *vars, int64_t start, int64_t end) {
  float *restrict out0 = (float *)bufs[0];
  const float *restrict in1 = (const float *)bufs[1];
  (void)vars;
  for (int gidx0 = start; gidx0 < end; gidx0++) {
    float acc0 = -INFINITY;
    for (int ridx0 = 0; ridx0 < 10; ridx0++) {
      float val0 = in1[((gidx0*10)+ridx0)];
      acc0 = ((val0>acc0)?val0:acc0);
    }
    out0[gidx0] = acc0;
  }
}

#include <stdint.h>
#include <math.h>
void r_8_10n1(void **bufs, const int64_t *vars, int64_t start, int64_t end) {
  float *restrict out0 = (float *)bufs[0];
  const float *restrict in1 = (const float *)bufs[1];
  const float *restrict in2 = (const float *)bufs[2];
  (void)vars;
  for (int gidx0 = start; gidx0 < end; gidx0++) {
    float val0 = in2[gidx0];
    float acc0 = 0.0f;
    for (int ridx0 = 0; ridx0 < 10; ridx0++) {
      float val1 = in1[((gidx0*10)+ridx0)];
      acc0 += exp2f((val1-val0));
    }
    out0[gidx0] = acc0;
  }
}

#include <stdint.h>
#include <math.h>
void E_8_10(void **bufs, const int64_t *vars, int64_t start, int64_t end) {
  float *restrict out0 = (float *)bufs[0];
  const float *restrict in1 = (const float *)bufs[1];
  const float *restrict in2 = (const float *)bufs[2];
  const float *restrict in3 = (const float *)bufs[3];
  (void)vars;
  for (int gidx0 = start; gidx0 < end; gidx0++) {
    for (int gidx1 = 0; gidx1 < 10; gidx1++) {
      int alu0 = ((gidx0*10)+gidx1);
      float val0 = in1[alu0];
      float val1 = in2[gidx0];
      float val2 = in3[gidx0];
      out0[alu0] = (exp2f((val0-val1))/val2);
    }
  }
}
