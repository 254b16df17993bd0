#include <metal_stdlib>
using namespace metal;
kernel void E_10_13(device float *out0 [[buffer(0)]], const device float *in1 [[buffer(1)]], uint3 gid [[thread_position_in_grid]]) {
  int gidx1 = gid.x; /* 13 */
  int gidx0 = gid.y; /* 10 */
  float val0 = ((((0<gidx0)&(gidx0<9))&(2<gidx1))?in1[(((gidx0*10)-gidx1)+2)]:0.0f);
  out0[((gidx0*13)+gidx1)] = sqrt(val0);
}
