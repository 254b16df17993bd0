#pragma OPENCL EXTENSION cl_khr_fp16 : enable
__kernel __attribute__((reqd_work_group_size(16, 1, 1))) void E_4_4(__global half *restrict out0, __global const half *restrict in1) {
  int gidx0 = get_global_id(0); /* 16 */
  half val0 = in1[gidx0];
  out0[gidx0] = ((half)(((float)val0)*((float)val0)));
}
