#include <metal_stdlib>
using namespace metal;
kernel void E_4_4(device half *out0 [[buffer(0)]], const device half *in1 [[buffer(1)]], uint3 gid [[thread_position_in_grid]]) {
  int gidx0 = gid.x; /* 16 */
  half val0 = in1[gidx0];
  out0[gidx0] = ((half)(((float)val0)*((float)val0)));
}
