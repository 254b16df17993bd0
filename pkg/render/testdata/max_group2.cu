#ifndef INFINITY
#define INFINITY (__int_as_float(0x7f800000))
#endif
#ifndef NAN
#define NAN (__int_as_float(0x7fffffff))
#endif
extern "C" __global__ void __launch_bounds__(256) r_3_64_32_4096(float *__restrict__ out0, const float *__restrict__ in1, const float *__restrict__ in2) {
  int lidx0 = threadIdx.x; /* lane of 256 */
  int gidx0 = blockIdx.y; /* 3 */
  float acc0 = -INFINITY;
  for (int rflat0 = lidx0; rflat0 < 2048; rflat0 += 256) {
    int ridx0 = (rflat0/32);
    int ridx1 = (rflat0%32);
    float val0 = in1[(((gidx0*2048)+(ridx0*32))+ridx1)];
    acc0 = ((val0>acc0)?val0:acc0);
  }
  __shared__ float part0[256];
  part0[lidx0] = acc0;
  __syncthreads();
  for (int s = 128; s > 0; s >>= 1) {
    if (lidx0 < s) { part0[lidx0] = ((part0[lidx0+s]>part0[lidx0])?part0[lidx0+s]:part0[lidx0]); }
    __syncthreads();
  }
  acc0 = part0[0];
  float acc1 = 0.0f;
  for (int ridx2 = lidx0; ridx2 < 4096; ridx2 += 256) {
    float val1 = in2[((gidx0*4096)+ridx2)];
    acc1 += val1;
  }
  __shared__ float part1[256];
  part1[lidx0] = acc1;
  __syncthreads();
  for (int s = 128; s > 0; s >>= 1) {
    if (lidx0 < s) { part1[lidx0] += part1[lidx0+s]; }
    __syncthreads();
  }
  acc1 = part1[0];
  if (lidx0 == 0) {
    out0[gidx0] = (acc0+acc1);
  }
}
