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
extern "C" __global__ void __launch_bounds__(16) E_64(float *__restrict__ out0, const float *__restrict__ in1) {
  int gidx0 = threadIdx.x; /* 16 */
  int alu0 = (gidx0*4);
  tg_float4 val0 = *((const tg_float4*)(in1+alu0));
  float val1 = in1[(alu0+4)];
  *((tg_float4*)(out0+alu0)) = tg_float4{(val0.x+val0.y), (val0.y+val0.z), (val0.z+val0.w), (val0.w+val1)};
}
