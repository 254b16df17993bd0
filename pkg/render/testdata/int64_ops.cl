__kernel __attribute__((reqd_work_group_size(30, 1, 1))) void E_5_6(__global uchar *restrict out0, __global const long *restrict in1, __global const ulong *restrict in2) {
  int gidx0 = get_global_id(0); /* 30 */
  long val0 = in1[gidx0];
  ulong alu0 = ((ulong)(((((long)((ulong)val0+(ulong)1))==0)?0:((((long)((ulong)val0+(ulong)1))==-1)?((long)(-(ulong)val0)):(val0/((long)((ulong)val0+(ulong)1)))))+((long)((ulong)val0*(ulong)val0))));
  ulong val1 = in2[gidx0];
  out0[gidx0] = (((alu0>val1)?alu0:val1)<(val1*2));
}
