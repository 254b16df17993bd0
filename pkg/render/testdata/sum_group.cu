#ifndef INFINITY
#define INFINITY (__int_as_float(0x7f800000))
#endif
#ifndef NAN
#define NAN (__int_as_float(0x7fffffff))
#endif
extern "C" __global__ void __launch_bounds__(256) r_4_4096(float *__restrict__ out0, const float *__restrict__ in1) {
  int lidx0 = threadIdx.x; /* lane of 256 */
  int gidx0 = blockIdx.y; /* 4 */
  float acc0 = 0.0f;
  for (int ridx0 = lidx0; ridx0 < 4096; ridx0 += 256) {
    float val0 = in1[((gidx0*4096)+ridx0)];
    acc0 += val0;
  }
  __shared__ float part0[256];
  part0[lidx0] = acc0;
  __syncthreads();
  for (int s = 128; s > 0; s >>= 1) {
    if (lidx0 < s) { part0[lidx0] += part0[lidx0+s]; }
    __syncthreads();
  }
  acc0 = part0[0];
  if (lidx0 == 0) {
    out0[gidx0] = acc0;
  }
}
