#ifndef TG_RAND
#define TG_RAND
inline ulong tg_mix(ulong x) {
  x ^= x >> 30; x *= 0xbf58476d1ce4e5b9UL;
  x ^= x >> 27; x *= 0x94d049bb133111ebUL;
  return x ^ (x >> 31);
}
inline float tg_rand(long seed, long ctr, long idx) {
  ulong x = tg_mix((ulong)seed + 0x9e3779b97f4a7c15UL * ((ulong)ctr + 1));
  x = tg_mix(x ^ ((ulong)idx * 0xd1b54a32d192ed03UL));
  return (float)(x >> 40) * (1.0f / 16777216.0f);
}
#endif
__kernel __attribute__((reqd_work_group_size(8, 1, 1))) void E_4_8(__global float *restrict out0, long var0, long var1) {
  int gidx0 = get_global_id(0); /* 8 */
  int alu0 = (gidx0*4);
  float alu1 = tg_rand(var0, var1, alu0);
  float alu2 = tg_rand(var0, var1, (alu0+1));
  float alu3 = tg_rand(var0, var1, (alu0+2));
  float alu4 = tg_rand(var0, var1, (alu0+3));
  vstore4((float4)((alu1*2.0f), (alu2*2.0f), (alu3*2.0f), (alu4*2.0f)), 0, out0+alu0);
}
