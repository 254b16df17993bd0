/* ggml-xcheck: pkg/quant's TestMatchesGGML data. Quantizes two rows of 1024
 * random normal values (every 97th 4 times larger) with ggml's own
 * ggml_quantize_chunk and dequantizes them with its dequantize_row_*,
 * writing TYPE.blocks and TYPE.f32 (little-endian float32) into the
 * current folder for each quantized type (scripts/llamacpp-xcheck.sh
 * builds and runs it in pkg/quant/testdata/ggml).
 *
 * usage: ggml-xcheck PATH/libggml-base.so */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <math.h>
#include <dlfcn.h>
typedef size_t (*qchunk_t)(int type, const float *src, void *dst, int64_t start, int64_t nrows, int64_t n_per_row, const float *imatrix);
typedef void (*deq_t)(const void *x, float *y, int64_t k);
static uint64_t s = 88172645463325252ull;
static double urand(void){ s ^= s << 13; s ^= s >> 7; s ^= s << 17; return (s >> 11) * (1.0/9007199254740992.0); }
static double nrand(void){ double u=urand(), v=urand(); return sqrt(-2*log(u+1e-300))*cos(6.283185307179586*v); }
int main(int argc, char **argv){
  void *h = dlopen(argv[1], RTLD_NOW); if(!h){fprintf(stderr,"%s\n",dlerror()); return 1;}
  qchunk_t q = (qchunk_t)dlsym(h, "ggml_quantize_chunk");
  struct { int type; const char *name, *deq; int bs, bb; } ts[] = {
    {2,"Q4_0","dequantize_row_q4_0",32,18},{3,"Q4_1","dequantize_row_q4_1",32,20},{6,"Q5_0","dequantize_row_q5_0",32,22},
    {7,"Q5_1","dequantize_row_q5_1",32,24},{8,"Q8_0","dequantize_row_q8_0",32,34},{10,"Q2_K","dequantize_row_q2_K",256,84},
    {11,"Q3_K","dequantize_row_q3_K",256,110},{12,"Q4_K","dequantize_row_q4_K",256,144},{13,"Q5_K","dequantize_row_q5_K",256,176},
    {14,"Q6_K","dequantize_row_q6_K",256,210},{20,"IQ4_NL","dequantize_row_iq4_nl",32,18},
    {23,"IQ4_XS","dequantize_row_iq4_xs",256,136}};
  int rows = 2, n = 1024;
  float *x = malloc(sizeof(float)*rows*n), *y = malloc(sizeof(float)*rows*n);
  for (int i=0;i<rows*n;i++) x[i] = (float)(nrand() * (i % 97 == 0 ? 4.0 : 1.0));
  for (unsigned t=0;t<sizeof ts/sizeof ts[0];t++){
    deq_t d = (deq_t)dlsym(h, ts[t].deq); if(!d||!q){fprintf(stderr,"missing %s\n", ts[t].deq); return 1;}
    size_t nb = (size_t)rows*n/ts[t].bs*ts[t].bb; void *b = calloc(1, nb);
    size_t got = q(ts[t].type, x, b, 0, rows, n, NULL);
    if (got != nb){fprintf(stderr,"%s: %zu bytes, want %zu\n", ts[t].name, got, nb); return 1;}
    d(b, y, (int64_t)rows*n);
    char fn[64]; FILE *f;
    snprintf(fn,64,"%s.blocks",ts[t].name); f=fopen(fn,"wb"); fwrite(b,1,nb,f); fclose(f);
    snprintf(fn,64,"%s.f32",ts[t].name); f=fopen(fn,"wb"); fwrite(y,4,(size_t)rows*n,f); fclose(f);
    printf("%s: %zu bytes\n", ts[t].name, nb);
  }
  return 0;
}
