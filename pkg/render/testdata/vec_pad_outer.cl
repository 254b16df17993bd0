__kernel __attribute__((reqd_work_group_size(4, 8, 1))) void E_8_16(__global float *restrict out0, __global const float *restrict in1) {
  int gidx1 = get_global_id(0); /* 4 */
  int gidx0 = get_global_id(1); /* 8 */
  int alu0 = ((gidx0*16)+(gidx1*4));
  float4 val0 = (((0<gidx0)&(gidx0<7))?vload4(0, in1+(alu0-16)):(float4)(0.0f));
  vstore4((float4)(sqrt(val0.x), sqrt(val0.y), sqrt(val0.z), sqrt(val0.w)), 0, out0+alu0);
}
