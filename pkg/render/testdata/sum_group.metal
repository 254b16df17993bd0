#include <metal_stdlib>
using namespace metal;
kernel void r_4_4096(device float *out0 [[buffer(0)]], const device float *in1 [[buffer(1)]], uint3 lid [[thread_position_in_threadgroup]], uint3 tgid [[threadgroup_position_in_grid]]) {
  int lidx0 = lid.x; /* lane of 256 */
  int gidx0 = tgid.y; /* 4 */
  float acc0 = 0.0f;
  for (int ridx0 = lidx0; ridx0 < 4096; ridx0 += 256) {
    float val0 = in1[((gidx0*4096)+ridx0)];
    acc0 += val0;
  }
  threadgroup float part0[256];
  part0[lidx0] = acc0;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (int s = 128; s > 0; s >>= 1) {
    if (lidx0 < s) { part0[lidx0] += part0[lidx0+s]; }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  acc0 = part0[0];
  if (lidx0 == 0) {
    out0[gidx0] = acc0;
  }
}
