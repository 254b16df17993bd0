__kernel __attribute__((reqd_work_group_size(16, 16, 1))) void r_64_16_32(__global float *restrict out0, __global const float *restrict in1, __global const float *restrict in2) {
  int gidx1 = get_global_id(0); /* 16 */
  int gidx0 = get_global_id(1); /* 64 */
  float acc0 = 0.0f;
  for (int ridx0 = 0; ridx0 < 32; ridx0++) {
    float val0 = in1[((gidx0*32)+ridx0)];
    float val1 = in2[((ridx0*16)+gidx1)];
    acc0 += (val0*val1);
  }
  out0[((gidx0*16)+gidx1)] = ((acc0>0.0f)?acc0:0.0f);
}
