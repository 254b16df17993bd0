#include <metal_stdlib>
using namespace metal;
kernel void E_1031(device float *out0 [[buffer(0)]], const device float *in1 [[buffer(1)]], uint3 gid [[thread_position_in_grid]]) {
  int gidx0 = gid.x; /* 1031 */
  if (gidx0 >= 1031) return;
  float val0 = in1[gidx0];
  out0[gidx0] = sqrt(val0);
}
