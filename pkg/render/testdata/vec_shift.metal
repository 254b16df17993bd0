#include <metal_stdlib>
using namespace metal;
kernel void E_64(device float *out0 [[buffer(0)]], const device float *in1 [[buffer(1)]], uint3 gid [[thread_position_in_grid]]) {
  int gidx0 = gid.x; /* 16 */
  int alu0 = (gidx0*4);
  float4 val0 = *((const device float4*)(in1+alu0));
  float val1 = in1[(alu0+4)];
  *((device float4*)(out0+alu0)) = float4((val0.x+val0.y), (val0.y+val0.z), (val0.z+val0.w), (val0.w+val1));
}
