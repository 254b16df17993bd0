#include <metal_stdlib>
using namespace metal;
kernel void E_4_4(device int *out0 [[buffer(0)]], const device uchar *in1 [[buffer(1)]], const device char *in2 [[buffer(2)]], uint3 gid [[thread_position_in_grid]]) {
  int gidx0 = gid.x; /* 16 */
  uchar val0 = in1[gidx0];
  char val1 = in2[gidx0];
  out0[gidx0] = (((int)((uchar)((uint)val0*(uint)2)))+((int)((char)(-(uint)val1))));
}
