__kernel __attribute__((reqd_work_group_size(30, 1, 1))) void E_5_6(__global int *restrict out0, __global const int *restrict in1, __global const int *restrict in2) {
  int gidx0 = get_global_id(0); /* 30 */
  int val0 = in1[gidx0];
  int val1 = in2[gidx0];
  out0[gidx0] = ((int)((uint)((val1==0)?0:((val1==-1)?((int)(-(uint)val0)):(val0/val1)))+(uint)((val1==0)?0:((val1==-1)?0:(val0%val1)))));
}
