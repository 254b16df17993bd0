__kernel __attribute__((reqd_work_group_size(256, 1, 1))) void E_1031(__global float *restrict out0, __global const float *restrict in1) {
  int gidx0 = get_global_id(0); /* 1031 */
  if (gidx0 >= 1031) return;
  float val0 = in1[gidx0];
  out0[gidx0] = sqrt(val0);
}
