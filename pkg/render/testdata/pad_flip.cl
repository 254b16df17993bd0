__kernel __attribute__((reqd_work_group_size(13, 10, 1))) void E_10_13(__global float *restrict out0, __global const float *restrict in1) {
  int gidx1 = get_global_id(0); /* 13 */
  int gidx0 = get_global_id(1); /* 10 */
  float val0 = ((((0<gidx0)&(gidx0<9))&(2<gidx1))?in1[(((gidx0*10)-gidx1)+2)]:0.0f);
  out0[((gidx0*13)+gidx1)] = sqrt(val0);
}
