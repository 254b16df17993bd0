#include <metal_stdlib>
using namespace metal;
kernel void E_8_16(device float *out0 [[buffer(0)]], const device float *in1 [[buffer(1)]], uint3 gid [[thread_position_in_grid]]) {
  int gidx1 = gid.x; /* 4 */
  int gidx0 = gid.y; /* 8 */
  int alu0 = ((gidx0*16)+(gidx1*4));
  float4 val0 = (((0<gidx0)&(gidx0<7))?*((const device float4*)(in1+(alu0-16))):float4(0.0f));
  *((device float4*)(out0+alu0)) = float4(sqrt(val0.x), sqrt(val0.y), sqrt(val0.z), sqrt(val0.w));
}
