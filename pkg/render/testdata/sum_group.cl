__kernel __attribute__((reqd_work_group_size(256, 1, 1))) void r_4_4096(__global float *restrict out0, __global const float *restrict in1) {
  int lidx0 = get_local_id(0); /* lane of 256 */
  int gidx0 = get_group_id(1); /* 4 */
  float acc0 = 0.0f;
  for (int ridx0 = lidx0; ridx0 < 4096; ridx0 += 256) {
    float val0 = in1[((gidx0*4096)+ridx0)];
    acc0 += val0;
  }
  __local float part0[256];
  part0[lidx0] = acc0;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = 128; s > 0; s >>= 1) {
    if (lidx0 < s) { part0[lidx0] += part0[lidx0+s]; }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  acc0 = part0[0];
  if (lidx0 == 0) {
    out0[gidx0] = acc0;
  }
}
