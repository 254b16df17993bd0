#pragma OPENCL EXTENSION cl_khr_fp16 : enable
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
__kernel __attribute__((reqd_work_group_size(4, 1, 1))) void E_4_4(__global float *restrict out0, __global const ushort *restrict in1, __global const float *restrict in2, __global const ushort *restrict in3) {
  int gidx0 = get_global_id(0); /* 4 */
  int alu0 = (gidx0*4);
  ushort val0 = in1[alu0];
  float4 val1 = vload4(0, in2+alu0);
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
  vstore4((float4)(((((float)as_half((ushort)(((ushort)val0))))*((float)((int)as_uint(val1.x))))+((float)((short)tg_f32_to_bf16(val2)))), ((((float)as_half((ushort)(((ushort)val3))))*((float)((int)as_uint(val1.y))))+((float)((short)tg_f32_to_bf16(val4)))), ((((float)as_half((ushort)(((ushort)val5))))*((float)((int)as_uint(val1.z))))+((float)((short)tg_f32_to_bf16(val6)))), ((((float)as_half((ushort)(((ushort)val7))))*((float)((int)as_uint(val1.w))))+((float)((short)tg_f32_to_bf16(val8))))), 0, out0+alu0);
}
