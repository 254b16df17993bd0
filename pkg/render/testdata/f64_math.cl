#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#ifndef TG_SATD_INT64
#define TG_SATD_INT64
inline long tg_satd_int64(double x) { return x != x ? 0 : x <= -9223372036854775808.0 ? (-9223372036854775807L-1) : x >= 9223372036854775808.0 ? (long)9223372036854775807L : (long)x; }
#endif
__kernel __attribute__((reqd_work_group_size(80, 1, 1))) void E_8_10(__global long *restrict out0, __global const double *restrict in1) {
  int gidx0 = get_global_id(0); /* 80 */
  double val0 = in1[gidx0];
  out0[gidx0] = tg_satd_int64(((exp2(val0)+sqrt(val0))*((double)((float)val0))));
}
