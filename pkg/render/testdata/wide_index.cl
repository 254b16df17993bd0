__kernel __attribute__((reqd_work_group_size(256, 1, 1))) void E_65536_65536(__global uchar *restrict out0, __global const uchar *restrict in1) {
  long gidx0 = get_global_id(0); /* 4294967296 */
  uchar val0 = in1[0];
  out0[gidx0] = val0;
}
