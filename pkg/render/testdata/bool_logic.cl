__kernel __attribute__((reqd_work_group_size(80, 1, 1))) void E_8_10(__global int *restrict out0, __global const float *restrict in1) {
  int gidx0 = get_global_id(0); /* 80 */
  float val0 = in1[gidx0];
  out0[gidx0] = ((int)((0.0f<val0)|((val0<0.0f)&(val0!=0.0f))));
}
