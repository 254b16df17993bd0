#include <metal_stdlib>
using namespace metal;
kernel void E_5_3_4_2(device float *out0 [[buffer(0)]], const device float *in1 [[buffer(1)]], uint3 gid [[thread_position_in_grid]]) {
  int gidx3 = gid.x; /* 2 */
  int gidx1 = gid.y; /* 12 */
  int gidx0 = gid.z; /* 5 */
  float val0 = in1[(((gidx3*60)+(gidx1*5))+gidx0)];
  out0[(((gidx0*24)+(gidx1*2))+gidx3)] = exp2(val0);
}
