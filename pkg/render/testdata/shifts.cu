#ifndef INFINITY
#define INFINITY (__int_as_float(0x7f800000))
#endif
#ifndef NAN
#define NAN (__int_as_float(0x7fffffff))
#endif
#ifndef TG_SHL_INT32
#define TG_SHL_INT32
__device__ static inline int tg_shl_int32(int a, int b) { return (unsigned int)b >= 32 ? 0 : (int)((unsigned int)a << b); }
#endif
#ifndef TG_SHR_INT32
#define TG_SHR_INT32
__device__ static inline int tg_shr_int32(int a, int b) { return (unsigned int)b >= 32 ? (a < 0 ? -1 : 0) : a < 0 ? ~(~a >> b) : a >> b; }
#endif
#ifndef TG_SHR_INT8
#define TG_SHR_INT8
__device__ static inline signed char tg_shr_int8(signed char a, signed char b) { return (unsigned int)b >= 8 ? (a < 0 ? -1 : 0) : a < 0 ? ~(~a >> b) : a >> b; }
#endif
#ifndef TG_SHL_UINT8
#define TG_SHL_UINT8
__device__ static inline unsigned char tg_shl_uint8(unsigned char a, unsigned char b) { return (unsigned int)b >= 8 ? 0 : (unsigned char)((unsigned int)a << b); }
#endif
extern "C" __global__ void __launch_bounds__(30) E_5_6(unsigned char *__restrict__ out0, const int *__restrict__ in1, const signed char *__restrict__ in2) {
  int gidx1 = threadIdx.x; /* 6 */
  int gidx0 = threadIdx.y; /* 5 */
  int alu0 = ((gidx0*6)+gidx1);
  int val0 = in1[alu0];
  int val1 = in1[((((gidx0+gidx1)%5)*6)+(alu0/5))];
  signed char val2 = in2[alu0];
  out0[alu0] = tg_shl_uint8(((unsigned char)tg_shr_int8(((signed char)((int)((unsigned int)tg_shl_int32(val0, val1)+(unsigned int)tg_shr_int32(val0, 3)))), val2)), 1);
}
