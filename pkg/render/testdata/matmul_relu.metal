#include <metal_stdlib>
using namespace metal;
kernel void r_64_16_32(device float *out0 [[buffer(0)]], const device float *in1 [[buffer(1)]], const device float *in2 [[buffer(2)]], uint3 gid [[thread_position_in_grid]]) {
  int gidx1 = gid.x; /* 16 */
  int gidx0 = gid.y; /* 64 */
  float acc0 = 0.0f;
  for (int ridx0 = 0; ridx0 < 32; ridx0++) {
    float val0 = in1[((gidx0*32)+ridx0)];
    float val1 = in2[((ridx0*16)+gidx1)];
    acc0 += (val0*val1);
  }
  out0[((gidx0*16)+gidx1)] = ((acc0>0.0f)?acc0:0.0f);
}
