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
  int alu0 = (gidx1*4);
  int alu1 = ((gidx0*12)+alu0);
  float val0 = ((0<alu0)?in1[(alu1-1)]:0.0f);
  bool alu2 = (gidx1<3);
  float val1 = (alu2?in1[alu1]:0.0f);
  float val2 = (alu2?in1[(alu1+1)]:0.0f);
  float val3 = (alu2?in1[(alu1+2)]:0.0f);
  *((tg_float4*)(out0+((gidx0*16)+alu0))) = tg_float4{sqrtf(val0), sqrtf(val1), sqrtf(val2), sqrtf(val3)};
}
