#include <metal_stdlib>
using namespace metal;
kernel void E_4_4(device half *out0 [[buffer(0)]], const device half *in1 [[buffer(1)]], uint3 gid [[thread_position_in_grid]]) {
  int gidx0 = gid.x; /* 4 */
  int alu0 = (gidx0*4);
  half4 val0 = *((const device half4*)(in1+alu0));
  float alu1 = ((float)val0.x);
  float alu2 = ((float)val0.y);
  float alu3 = ((float)val0.z);
  float alu4 = ((float)val0.w);
  *((device half4*)(out0+alu0)) = half4(((half)(((float)((half)(alu1*alu1)))+alu1)), ((half)(((float)((half)(alu2*alu2)))+alu2)), ((half)(((float)((half)(alu3*alu3)))+alu3)), ((half)(((float)((half)(alu4*alu4)))+alu4)));
}
