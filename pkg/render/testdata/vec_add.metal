#include <metal_stdlib>
using namespace metal;
kernel void E_16_64(device float *out0 [[buffer(0)]], const device float *in1 [[buffer(1)]], const device float *in2 [[buffer(2)]], uint3 gid [[thread_position_in_grid]]) {
  int gidx0 = gid.x; /* 256 */
  int alu0 = (gidx0*4);
  float4 val0 = *((const device float4*)(in1+alu0));
  float4 val1 = *((const device float4*)(in2+alu0));
  *((device float4*)(out0+alu0)) = float4(exp2((val0.x+val1.x)), exp2((val0.y+val1.y)), exp2((val0.z+val1.z)), exp2((val0.w+val1.w)));
}
