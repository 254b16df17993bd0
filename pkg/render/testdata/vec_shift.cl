__kernel __attribute__((reqd_work_group_size(16, 1, 1))) void E_64(__global float *restrict out0, __global const float *restrict in1) {
  int gidx0 = get_global_id(0); /* 16 */
  int alu0 = (gidx0*4);
  float4 val0 = vload4(0, in1+alu0);
  float val1 = in1[(alu0+4)];
  vstore4((float4)((val0.x+val0.y), (val0.y+val0.z), (val0.z+val0.w), (val0.w+val1)), 0, out0+alu0);
}
