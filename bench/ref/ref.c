/* Reference measurements for `tgc bench --ref`, taken on the same machine
 * in the same run as tgc's: OpenBLAS sgemm at the suite's sizes, the
 * suite's conv2d as im2col + sgemm, the matmuls of llama_prefill_128, a
 * STREAM triad (memory bandwidth) and an FMA loop (peak FLOP/s). One JSON object
 * per line, like `tgc bench --json`. Built by `make bench/ref/ref`. */
#define _POSIX_C_SOURCE 200809L
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <immintrin.h>
#include <pthread.h>
#include <stdint.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The process's CPU time: with `threads` threads busy it advances
 * threads times as fast as the clock, and other processes taking turns on
 * the cores do not stretch it (cpu_seconds in the output, per thread). */
static int threads = 2;
static double cpu(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (ts.tv_sec + ts.tv_nsec * 1e-9) / threads;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *t, int n) {
  qsort(t, n, sizeof *t, cmp);
  return t[n / 2];
}

static float *buffer(size_t n) {
  float *p = aligned_alloc(64, n * sizeof(float));
  for (size_t i = 0; i < n; i++) p[i] = (float)((i * 2654435761u) % 1000) / 1000.0f;
  return p;
}

/* C = A B for A m x k, B k x n (row-major), reported as openblas_sgemm_N
 * for a square one and openblas_sgemm_MxKxN otherwise. */
static void sgemm(int m, int k, int n, int iters) {
  float *a = buffer((size_t)m * k), *b = buffer((size_t)k * n), *c = buffer((size_t)m * n);
  double t[64], ct[64];
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1, a, k, b, n, 0, c, n);
  for (int i = 0; i < iters; i++) {
    double s = now(), cs = cpu();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1, a, k, b, n, 0, c, n);
    t[i] = now() - s, ct[i] = cpu() - cs;
  }
  double med = median(t, iters), cm = median(ct, iters);
  char name[64];
  if (m == k && k == n) snprintf(name, sizeof name, "%d", n);
  else snprintf(name, sizeof name, "%dx%dx%d", m, k, n);
  printf("{\"name\": \"openblas_sgemm_%s\", \"seconds\": %g, \"gflops\": %g, \"gbps\": %g, \"cpu_seconds\": %g}\n", name,
         med, 2.0 * m * n * k / med / 1e9, 4.0 * ((double)m * k + (double)k * n + (double)m * n) / med / 1e9, cm);
  free(a), free(b), free(c);
}

/* sgemmN or sgemmMxKxN: sgemm of that shape, 21 to 3 runs by its size (512:
 * 21, 1024: 11, 2048: 5, 4096: 3); 0 if p names none or a size past
 * 16384 (65536 for n). */
static int sgemm_named(const char *p) {
  int m, k, n, used = 0;
  if (sscanf(p, "sgemm%dx%dx%d%n", &m, &k, &n, &used) == 3 && p[used] == 0) {
  } else if (sscanf(p, "sgemm%d%n", &n, &used) == 1 && p[used] == 0) {
    m = k = n;
  } else {
    return 0;
  }
  if (m < 1 || k < 1 || n < 1 || m > 16384 || k > 16384 || n > 65536) return 0;
  double flops = 2.0 * m * k * n;
  sgemm(m, k, n, flops <= 3e8 ? 21 : flops <= 3e9 ? 11 : flops <= 2e10 ? 5 : 3);
  return 1;
}

/* The suite's conv2d (batch 32, 64->64 channels, 56x56, 3x3, pad 1) as
 * im2col + OpenBLAS sgemm per image: the usual library formulation. */
static void conv_im2col(int iters) {
  enum { B = 32, C = 64, K = 64, H = 56, W = 56, R = 3 };
  float *x = buffer((size_t)B * C * H * W), *w = buffer((size_t)K * C * R * R);
  float *out = buffer((size_t)B * K * H * W), *col = buffer((size_t)C * R * R * H * W);
  double t[64], ct[64];
  for (int it = -1; it < iters; it++) {
    double s = now(), cs = cpu();
    for (int b = 0; b < B; b++) {
      const float *xb = x + (size_t)b * C * H * W;
      for (int c = 0; c < C; c++)
        for (int ky = 0; ky < R; ky++)
          for (int kx = 0; kx < R; kx++) {
            float *row = col + ((size_t)(c * R + ky) * R + kx) * H * W;
            for (int y = 0; y < H; y++) {
              int iy = y + ky - 1;
              for (int xx = 0; xx < W; xx++) {
                int ix = xx + kx - 1;
                row[y * W + xx] = (iy >= 0 && iy < H && ix >= 0 && ix < W) ? xb[(c * H + iy) * W + ix] : 0.0f;
              }
            }
          }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, K, H * W, C * R * R, 1, w, C * R * R, col, H * W, 0,
                  out + (size_t)b * K * H * W, H * W);
    }
    if (it >= 0) t[it] = now() - s, ct[it] = cpu() - cs;
  }
  double m = median(t, iters), cm = median(ct, iters);
  double flops = 2.0 * B * K * H * W * C * R * R;
  printf("{\"name\": \"im2col_sgemm_conv2d\", \"seconds\": %g, \"gflops\": %g, \"gbps\": 0, \"cpu_seconds\": %g}\n", m,
         flops / m / 1e9, cm);
  free(x), free(w), free(out), free(col);
}

struct triad { float *a, *b, *c; size_t lo, hi; int nt; };

/* a = b + 3c over [lo, hi). With nt (AVX-512 hosts), the whole aligned
 * lines of a are written with non-temporal stores (vmovntps), around the
 * caches: a plain store to a line in no cache reads the line first, so the
 * plain triad moves 16 bytes an element for the 12 STREAM counts; gcc
 * emits plain stores for the loop (checked in its -O3 -march=native code).
 * tgc writes large outputs around the caches too (its stream_stores pass),
 * so the reference must be allowed to: stream() reports the faster kind. */
static void *triad_part(void *p) {
  struct triad *t = p;
  size_t i = t->lo;
#ifdef __AVX512F__
  if (t->nt) {
    for (; i < t->hi && ((uintptr_t)(t->a + i) & 63); i++) t->a[i] = t->b[i] + 3.0f * t->c[i];
    __m512 three = _mm512_set1_ps(3.0f);
    for (; i + 16 <= t->hi; i += 16)
      _mm512_stream_ps(t->a + i, _mm512_fmadd_ps(three, _mm512_loadu_ps(t->c + i), _mm512_loadu_ps(t->b + i)));
    _mm_sfence();
  }
#endif
  for (; i < t->hi; i++) t->a[i] = t->b[i] + 3.0f * t->c[i];
  return NULL;
}

/* The matmuls of tgc's llama_prefill_128 (the 110M shape: dim 768, 12
 * layers and heads, hidden 2048, vocab 32000) in OpenBLAS: per layer the
 * q, k, v, o projections and the SwiGLU FFN of 128 rows, and per head the
 * scores and the weighted values (full squares: OpenBLAS has no causal
 * form); in the last layer, as in models/llama.tg and llama.cpp, the keys
 * and values of the 128 rows and the rest for the last row only; the
 * classifier for the last row. The rate is reported with tgc's FLOP count
 * for the workload (causal attention), so the ratio of the two rates is
 * the ratio of the times. */
static void sgemm_prefill(int iters) {
  enum { T = 128, D = 768, L = 12, H = 12, HD = 64, F = 2048, V = 32000 };
  float *x = buffer((size_t)T * F), *y = buffer((size_t)T * F), *s = buffer((size_t)T * T);
  float *wq = buffer((size_t)D * D), *w1 = buffer((size_t)F * D), *w2 = buffer((size_t)D * F), *cls = buffer((size_t)V * D);
  double t[64], ct[64];
  for (int it = -1; it < iters; it++) {
    double st = now(), cs = cpu();
    for (int l = 0; l < L; l++) {
      int q = l == L - 1 ? 1 : T; /* the rows that go on past the keys and values */
      for (int p = 0; p < 2; p++)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, D, D, 1, x, D, wq, D, 0, y, D);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, q, D, D, 1, x, D, wq, D, 0, y, D);
      for (int h = 0; h < H; h++) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, q, T, HD, 1, x + h * HD, D, y + h * HD, D, 0, s, T);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, q, HD, T, 1, s, T, y + h * HD, D, 0, x + h * HD, D);
      }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, q, D, D, 1, x, D, wq, D, 0, y, D);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, q, F, D, 1, x, D, w1, D, 0, y, F);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, q, F, D, 1, x, D, w1, D, 0, y, F);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, q, D, F, 1, y, F, w2, F, 0, x, D);
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, 1, V, D, 1, x, D, cls, D, 0, y, V);
    if (it >= 0) t[it] = now() - st, ct[it] = cpu() - cs;
  }
  double m = median(t, iters), cm = median(ct, iters);
  double kv = 2.0 * D * D, rest = 2.0 * D * D + 3.0 * D * F; /* a token's multiply-adds in one layer */
  double flops = 2.0 * ((L - 1) * (kv + rest) * T + kv * T + rest + (double)V * D) +
                 (L - 1) * 2.0 * 2 * D * (double)T * T / 2 + 2.0 * 2 * D * T;
  printf("{\"name\": \"openblas_llama_prefill_128\", \"seconds\": %g, \"gflops\": %g, \"gbps\": 0, \"cpu_seconds\": %g}\n", m,
         flops / m / 1e9, cm);
  free(x), free(y), free(s), free(wq), free(w1), free(w2), free(cls);
}

/* The fastest of the timed runs, as STREAM reports its rates ("best rate"):
 * on a machine other processes share, a run that lost its core for a while
 * measures the neighbours, not the memory; the median of seven such runs of
 * the triad moved 44-77 GB/s between calls on a loaded 2-core Zen 5 guest. */
static double best(double *t, int n) {
  double m = t[0];
  for (int i = 1; i < n; i++)
    if (t[i] < m) m = t[i];
  return m;
}

/* STREAM triad a = b + s*c over 64M floats (three 256 MiB arrays, past
 * any core's last level cache: a Zen 5 CCD's L3 is 32 MiB), split across
 * threads; the best of the runs, with plain stores and (AVX-512) with
 * non-temporal ones, alternated run by run. stream_triad is the faster
 * kind's best (the memory's rate as a C loop gets it, what tgc's
 * memory-bound workloads are compared with); stream_triad_plain and
 * stream_triad_nt are each kind's. The arrays are made once (serve runs
 * it again and again). */
enum { STREAM_N = 64 << 20 };
static float *triad_a, *triad_b, *triad_c;

/* One timed triad of each kind into t[kind][it], ct[kind][it]. */
static void triad_once(double t[2][64], double ct[2][64], int it, int kinds) {
  for (int nt = 0; nt < kinds; nt++) {
    pthread_t th[64];
    struct triad parts[64];
    size_t n = STREAM_N;
    double s = now(), cs = cpu();
    for (int k = 0; k < threads; k++) {
      parts[k] = (struct triad){triad_a, triad_b, triad_c, n * k / threads, n * (k + 1) / threads, nt};
      pthread_create(&th[k], NULL, triad_part, &parts[k]);
    }
    for (int k = 0; k < threads; k++) pthread_join(th[k], NULL);
    if (it >= 0) t[nt][it] = now() - s, ct[nt][it] = cpu() - cs;
  }
}

static void stream(int iters) {
  double t[2][64], ct[2][64];
#ifdef __AVX512F__
  int kinds = 2;
#else
  int kinds = 1;
#endif
  if (!triad_a) {
    triad_a = buffer(STREAM_N), triad_b = buffer(STREAM_N), triad_c = buffer(STREAM_N);
    triad_once(t, ct, -1, kinds); /* a warm-up run */
  }
  for (int it = 0; it < iters; it++) triad_once(t, ct, it, kinds);
  const char *names[2] = {"stream_triad_plain", "stream_triad_nt"};
  double bm = 1e30, bcm = 1e30, n = STREAM_N;
  for (int nt = 0; nt < kinds; nt++) {
    double m = best(t[nt], iters), cm = best(ct[nt], iters);
    printf("{\"name\": \"%s\", \"seconds\": %g, \"gflops\": %g, \"gbps\": %g, \"cpu_seconds\": %g}\n", names[nt], m,
           2.0 * n / m / 1e9, 3.0 * 4 * n / m / 1e9, cm);
    if (m < bm) bm = m, bcm = cm;
  }
  printf("{\"name\": \"stream_triad\", \"seconds\": %g, \"gflops\": %g, \"gbps\": %g, \"cpu_seconds\": %g}\n", bm,
         2.0 * n / bm / 1e9, 3.0 * 4 * n / bm / 1e9, bcm);
}

struct sumpart { const unsigned *p; size_t lo, hi; unsigned s; };

static void *sum_part(void *p) {
  struct sumpart *t = p;
  unsigned s = 0;
  for (size_t i = t->lo; i < t->hi; i++) s += t->p[i];
  t->s = s;
  return NULL;
}

/* STREAM-style read bandwidth: the sum of 64M 4-byte words (integer, so
 * the compiler vectorizes it), split across threads; the best of the runs. tgc's own measure
 * (bench.ReadBandwidth, Go) is what llama_decode reports against. */
static unsigned *read_a;

static void stream_read(int iters) {
  size_t n = STREAM_N;
  double t[64], ct[64];
  int it = 0;
  if (!read_a) read_a = (unsigned *)buffer(n), it = -1; /* a warm-up run */
  for (; it < iters; it++) {
    pthread_t th[64];
    struct sumpart parts[64];
    double s = now(), cs = cpu();
    for (int k = 0; k < threads; k++) {
      parts[k] = (struct sumpart){read_a, n * k / threads, n * (k + 1) / threads, 0};
      pthread_create(&th[k], NULL, sum_part, &parts[k]);
    }
    for (int k = 0; k < threads; k++) pthread_join(th[k], NULL);
    if (it >= 0) t[it] = now() - s, ct[it] = cpu() - cs;
  }
  double m = best(t, iters), cm = best(ct, iters);
  printf("{\"name\": \"stream_read\", \"seconds\": %g, \"gflops\": 0, \"gbps\": %g, \"cpu_seconds\": %g}\n", m,
         4.0 * n / m / 1e9, cm);
}

/* The FMA peak: independent chains of fused multiply-adds in the widest
 * vectors the host has (zmm with AVX-512, else ymm), enough of them to
 * cover the FMA latency times the FMA ports (4-5 cycles x 2 ports on
 * current x86 cores: 8-10 chains; 16 with 32 zmm registers, 12 with 16 ymm
 * ones, so none spills). GCC's vector extensions give vfmadd231ps on the
 * registers; the loop body is one FMA per accumulator and a counter. */
#ifdef __AVX512F__
#define PEAK_LANES 16
#define PEAK_ACC 16
#else
#define PEAK_LANES 8
#define PEAK_ACC 12
#endif
typedef float peakvec __attribute__((vector_size(PEAK_LANES * 4)));

static void *fma_part(void *p) {
  long iters = *(long *)p;
  peakvec x, y;
  for (int l = 0; l < PEAK_LANES; l++) x[l] = 1.0000001f, y[l] = 0.9999999f;
  /* named accumulators, not an array: gcc keeps each in a register */
  peakvec a0 = x * 0, a1 = x * 1, a2 = x * 2, a3 = x * 3, a4 = x * 4, a5 = x * 5, a6 = x * 6, a7 = x * 7,
          a8 = x * 8, a9 = x * 9, a10 = x * 10, a11 = x * 11;
#if PEAK_ACC == 16
  peakvec a12 = x * 12, a13 = x * 13, a14 = x * 14, a15 = x * 15;
#endif
  for (long i = 0; i < iters; i++) {
    a0 = a0 * x + y, a1 = a1 * x + y, a2 = a2 * x + y, a3 = a3 * x + y;
    a4 = a4 * x + y, a5 = a5 * x + y, a6 = a6 * x + y, a7 = a7 * x + y;
    a8 = a8 * x + y, a9 = a9 * x + y, a10 = a10 * x + y, a11 = a11 * x + y;
#if PEAK_ACC == 16
    a12 = a12 * x + y, a13 = a13 * x + y, a14 = a14 * x + y, a15 = a15 * x + y;
#endif
  }
  peakvec s = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11;
#if PEAK_ACC == 16
  s += a12 + a13 + a14 + a15;
#endif
  *(float *)p = s[0]; /* keep the result alive */
  return NULL;
}

/* The best of several runs of a few tenths of a second each: a peak, not a
 * typical figure (the other core's neighbours and the clock move it). */
static void peak(void) {
  long iters = 10000000;
  double best = 1e30, cbest = 1e30;
  for (int rep = 0; rep < 7; rep++) {
    pthread_t th[64];
    long args[64];
    double s = now(), cs = cpu();
    for (int k = 0; k < threads; k++) {
      args[k] = iters;
      pthread_create(&th[k], NULL, fma_part, &args[k]);
    }
    for (int k = 0; k < threads; k++) pthread_join(th[k], NULL);
    double m = now() - s, cm = cpu() - cs;
    if (m < best) best = m;
    if (cm < cbest) cbest = cm;
  }
  double flops = 2.0 * PEAK_LANES * PEAK_ACC * iters * threads;
  printf("{\"name\": \"fma_peak\", \"seconds\": %g, \"gflops\": %g, \"gbps\": 0, \"cpu_seconds\": %g}\n", best,
         flops / best / 1e9, cbest);
}

/* One measurement by name; iters is the memory measurements' runs. */
static int part(const char *p, int iters) {
  int all = !strcmp(p, "all"), known = all;
  if (all) sgemm(512, 512, 512, 21), sgemm(1024, 1024, 1024, 11), sgemm(2048, 2048, 2048, 5), sgemm(4096, 4096, 4096, 3);
  else if (sgemm_named(p)) known = 1;
  if (all || !strcmp(p, "conv")) conv_im2col(5), known = 1;
  if (all || !strcmp(p, "prefill")) sgemm_prefill(5), known = 1;
  if (all || !strcmp(p, "triad")) stream(iters), known = 1;
  if (all || !strcmp(p, "read")) stream_read(iters), known = 1;
  if (all || !strcmp(p, "peak")) peak(), known = 1;
  return known;
}

/* serve: a line of part names on stdin runs each once (the memory
 * measurements: one run; the triad one of each kind), answered by their
 * JSON lines and {"name": "end"}, so that `tgc bench --ref` can measure
 * the bus right before each run of a memory-bound workload; the arrays
 * are made on the first request. */
static void serve(void) {
  char line[256];
  while (fgets(line, sizeof line, stdin)) {
    for (char *p = strtok(line, " \t\n"); p; p = strtok(NULL, " \t\n"))
      if (!part(p, 1)) printf("{\"name\": \"unknown\", \"part\": \"%.64s\"}\n", p);
    printf("{\"name\": \"end\"}\n");
    fflush(stdout);
  }
}

/* ref [threads [part...]]: every measurement, or only the parts named
 * (sgemmN or sgemmMxKxN, conv prefill triad read peak), so that `tgc
 * bench --ref` can take each workload's reference right before it; ref
 * threads serve: see serve. */
int main(int argc, char **argv) {
  threads = argc > 1 ? atoi(argv[1]) : 2;
  if (threads < 1 || threads > 64) threads = 2;
  openblas_set_num_threads(threads);
  if (argc == 3 && !strcmp(argv[2], "serve")) {
    serve();
    return 0;
  }
  for (int i = argc > 2 ? 2 : 1; i < (argc > 2 ? argc : 2); i++)
    if (!part(argc > 2 ? argv[i] : "all", 10)) {
      fprintf(stderr, "ref: no measurement %s\n", argv[i]);
      return 2;
    }
  return 0;
}
