#include <metal_stdlib>
using namespace metal;
#ifndef TG_BF16_TO_F32
#define TG_BF16_TO_F32
static inline float tg_bf16_to_f32(ushort h) { return as_type<float>(((uint)h) << 16); }
#endif
#ifndef TG_F32_TO_BF16
#define TG_F32_TO_BF16
static inline ushort tg_f32_to_bf16(float f) {
  uint u = as_type<uint>(f);
  uint r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  return (ushort)(f != f ? ((u >> 16) | 0x40u) : r);
}
#endif
#ifndef TG_ROUND_BF16
#define TG_ROUND_BF16
static inline float tg_round_bf16(float f) { return tg_bf16_to_f32(tg_f32_to_bf16(f)); }
#endif
kernel void E_4_4(device ushort *out0 [[buffer(0)]], const device ushort *in1 [[buffer(1)]], uint3 gid [[thread_position_in_grid]]) {
  int gidx0 = gid.x; /* 16 */
  float val0 = tg_bf16_to_f32(in1[gidx0]);
  float alu0 = ((float)val0);
  out0[gidx0] = tg_f32_to_bf16(sqrt(((float)tg_round_bf16((((float)tg_round_bf16((alu0*alu0)))+alu0)))));
}
