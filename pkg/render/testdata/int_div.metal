#include <metal_stdlib>
using namespace metal;
kernel void E_5_6(device int *out0 [[buffer(0)]], const device int *in1 [[buffer(1)]], const device int *in2 [[buffer(2)]], uint3 gid [[thread_position_in_grid]]) {
  int gidx0 = gid.x; /* 30 */
  int val0 = in1[gidx0];
  int val1 = in2[gidx0];
  out0[gidx0] = ((int)((uint)((val1==0)?0:((val1==-1)?((int)(-(uint)val0)):(val0/val1)))+(uint)((val1==0)?0:((val1==-1)?0:(val0%val1)))));
}
