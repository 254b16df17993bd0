#include <metal_stdlib>
using namespace metal;
#ifndef TG_SHL_INT32
#define TG_SHL_INT32
static inline int tg_shl_int32(int a, int b) { return (uint)b >= 32 ? 0 : (int)((uint)a << b); }
#endif
#ifndef TG_SHR_INT32
#define TG_SHR_INT32
static inline int tg_shr_int32(int a, int b) { return (uint)b >= 32 ? (a < 0 ? -1 : 0) : a < 0 ? ~(~a >> b) : a >> b; }
#endif
#ifndef TG_SHR_INT8
#define TG_SHR_INT8
static inline char tg_shr_int8(char a, char b) { return (uint)b >= 8 ? (a < 0 ? -1 : 0) : a < 0 ? ~(~a >> b) : a >> b; }
#endif
#ifndef TG_SHL_UINT8
#define TG_SHL_UINT8
static inline uchar tg_shl_uint8(uchar a, uchar b) { return (uint)b >= 8 ? 0 : (uchar)((uint)a << b); }
#endif
kernel void E_5_6(device uchar *out0 [[buffer(0)]], const device int *in1 [[buffer(1)]], const device char *in2 [[buffer(2)]], uint3 gid [[thread_position_in_grid]]) {
  int gidx1 = gid.x; /* 6 */
  int gidx0 = gid.y; /* 5 */
  int alu0 = ((gidx0*6)+gidx1);
  int val0 = in1[alu0];
  int val1 = in1[((((gidx0+gidx1)%5)*6)+(alu0/5))];
  char val2 = in2[alu0];
  out0[alu0] = tg_shl_uint8(((uchar)tg_shr_int8(((char)((int)((uint)tg_shl_int32(val0, val1)+(uint)tg_shr_int32(val0, 3)))), val2)), 1);
}
