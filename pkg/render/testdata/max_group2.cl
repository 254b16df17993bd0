__kernel __attribute__((reqd_work_group_size(256, 1, 1))) void r_3_64_32_4096(__global float *restrict out0, __global const float *restrict in1, __global const float *restrict in2) {
  int lidx0 = get_local_id(0); /* lane of 256 */
  int gidx0 = get_group_id(1); /* 3 */
  float acc0 = -INFINITY;
  for (int rflat0 = lidx0; rflat0 < 2048; rflat0 += 256) {
    int ridx0 = (rflat0/32);
    int ridx1 = (rflat0%32);
    float val0 = in1[(((gidx0*2048)+(ridx0*32))+ridx1)];
    acc0 = ((val0>acc0)?val0:acc0);
  }
  __local float part0[256];
  part0[lidx0] = acc0;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = 128; s > 0; s >>= 1) {
    if (lidx0 < s) { part0[lidx0] = ((part0[lidx0+s]>part0[lidx0])?part0[lidx0+s]:part0[lidx0]); }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  acc0 = part0[0];
  float acc1 = 0.0f;
  for (int ridx2 = lidx0; ridx2 < 4096; ridx2 += 256) {
    float val1 = in2[((gidx0*4096)+ridx2)];
    acc1 += val1;
  }
  __local float part1[256];
  part1[lidx0] = acc1;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = 128; s > 0; s >>= 1) {
    if (lidx0 < s) { part1[lidx0] += part1[lidx0+s]; }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  acc1 = part1[0];
  if (lidx0 == 0) {
    out0[gidx0] = (acc0+acc1);
  }
}
