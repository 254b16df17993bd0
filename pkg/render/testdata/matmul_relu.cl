__kernel __attribute__((reqd_work_group_size(4, 64, 1))) void r_64_16_32(__global float *restrict out0, __global const float *restrict in1, __global const float *restrict in2) {
  int gidx1 = get_global_id(0); /* 4 */
  int gidx0 = get_global_id(1); /* 64 */
  int alu0 = (gidx1*4);
  float acc0 = 0.0f;
  float acc1 = 0.0f;
  float acc2 = 0.0f;
  float acc3 = 0.0f;
  for (int ridx0 = 0; ridx0 < 32; ridx0++) {
    float val0 = in1[((gidx0*32)+ridx0)];
    float4 val1 = vload4(0, in2+((ridx0*16)+alu0));
    acc0 += (val0*val1.x);
    acc1 += (val0*val1.y);
    acc2 += (val0*val1.z);
    acc3 += (val0*val1.w);
  }
  vstore4((float4)(((acc0>0.0f)?acc0:0.0f), ((acc1>0.0f)?acc1:0.0f), ((acc2>0.0f)?acc2:0.0f), ((acc3>0.0f)?acc3:0.0f)), 0, out0+((gidx0*16)+alu0));
}
