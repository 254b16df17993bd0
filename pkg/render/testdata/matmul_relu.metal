#include <metal_stdlib>
using namespace metal;
kernel void r_64_16_32(device float *out0 [[buffer(0)]], const device float *in1 [[buffer(1)]], const device float *in2 [[buffer(2)]], uint3 gid [[thread_position_in_grid]]) {
  int gidx1 = gid.x; /* 4 */
  int gidx0 = gid.y; /* 64 */
  int alu0 = (gidx1*4);
  float acc0 = 0.0f;
  float acc1 = 0.0f;
  float acc2 = 0.0f;
  float acc3 = 0.0f;
  for (int ridx0 = 0; ridx0 < 32; ridx0++) {
    float val0 = in1[((gidx0*32)+ridx0)];
    float4 val1 = *((const device float4*)(in2+((ridx0*16)+alu0)));
    acc0 += (val0*val1.x);
    acc1 += (val0*val1.y);
    acc2 += (val0*val1.z);
    acc3 += (val0*val1.w);
  }
  *((device float4*)(out0+((gidx0*16)+alu0))) = float4(((acc0>0.0f)?acc0:0.0f), ((acc1>0.0f)?acc1:0.0f), ((acc2>0.0f)?acc2:0.0f), ((acc3>0.0f)?acc3:0.0f));
}
