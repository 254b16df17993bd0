#include <stdint.h>
#include <math.h>
#ifndef TG_SAT_INT32
#define TG_SAT_INT32
static inline int tg_sat_int32(float x) { return x != x ? 0 : x <= -2147483648.0f ? (-2147483647-1) : x >= 2147483648.0f ? (int)2147483647 : (int)x; }
#endif
#ifndef TG_SAT_UINT8
#define TG_SAT_UINT8
static inline unsigned char tg_sat_uint8(float x) { return x != x ? 0 : x <= 0.0f ? 0 : x >= 256.0f ? (unsigned char)255 : (unsigned char)x; }
#endif
void E_8_10(void **bufs, const int64_t *vars, int64_t start, int64_t end) {
  int *restrict out0 = (int *)bufs[0];
  const float *restrict in1 = (const float *)bufs[1];
  (void)vars;
  for (int gidx0 = start; gidx0 < end; gidx0++) {
    float val0 = in1[gidx0];
    out0[gidx0] = ((int)((uint32_t)tg_sat_int32(((float)val0))+(uint32_t)((int)tg_sat_uint8(((float)val0)))));
  }
}
