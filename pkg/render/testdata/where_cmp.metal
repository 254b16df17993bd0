#include <metal_stdlib>
using namespace metal;
kernel void E_8_10(device float *out0 [[buffer(0)]], const device float *in1 [[buffer(1)]], uint3 gid [[thread_position_in_grid]]) {
  int gidx0 = gid.x; /* 20 */
  int alu0 = (gidx0*4);
  float4 val0 = *((const device float4*)(in1+alu0));
  *((device float4*)(out0+alu0)) = float4(((val0.x<0.0f)?(-val0.x):exp2(val0.x)), ((val0.y<0.0f)?(-val0.y):exp2(val0.y)), ((val0.z<0.0f)?(-val0.z):exp2(val0.z)), ((val0.w<0.0f)?(-val0.w):exp2(val0.w)));
}
