#include <metal_stdlib>
using namespace metal;
kernel void E_32_64(device float *out0 [[buffer(0)]], const device float *in1 [[buffer(1)]], const device float *in2 [[buffer(2)]], uint3 gid [[thread_position_in_grid]]) {
  int gidx1 = gid.x; /* 16 */
  int gidx0 = gid.y; /* 32 */
  int alu0 = ((gidx0*64)+(gidx1*4));
  int alu1 = ((gidx1*128)+gidx0);
  float val0 = in1[alu1];
  float4 val1 = *((const device float4*)(in2+alu0));
  float val2 = in1[(alu1+32)];
  float val3 = in1[(alu1+64)];
  float val4 = in1[(alu1+96)];
  *((device float4*)(out0+alu0)) = float4((val0+val1.x), (val2+val1.y), (val3+val1.z), (val4+val1.w));
}
