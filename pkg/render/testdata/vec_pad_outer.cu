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
extern "C" __global__ void __launch_bounds__(32) E_8_16(float *__restrict__ out0, const float *__restrict__ in1) {
  int gidx1 = threadIdx.x; /* 4 */
  int gidx0 = threadIdx.y; /* 8 */
  int alu0 = ((gidx0*16)+(gidx1*4));
  tg_float4 val0 = (((0<gidx0)&(gidx0<7))?*((const tg_float4*)(in1+(alu0-16))):tg_float4{0.0f, 0.0f, 0.0f, 0.0f});
  *((tg_float4*)(out0+alu0)) = tg_float4{sqrtf(val0.x), sqrtf(val0.y), sqrtf(val0.z), sqrtf(val0.w)};
}
