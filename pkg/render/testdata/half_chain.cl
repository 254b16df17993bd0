#pragma OPENCL EXTENSION cl_khr_fp16 : enable
__kernel __attribute__((reqd_work_group_size(4, 1, 1))) void E_4_4(__global half *restrict out0, __global const half *restrict in1) {
  int gidx0 = get_global_id(0); /* 4 */
  int alu0 = (gidx0*4);
  half4 val0 = vload4(0, in1+alu0);
  float alu1 = ((float)val0.x);
  float alu2 = ((float)val0.y);
  float alu3 = ((float)val0.z);
  float alu4 = ((float)val0.w);
  vstore4((half4)(((half)(((float)((half)(alu1*alu1)))+alu1)), ((half)(((float)((half)(alu2*alu2)))+alu2)), ((half)(((float)((half)(alu3*alu3)))+alu3)), ((half)(((float)((half)(alu4*alu4)))+alu4))), 0, out0+alu0);
}
