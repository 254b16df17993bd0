__kernel __attribute__((reqd_work_group_size(20, 1, 1))) void E_8_10(__global float *restrict out0, __global const float *restrict in1) {
  int gidx0 = get_global_id(0); /* 20 */
  int alu0 = (gidx0*4);
  float4 val0 = vload4(0, in1+alu0);
  vstore4((float4)(((val0.x<0.0f)?(-val0.x):exp2(val0.x)), ((val0.y<0.0f)?(-val0.y):exp2(val0.y)), ((val0.z<0.0f)?(-val0.z):exp2(val0.z)), ((val0.w<0.0f)?(-val0.w):exp2(val0.w))), 0, out0+alu0);
}
