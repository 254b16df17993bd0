#include <metal_stdlib>
using namespace metal;
static inline ulong tg_mix(ulong x) {
  x ^= x >> 30; x *= 0xbf58476d1ce4e5b9UL;
  x ^= x >> 27; x *= 0x94d049bb133111ebUL;
  return x ^ (x >> 31);
}
static inline float tg_rand(long seed, long ctr, long idx) {
  ulong x = tg_mix((ulong)seed + 0x9e3779b97f4a7c15UL * ((ulong)ctr + 1));
  x = tg_mix(x ^ ((ulong)idx * 0xd1b54a32d192ed03UL));
  return (float)(x >> 40) * (1.0f / 16777216.0f);
}
kernel void E_4_8(device float *out0 [[buffer(0)]], constant long &var0 [[buffer(1)]], constant long &var1 [[buffer(2)]], uint3 gid [[thread_position_in_grid]]) {
  int gidx0 = gid.x; /* 32 */
  float alu0 = tg_rand(var0, var1, gidx0);
  out0[gidx0] = (alu0*2.0f);
}
