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
extern "C" __global__ void __launch_bounds__(256) r_64_16_32(float *__restrict__ out0, const float *__restrict__ in1, const float *__restrict__ in2) {
  int gidx1 = threadIdx.x; /* 4 */
  int gidx0 = threadIdx.y; /* 64 */
  int alu0 = (gidx1*4);
  float acc0 = 0.0f;
  float acc1 = 0.0f;
  float acc2 = 0.0f;
  float acc3 = 0.0f;
  for (int ridx0 = 0; ridx0 < 32; ridx0++) {
    float val0 = in1[((gidx0*32)+ridx0)];
    tg_float4 val1 = *((const tg_float4*)(in2+((ridx0*16)+alu0)));
    acc0 += (val0*val1.x);
    acc1 += (val0*val1.y);
    acc2 += (val0*val1.z);
    acc3 += (val0*val1.w);
  }
  *((tg_float4*)(out0+((gidx0*16)+alu0))) = tg_float4{((acc0>0.0f)?acc0:0.0f), ((acc1>0.0f)?acc1:0.0f), ((acc2>0.0f)?acc2:0.0f), ((acc3>0.0f)?acc3:0.0f)};
}
