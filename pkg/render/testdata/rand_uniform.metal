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
  int gidx0 = gid.x; /* 8 */
  int alu0 = (gidx0*4);
  float alu1 = tg_rand(var0, var1, alu0);
  float alu2 = tg_rand(var0, var1, (alu0+1));
  float alu3 = tg_rand(var0, var1, (alu0+2));
  float alu4 = tg_rand(var0, var1, (alu0+3));
  *((device float4*)(out0+alu0)) = float4((alu1*2.0f), (alu2*2.0f), (alu3*2.0f), (alu4*2.0f));
}
