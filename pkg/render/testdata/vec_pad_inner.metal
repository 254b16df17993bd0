#include <metal_stdlib>
using namespace metal;
kernel void E_8_16(device float *out0 [[buffer(0)]], const device float *in1 [[buffer(1)]], uint3 gid [[thread_position_in_grid]]) {
  int gidx1 = gid.x; /* 4 */
  int gidx0 = gid.y; /* 8 */
  int alu0 = (gidx1*4);
  int alu1 = ((gidx0*12)+alu0);
  float val0 = ((0<alu0)?in1[(alu1-1)]:0.0f);
  bool alu2 = (gidx1<3);
  float val1 = (alu2?in1[alu1]:0.0f);
  float val2 = (alu2?in1[(alu1+1)]:0.0f);
  float val3 = (alu2?in1[(alu1+2)]:0.0f);
  *((device float4*)(out0+((gidx0*16)+alu0))) = float4(sqrt(val0), sqrt(val1), sqrt(val2), sqrt(val3));
}
