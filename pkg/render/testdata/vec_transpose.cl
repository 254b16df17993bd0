__kernel __attribute__((reqd_work_group_size(16, 16, 1))) void E_32_64(__global float *restrict out0, __global const float *restrict in1, __global const float *restrict in2) {
  int gidx1 = get_global_id(0); /* 16 */
  int gidx0 = get_global_id(1); /* 32 */
  int alu0 = ((gidx0*64)+(gidx1*4));
  int alu1 = ((gidx1*128)+gidx0);
  float val0 = in1[alu1];
  float4 val1 = vload4(0, in2+alu0);
  float val2 = in1[(alu1+32)];
  float val3 = in1[(alu1+64)];
  float val4 = in1[(alu1+96)];
  vstore4((float4)((val0+val1.x), (val2+val1.y), (val3+val1.z), (val4+val1.w)), 0, out0+alu0);
}
