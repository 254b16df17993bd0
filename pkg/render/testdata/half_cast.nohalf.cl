#ifndef TG_F16
#define TG_F16
inline float tg_f16(float x) { ushort h; vstore_half(x, 0, (half *)&h); return vload_half(0, (const half *)&h); }
#endif
__kernel __attribute__((reqd_work_group_size(16, 1, 1))) void E_4_4(__global half *restrict out0, __global const half *restrict in1) {
  int gidx0 = get_global_id(0); /* 16 */
  float val0 = vload_half(gidx0, in1);
  vstore_half((((float)val0)*((float)val0)), gidx0, out0);
}
