#ifndef TG_BF16_TO_F32
#define TG_BF16_TO_F32
inline float tg_bf16_to_f32(ushort h) { return as_float(((uint)h) << 16); }
#endif
#ifndef TG_F32_TO_BF16
#define TG_F32_TO_BF16
inline ushort tg_f32_to_bf16(float f) {
  uint u = as_uint(f);
  uint r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  return (ushort)(f != f ? ((u >> 16) | 0x40u) : r);
}
#endif
#ifndef TG_ROUND_BF16
#define TG_ROUND_BF16
inline float tg_round_bf16(float f) { return tg_bf16_to_f32(tg_f32_to_bf16(f)); }
#endif
__kernel __attribute__((reqd_work_group_size(16, 1, 1))) void E_4_4(__global ushort *restrict out0, __global const ushort *restrict in1) {
  int gidx0 = get_global_id(0); /* 16 */
  float val0 = tg_bf16_to_f32(in1[gidx0]);
  float alu0 = ((float)val0);
  out0[gidx0] = tg_f32_to_bf16(sqrt(((float)tg_round_bf16((((float)tg_round_bf16((alu0*alu0)))+alu0)))));
}
