#include <metal_stdlib>
using namespace metal;
kernel void r_8_10(device float *out0 [[buffer(0)]], const device float *in1 [[buffer(1)]], uint3 gid [[thread_position_in_grid]]) {
  int gidx0 = gid.x; /* 8 */
  float acc0 = -INFINITY;
  for (int ridx0 = 0; ridx0 < 10; ridx0++) {
    float val0 = in1[((gidx0*10)+ridx0)];
    acc0 = ((val0>acc0)?val0:acc0);
  }
  out0[gidx0] = acc0;
}

#include <metal_stdlib>
using namespace metal;
kernel void r_8_10n1(device float *out0 [[buffer(0)]], const device float *in1 [[buffer(1)]], const device float *in2 [[buffer(2)]], uint3 gid [[thread_position_in_grid]]) {
  int gidx0 = gid.x; /* 8 */
  float val0 = in2[gidx0];
  float acc0 = 0.0f;
  for (int ridx0 = 0; ridx0 < 10; ridx0++) {
    float val1 = in1[((gidx0*10)+ridx0)];
    acc0 += exp2((val1-val0));
  }
  out0[gidx0] = acc0;
}

#include <metal_stdlib>
using namespace metal;
kernel void E_8_10(device float *out0 [[buffer(0)]], const device float *in1 [[buffer(1)]], const device float *in2 [[buffer(2)]], const device float *in3 [[buffer(3)]], uint3 gid [[thread_position_in_grid]]) {
  int gidx1 = gid.x; /* 10 */
  int gidx0 = gid.y; /* 8 */
  int alu0 = ((gidx0*10)+gidx1);
  float val0 = in1[alu0];
  float val1 = in2[gidx0];
  float val2 = in3[gidx0];
  out0[alu0] = (exp2((val0-val1))/val2);
}
