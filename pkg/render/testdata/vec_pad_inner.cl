__kernel __attribute__((reqd_work_group_size(4, 8, 1))) void E_8_16(__global float *restrict out0, __global const float *restrict in1) {
  int gidx1 = get_global_id(0); /* 4 */
  int gidx0 = get_global_id(1); /* 8 */
  int alu0 = (gidx1*4);
  int alu1 = ((gidx0*12)+alu0);
  float val0 = ((0<alu0)?in1[(alu1-1)]:0.0f);
  bool alu2 = (gidx1<3);
  float val1 = (alu2?in1[alu1]:0.0f);
  float val2 = (alu2?in1[(alu1+1)]:0.0f);
  float val3 = (alu2?in1[(alu1+2)]:0.0f);
  vstore4((float4)(sqrt(val0), sqrt(val1), sqrt(val2), sqrt(val3)), 0, out0+((gidx0*16)+alu0));
}
