#include <metal_stdlib>
using namespace metal;
kernel void E_5_6(device int *out0 [[buffer(0)]], const device int *in1 [[buffer(1)]], uint3 gid [[thread_position_in_grid]]) {
  int gidx1 = gid.x; /* 6 */
  int gidx0 = gid.y; /* 5 */
  int alu0 = ((gidx0*6)+gidx1);
  int val0 = in1[alu0];
  int val1 = in1[((((gidx0+gidx1)%5)*6)+(alu0/5))];
  out0[alu0] = ((int)((uint)(val0/3)+(uint)val1));
}
