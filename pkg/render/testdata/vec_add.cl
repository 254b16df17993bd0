__kernel __attribute__((reqd_work_group_size(256, 1, 1))) void E_16_64(__global float *restrict out0, __global const float *restrict in1, __global const float *restrict in2) {
  int gidx0 = get_global_id(0); /* 256 */
  int alu0 = (gidx0*4);
  float4 val0 = vload4(0, in1+alu0);
  float4 val1 = vload4(0, in2+alu0);
  vstore4((float4)(exp2((val0.x+val1.x)), exp2((val0.y+val1.y)), exp2((val0.z+val1.z)), exp2((val0.w+val1.w))), 0, out0+alu0);
}
