#include <metal_stdlib>
using namespace metal;
#ifndef TG_SAT_INT32
#define TG_SAT_INT32
static inline int tg_sat_int32(float x) { return x != x ? 0 : x <= -2147483648.0f ? (-2147483647-1) : x >= 2147483648.0f ? (int)2147483647 : (int)x; }
#endif
#ifndef TG_SAT_UINT8
#define TG_SAT_UINT8
static inline uchar tg_sat_uint8(float x) { return x != x ? 0 : x <= 0.0f ? 0 : x >= 256.0f ? (uchar)255 : (uchar)x; }
#endif
kernel void E_8_10(device int *out0 [[buffer(0)]], const device float *in1 [[buffer(1)]], uint3 gid [[thread_position_in_grid]]) {
  int gidx0 = gid.x; /* 80 */
  float val0 = in1[gidx0];
  out0[gidx0] = ((int)((uint)tg_sat_int32(((float)val0))+(uint)((int)tg_sat_uint8(((float)val0)))));
}
