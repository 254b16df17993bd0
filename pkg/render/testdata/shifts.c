#include <stdint.h>
#include <math.h>
#ifndef TG_SHL_INT32
#define TG_SHL_INT32
static inline int tg_shl_int32(int a, int b) { return (uint32_t)b >= 32 ? 0 : (int)((uint32_t)a << b); }
#endif
#ifndef TG_SHR_INT32
#define TG_SHR_INT32
static inline int tg_shr_int32(int a, int b) { return (uint32_t)b >= 32 ? (a < 0 ? -1 : 0) : a < 0 ? ~(~a >> b) : a >> b; }
#endif
#ifndef TG_SHR_INT8
#define TG_SHR_INT8
static inline signed char tg_shr_int8(signed char a, signed char b) { return (uint32_t)b >= 8 ? (a < 0 ? -1 : 0) : a < 0 ? ~(~a >> b) : a >> b; }
#endif
#ifndef TG_SHL_UINT8
#define TG_SHL_UINT8
static inline unsigned char tg_shl_uint8(unsigned char a, unsigned char b) { return (uint32_t)b >= 8 ? 0 : (unsigned char)((uint32_t)a << b); }
#endif
void E_5_6(void **bufs, const int64_t *vars, int64_t start, int64_t end) {
  unsigned char *restrict out0 = (unsigned char *)bufs[0];
  const int *restrict in1 = (const int *)bufs[1];
  const signed char *restrict in2 = (const signed char *)bufs[2];
  (void)vars;
  for (int gidx0 = start; gidx0 < end; gidx0++) {
    for (int gidx1 = 0; gidx1 < 6; gidx1++) {
      int alu0 = ((gidx0*6)+gidx1);
      int val0 = in1[alu0];
      int val1 = in1[((((gidx0+gidx1)%5)*6)+(alu0/5))];
      signed char val2 = in2[alu0];
      out0[alu0] = tg_shl_uint8(((unsigned char)tg_shr_int8(((signed char)((int)((uint32_t)tg_shl_int32(val0, val1)+(uint32_t)tg_shr_int32(val0, 3)))), val2)), 1);
    }
  }
}
