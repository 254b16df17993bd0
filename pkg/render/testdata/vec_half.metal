#include <metal_stdlib>
using namespace metal;
kernel void E_8_32(device half *out0 [[buffer(0)]], const device half *in1 [[buffer(1)]], const device half *in2 [[buffer(2)]], uint3 gid [[thread_position_in_grid]]) {
  int gidx0 = gid.x; /* 64 */
  int alu0 = (gidx0*4);
  half4 val0 = *((const device half4*)(in1+alu0));
  half4 val1 = *((const device half4*)(in2+alu0));
  *((device half4*)(out0+alu0)) = half4(((half)(((float)val0.x)*((float)val1.x))), ((half)(((float)val0.y)*((float)val1.y))), ((half)(((float)val0.z)*((float)val1.z))), ((half)(((float)val0.w)*((float)val1.w))));
}
