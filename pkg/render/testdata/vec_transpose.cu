#ifndef INFINITY
#define INFINITY (__int_as_float(0x7f800000))
#endif
#ifndef NAN
#define NAN (__int_as_float(0x7fffffff))
#endif
#ifndef TG_VEC
#define TG_VEC
struct alignas(16) tg_float4 { float x, y, z, w; };
struct alignas(8) tg_half4 { unsigned short x, y, z, w; };
#endif
extern "C" __global__ void __launch_bounds__(256) E_32_64(float *__restrict__ out0, const float *__restrict__ in1, const float *__restrict__ in2) {
  int gidx1 = threadIdx.x; /* 16 */
  int gidx0 = (blockIdx.y*16+threadIdx.y); /* 32 */
  int alu0 = ((gidx0*64)+(gidx1*4));
  int alu1 = ((gidx1*128)+gidx0);
  float val0 = in1[alu1];
  tg_float4 val1 = *((const tg_float4*)(in2+alu0));
  float val2 = in1[(alu1+32)];
  float val3 = in1[(alu1+64)];
  float val4 = in1[(alu1+96)];
  *((tg_float4*)(out0+alu0)) = tg_float4{(val0+val1.x), (val2+val1.y), (val3+val1.z), (val4+val1.w)};
}
