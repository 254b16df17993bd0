#include <metal_stdlib>
using namespace metal;
kernel void E_65536_65536(device uchar *out0 [[buffer(0)]], const device uchar *in1 [[buffer(1)]], uint3 gid [[thread_position_in_grid]]) {
  long gidx0 = gid.x; /* 4294967296 */
  uchar val0 = in1[0];
  out0[gidx0] = val0;
}
