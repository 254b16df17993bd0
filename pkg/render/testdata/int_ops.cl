__kernel __attribute__((reqd_work_group_size(6, 5, 1))) void E_5_6(__global int *restrict out0, __global const int *restrict in1) {
  int gidx1 = get_global_id(0); /* 6 */
  int gidx0 = get_global_id(1); /* 5 */
  int alu0 = ((gidx0*6)+gidx1);
  int val0 = in1[alu0];
  int val1 = in1[((((gidx0+gidx1)%5)*6)+(alu0/5))];
  out0[alu0] = ((int)((uint)(val0/3)+(uint)val1));
}
