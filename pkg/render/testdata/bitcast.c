#include <stdint.h>
#include <math.h>
#ifndef TG_AS_F32
#define TG_AS_F32
static inline float tg_as_f32(uint32_t u) { float f; __builtin_memcpy(&f, &u, 4); return f; }
#endif
#ifndef TG_AS_U32
#define TG_AS_U32
static inline uint32_t tg_as_u32(float f) { uint32_t u; __builtin_memcpy(&u, &f, 4); return u; }
#endif
#ifndef TG_BF16_TO_F32
#define TG_BF16_TO_F32
static inline float tg_bf16_to_f32(unsigned short h) { return tg_as_f32(((uint32_t)h) << 16); }
#endif
#ifndef TG_F32_TO_BF16
#define TG_F32_TO_BF16
static inline unsigned short tg_f32_to_bf16(float f) {
  uint32_t u = tg_as_u32(f);
  uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  return (unsigned short)(f != f ? ((u >> 16) | 0x40u) : r);
}
#endif
#ifndef TG_ROUND_BF16
#define TG_ROUND_BF16
static inline float tg_round_bf16(float f) { return tg_bf16_to_f32(tg_f32_to_bf16(f)); }
#endif
#ifndef TG_F16_FROM_BITS
#define TG_F16_FROM_BITS
static inline float tg_f16_from_bits(uint16_t u) { _Float16 h; __builtin_memcpy(&h, &u, 2); return (float)h; }
#endif
void E_4_4(void **bufs, const int64_t *vars, int64_t start, int64_t end) {
  float *restrict out0 = (float *)bufs[0];
  const unsigned short *restrict in1 = (const unsigned short *)bufs[1];
  const float *restrict in2 = (const float *)bufs[2];
  const unsigned short *restrict in3 = (const unsigned short *)bufs[3];
  (void)vars;
  for (int gidx0 = start; gidx0 < end; gidx0++) {
    unsigned short val0 = in1[gidx0];
    float val1 = in2[gidx0];
    float val2 = tg_bf16_to_f32(in3[gidx0]);
    out0[gidx0] = ((((float)tg_f16_from_bits(((unsigned short)val0)))*((float)((int)tg_as_u32(val1))))+((float)((short)tg_f32_to_bf16(val2))));
  }
}
