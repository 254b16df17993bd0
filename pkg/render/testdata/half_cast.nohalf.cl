#ifndef TG_F16
#define TG_F16
inline float tg_f16(float x) { ushort h; vstore_half(x, 0, (half *)&h); return vload_half(0, (const half *)&h); }
#endif
__kernel __attribute__((reqd_work_group_size(4, 1, 1))) void E_4_4(__global half *restrict out0, __global const half *restrict in1) {
  int gidx0 = get_global_id(0); /* 4 */
  int alu0 = (gidx0*4);
  float4 val0 = vload_half4(0, in1+alu0);
  vstore_half4((float4)((((float)val0.x)*((float)val0.x)), (((float)val0.y)*((float)val0.y)), (((float)val0.z)*((float)val0.z)), (((float)val0.w)*((float)val0.w))), 0, out0+alu0);
}
