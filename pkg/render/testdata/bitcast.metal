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
kernel void E_4_4(device float *out0 [[buffer(0)]], const device ushort *in1 [[buffer(1)]], const device float *in2 [[buffer(2)]], const device ushort *in3 [[buffer(3)]], uint3 gid [[thread_position_in_grid]]) {
  int gidx0 = gid.x; /* 4 */
  int alu0 = (gidx0*4);
  ushort val0 = in1[alu0];
  float4 val1 = *((const device float4*)(in2+alu0));
  float val2 = tg_bf16_to_f32(in3[alu0]);
  int alu1 = (alu0+1);
  ushort val3 = in1[alu1];
  float val4 = tg_bf16_to_f32(in3[alu1]);
  int alu2 = (alu0+2);
  ushort val5 = in1[alu2];
  float val6 = tg_bf16_to_f32(in3[alu2]);
  int alu3 = (alu0+3);
  ushort val7 = in1[alu3];
  float val8 = tg_bf16_to_f32(in3[alu3]);
  *((device float4*)(out0+alu0)) = float4(((((float)as_type<half>((ushort)(((ushort)val0))))*((float)((int)as_type<uint>(val1.x))))+((float)((short)tg_f32_to_bf16(val2)))), ((((float)as_type<half>((ushort)(((ushort)val3))))*((float)((int)as_type<uint>(val1.y))))+((float)((short)tg_f32_to_bf16(val4)))), ((((float)as_type<half>((ushort)(((ushort)val5))))*((float)((int)as_type<uint>(val1.z))))+((float)((short)tg_f32_to_bf16(val6)))), ((((float)as_type<half>((ushort)(((ushort)val7))))*((float)((int)as_type<uint>(val1.w))))+((float)((short)tg_f32_to_bf16(val8)))));
}
