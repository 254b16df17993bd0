#pragma OPENCL EXTENSION cl_khr_fp16 : enable
__kernel __attribute__((reqd_work_group_size(64, 1, 1))) void E_8_32(__global half *restrict out0, __global const half *restrict in1, __global const half *restrict in2) {
  int gidx0 = get_global_id(0); /* 64 */
  int alu0 = (gidx0*4);
  half4 val0 = vload4(0, in1+alu0);
  half4 val1 = vload4(0, in2+alu0);
  vstore4((half4)(((half)(((float)val0.x)*((float)val1.x))), ((half)(((float)val0.y)*((float)val1.y))), ((half)(((float)val0.z)*((float)val1.z))), ((half)(((float)val0.w)*((float)val1.w)))), 0, out0+alu0);
}
