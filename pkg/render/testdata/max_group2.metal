#include <metal_stdlib>
using namespace metal;
kernel void r_3_64_32_4096(device float *out0 [[buffer(0)]], const device float *in1 [[buffer(1)]], const device float *in2 [[buffer(2)]], uint3 lid [[thread_position_in_threadgroup]], uint3 tgid [[threadgroup_position_in_grid]]) {
  int lidx0 = lid.x; /* lane of 256 */
  int gidx0 = tgid.y; /* 3 */
  float acc0 = -INFINITY;
  for (int rflat0 = lidx0; rflat0 < 2048; rflat0 += 256) {
    int ridx0 = (rflat0/32);
    int ridx1 = (rflat0%32);
    float val0 = in1[(((gidx0*2048)+(ridx0*32))+ridx1)];
    acc0 = ((val0>acc0)?val0:acc0);
  }
  threadgroup float part0[256];
  part0[lidx0] = acc0;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (int s = 128; s > 0; s >>= 1) {
    if (lidx0 < s) { part0[lidx0] = ((part0[lidx0+s]>part0[lidx0])?part0[lidx0+s]:part0[lidx0]); }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  acc0 = part0[0];
  float acc1 = 0.0f;
  for (int ridx2 = lidx0; ridx2 < 4096; ridx2 += 256) {
    float val1 = in2[((gidx0*4096)+ridx2)];
    acc1 += val1;
  }
  threadgroup float part1[256];
  part1[lidx0] = acc1;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (int s = 128; s > 0; s >>= 1) {
    if (lidx0 < s) { part1[lidx0] += part1[lidx0+s]; }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  acc1 = part1[0];
  if (lidx0 == 0) {
    out0[gidx0] = (acc0+acc1);
  }
}
