#include <stdint.h>
#include <math.h>
void E_4_4(void **bufs, const int64_t *vars, int64_t start, int64_t end) {
  _Float16 *restrict out0 = (_Float16 *)bufs[0];
  const _Float16 *restrict in1 = (const _Float16 *)bufs[1];
  (void)vars;
  for (int gidx0 = start; gidx0 < end; gidx0++) {
    _Float16 val0 = in1[gidx0];
    out0[gidx0] = ((_Float16)(((float)val0)*((float)val0)));
  }
}
