#ifndef INFINITY
#define INFINITY (__int_as_float(0x7f800000))
#endif
#ifndef NAN
#define NAN (__int_as_float(0x7fffffff))
#endif
#ifndef TG_RAND
#define TG_RAND
__device__ static inline unsigned long long tg_mix(unsigned long long x) {
  x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27; x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
__device__ static inline float tg_rand(long long seed, long long ctr, long long idx) {
  unsigned long long x = tg_mix((unsigned long long)seed + 0x9e3779b97f4a7c15ull * ((unsigned long long)ctr + 1));
  x = tg_mix(x ^ ((unsigned long long)idx * 0xd1b54a32d192ed03ull));
  return (float)(x >> 40) * (1.0f / 16777216.0f);
}
#endif
#ifndef TG_VEC
#define TG_VEC
struct alignas(16) tg_float4 { float x, y, z, w; };
struct alignas(8) tg_half4 { unsigned short x, y, z, w; };
#endif
extern "C" __global__ void __launch_bounds__(8) E_4_8(float *__restrict__ out0, long long var0, long long var1) {
  int gidx0 = threadIdx.x; /* 8 */
  int alu0 = (gidx0*4);
  float alu1 = tg_rand(var0, var1, alu0);
  float alu2 = tg_rand(var0, var1, (alu0+1));
  float alu3 = tg_rand(var0, var1, (alu0+2));
  float alu4 = tg_rand(var0, var1, (alu0+3));
  *((tg_float4*)(out0+alu0)) = tg_float4{(alu1*2.0f), (alu2*2.0f), (alu3*2.0f), (alu4*2.0f)};
}
