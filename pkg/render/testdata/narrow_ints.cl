__kernel __attribute__((reqd_work_group_size(16, 1, 1))) void E_4_4(__global int *restrict out0, __global const uchar *restrict in1, __global const char *restrict in2) {
  int gidx0 = get_global_id(0); /* 16 */
  uchar val0 = in1[gidx0];
  char val1 = in2[gidx0];
  out0[gidx0] = (((int)((uchar)((uint)val0*(uint)2)))+((int)((char)(-(uint)val1))));
}
