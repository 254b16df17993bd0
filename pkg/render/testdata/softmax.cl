__kernel __attribute__((reqd_work_group_size(8, 1, 1))) void r_8_10(__global float *restrict out0, __global const float *restrict in1) {
  int gidx0 = get_global_id(0); /* 8 */
  float acc0 = -INFINITY;
  for (int ridx0 = 0; ridx0 < 10; ridx0++) {
    float val0 = in1[((gidx0*10)+ridx0)];
    acc0 = ((val0>acc0)?val0:acc0);
  }
  out0[gidx0] = acc0;
}

__kernel __attribute__((reqd_work_group_size(8, 1, 1))) void r_8_10n1(__global float *restrict out0, __global const float *restrict in1, __global const float *restrict in2) {
  int gidx0 = get_global_id(0); /* 8 */
  float val0 = in2[gidx0];
  float acc0 = 0.0f;
  for (int ridx0 = 0; ridx0 < 10; ridx0++) {
    float val1 = in1[((gidx0*10)+ridx0)];
    acc0 += exp2((val1-val0));
  }
  out0[gidx0] = acc0;
}

__kernel __attribute__((reqd_work_group_size(10, 8, 1))) void E_8_10(__global float *restrict out0, __global const float *restrict in1, __global const float *restrict in2, __global const float *restrict in3) {
  int gidx1 = get_global_id(0); /* 10 */
  int gidx0 = get_global_id(1); /* 8 */
  int alu0 = ((gidx0*10)+gidx1);
  float val0 = in1[alu0];
  float val1 = in2[gidx0];
  float val2 = in3[gidx0];
  out0[alu0] = (exp2((val0-val1))/val2);
}
