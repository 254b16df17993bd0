/* llamacpp-logits: llama.cpp's logits for a GGUF model, for
 * pkg/generate's TestMatchesLlamaCpp (scripts/llamacpp-xcheck.sh builds
 * and runs it). Runs the prompt as one batch, then STEPS greedy steps, and
 * prints "prompt ID...", a "logits ..." line after the prompt and after
 * each step's token (n_vocab floats, %.9g), and "chosen ID..." (the
 * tokens it chose). The KV cache is float32 (llama.cpp's default is
 * float16), so that the cache's rounding is not among the differences.
 *
 * usage: llamacpp-logits MODEL STEPS ID...   (GGML_BACKEND_DIR: the
 * folder of the libggml-cpu-*.so backends) */
#include <stdio.h>
#include <stdlib.h>
#include "llama.h"
#include "ggml-backend.h"

static void quiet(enum ggml_log_level level, const char *text, void *ud) {
  (void)ud;
  if (level >= GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

static bool silent(float progress, void *ud) {
  (void)progress;
  (void)ud;
  return true; /* go on, without llama.cpp's default dots */
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: llamacpp-logits MODEL STEPS ID...\n");
    return 2;
  }
  llama_log_set(quiet, NULL);
  ggml_backend_load_all_from_path(getenv("GGML_BACKEND_DIR"));
  llama_backend_init();
  struct llama_model_params mp = llama_model_default_params();
  mp.progress_callback = silent;
  struct llama_model *m = llama_model_load_from_file(argv[1], mp);
  if (!m) {
    fprintf(stderr, "%s: llama.cpp could not load it\n", argv[1]);
    return 1;
  }
  struct llama_context_params cp = llama_context_default_params();
  cp.type_k = GGML_TYPE_F32;
  cp.type_v = GGML_TYPE_F32;
  cp.n_ctx = cp.n_batch = cp.n_ubatch = 64;
  cp.n_threads = cp.n_threads_batch = 2;
  struct llama_context *c = llama_init_from_model(m, cp);
  if (!c) {
    fprintf(stderr, "%s: no llama.cpp context\n", argv[1]);
    return 1;
  }
  int nv = llama_vocab_n_tokens(llama_model_get_vocab(m));
  int steps = atoi(argv[2]), n = argc - 3;
  if (n > 32 || steps < 0 || steps > 16) {
    fprintf(stderr, "at most 32 prompt ids and 16 steps\n");
    return 2;
  }
  llama_token toks[32], chosen[16];
  printf("prompt");
  for (int i = 0; i < n; i++) {
    toks[i] = atoi(argv[3 + i]);
    printf(" %d", toks[i]);
  }
  printf("\n");
  if (llama_decode(c, llama_batch_get_one(toks, n))) {
    fprintf(stderr, "llama_decode failed\n");
    return 1;
  }
  for (int s = 0;; s++) {
    float *l = llama_get_logits_ith(c, -1);
    int best = 0;
    printf("logits");
    for (int i = 0; i < nv; i++) {
      printf(" %.9g", l[i]);
      if (l[i] > l[best]) best = i;
    }
    printf("\n");
    if (s == steps) break;
    chosen[s] = best;
    if (llama_decode(c, llama_batch_get_one(&chosen[s], 1))) {
      fprintf(stderr, "llama_decode failed\n");
      return 1;
    }
  }
  printf("chosen");
  for (int s = 0; s < steps; s++) printf(" %d", chosen[s]);
  printf("\n");
  llama_free(c);
  llama_model_free(m);
  return 0;
}
