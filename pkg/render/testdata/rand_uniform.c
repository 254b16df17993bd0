#include <stdint.h>
#include <math.h>
#ifndef TG_RAND
#define TG_RAND
static inline uint64_t tg_mix(uint64_t x) {
  x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27; x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
static inline float tg_rand(int64_t seed, int64_t ctr, int64_t idx) {
  uint64_t x = tg_mix((uint64_t)seed + 0x9e3779b97f4a7c15ull * ((uint64_t)ctr + 1));
  x = tg_mix(x ^ ((uint64_t)idx * 0xd1b54a32d192ed03ull));
  return (float)(x >> 40) * (1.0f / 16777216.0f);
}
#endif
void E_4_8(void **bufs, const int64_t *vars, int64_t start, int64_t end) {
  float *restrict out0 = (float *)bufs[0];
  for (int gidx0 = start; gidx0 < end; gidx0++) {
    float alu0 = tg_rand(vars[0], vars[1], gidx0);
    out0[gidx0] = (alu0*2.0f);
  }
}
