#include <metal_stdlib>
using namespace metal;
kernel void E_8_10(device int *out0 [[buffer(0)]], const device float *in1 [[buffer(1)]], uint3 gid [[thread_position_in_grid]]) {
  int gidx0 = gid.x; /* 80 */
  float val0 = in1[gidx0];
  out0[gidx0] = ((int)((0.0f<val0)|((val0<0.0f)&(val0!=0.0f))));
}
