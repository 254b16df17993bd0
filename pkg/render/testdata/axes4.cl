__kernel __attribute__((reqd_work_group_size(2, 12, 5))) void E_5_3_4_2(__global float *restrict out0, __global const float *restrict in1) {
  int gidx3 = get_global_id(0); /* 2 */
  int gidx1 = get_global_id(1); /* 12 */
  int gidx0 = get_global_id(2); /* 5 */
  float val0 = in1[(((gidx3*60)+(gidx1*5))+gidx0)];
  out0[(((gidx0*24)+(gidx1*2))+gidx3)] = exp2(val0);
}
