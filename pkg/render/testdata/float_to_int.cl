#ifndef TG_SAT_INT32
#define TG_SAT_INT32
inline int tg_sat_int32(float x) { return x != x ? 0 : x <= -2147483648.0f ? (-2147483647-1) : x >= 2147483648.0f ? (int)2147483647 : (int)x; }
#endif
#ifndef TG_SAT_UINT8
#define TG_SAT_UINT8
inline uchar tg_sat_uint8(float x) { return x != x ? 0 : x <= 0.0f ? 0 : x >= 256.0f ? (uchar)255 : (uchar)x; }
#endif
__kernel __attribute__((reqd_work_group_size(80, 1, 1))) void E_8_10(__global int *restrict out0, __global const float *restrict in1) {
  int gidx0 = get_global_id(0); /* 80 */
  float val0 = in1[gidx0];
  out0[gidx0] = ((int)((uint)tg_sat_int32(((float)val0))+(uint)((int)tg_sat_uint8(((float)val0)))));
}
