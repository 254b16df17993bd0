#include <metal_stdlib>
using namespace metal;
kernel void E_5_6(device bool *out0 [[buffer(0)]], const device long *in1 [[buffer(1)]], const device ulong *in2 [[buffer(2)]], uint3 gid [[thread_position_in_grid]]) {
  int gidx0 = gid.x; /* 30 */
  long val0 = in1[gidx0];
  ulong alu0 = ((ulong)(((((long)((ulong)val0+(ulong)1))==0)?0:((((long)((ulong)val0+(ulong)1))==-1)?((long)(-(ulong)val0)):(val0/((long)((ulong)val0+(ulong)1)))))+((long)((ulong)val0*(ulong)val0))));
  ulong val1 = in2[gidx0];
  out0[gidx0] = (((alu0>val1)?alu0:val1)<(val1*2));
}
