#ifndef TG_SHL_INT32
#define TG_SHL_INT32
inline int tg_shl_int32(int a, int b) { return (uint)b >= 32 ? 0 : (int)((uint)a << b); }
#endif
#ifndef TG_SHR_INT32
#define TG_SHR_INT32
inline int tg_shr_int32(int a, int b) { return (uint)b >= 32 ? (a < 0 ? -1 : 0) : a < 0 ? ~(~a >> b) : a >> b; }
#endif
#ifndef TG_SHR_INT8
#define TG_SHR_INT8
inline char tg_shr_int8(char a, char b) { return (uint)b >= 8 ? (a < 0 ? -1 : 0) : a < 0 ? ~(~a >> b) : a >> b; }
#endif
#ifndef TG_SHL_UINT8
#define TG_SHL_UINT8
inline uchar tg_shl_uint8(uchar a, uchar b) { return (uint)b >= 8 ? 0 : (uchar)((uint)a << b); }
#endif
__kernel __attribute__((reqd_work_group_size(6, 5, 1))) void E_5_6(__global uchar *restrict out0, __global const int *restrict in1, __global const char *restrict in2) {
  int gidx1 = get_global_id(0); /* 6 */
  int gidx0 = get_global_id(1); /* 5 */
  int alu0 = ((gidx0*6)+gidx1);
  int val0 = in1[alu0];
  int val1 = in1[((((gidx0+gidx1)%5)*6)+(alu0/5))];
  char val2 = in2[alu0];
  out0[alu0] = tg_shl_uint8(((uchar)tg_shr_int8(((char)((int)((uint)tg_shl_int32(val0, val1)+(uint)tg_shr_int32(val0, 3)))), val2)), 1);
}
