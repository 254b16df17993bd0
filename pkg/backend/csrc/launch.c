/* tgc's CPU launcher: runs one kernel over [0, n) on the calling thread and
 * on worker threads of its own (pthreads the Go runtime does not know).
 *
 * Why C: with the workers as goroutines, every kernel call is a cgo call
 * that the Go scheduler watches; a call longer than a sysmon tick has its
 * P taken away and handed to a fresh thread, which wakes, finds nothing and
 * parks again. On a 2-core machine those extra threads preempt the kernels
 * (decode: thousands of thread switches a second between tgc's own
 * threads). Here a launch is one call from Go; the hand-off is a store and
 * the workers' polling, as in OpenMP's active wait.
 *
 * A launch splits [0, n) into one contiguous range per participant, each
 * in up to the launch's number of pieces (TG_PIECES unless the host asks
 * for more: a long kernel's) run in order; one done with its own range
 * takes the pieces left in the others'. A worker held up (its core taken
 * by another process) then delays the launch by at most the piece it is
 * in, and the participants end at most a piece apart.
 *
 * Waiting, both ways, is a short poll and then a futex: a worker polls for
 * the next launch, the caller for the last pieces of its launch. On a host
 * whose cores other processes share, a thread of ours that lost its core
 * waits in the other core's run queue; a poller there would keep it
 * waiting, a sleeper lets the scheduler move it over.
 *
 * tg_run runs a sequence of launches (a TinyJit replay's step) in one
 * call: the Go side does not come between them.
 *
 * Each range's claim word holds the launch's generation (high 32 bits) and
 * the next piece (low 32 bits): a worker that wakes late for a launch that
 * is over fails its claim and runs nothing, even when the ranges already
 * describe the next launch. */
#include <stdint.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/futex.h>

#ifdef TG_STATS
#include <stdio.h>
#include <stdlib.h>
/* per launch of a batch: times (ns from the launch's start) and pieces */
struct tg_stat {
  int64_t post, seen[2], first[2], done[2], kern[2], end;
  int64_t pieces[2], n, split;
};
static struct tg_stat *tg_cur; /* the launch being timed, or NULL */
static int64_t tg_t0;
#endif

typedef void (*tg_kernel)(void **bufs, const int64_t *vars, int64_t start, int64_t end);

#define TG_MAX 64     /* participants (the caller and the workers) */
#define TG_PIECES 8   /* pieces per range, the least a launch asks for */
#define TG_MAX_PIECES 256

#define TG_LINE __attribute__((aligned(64)))

struct tg_range {
  uint64_t claim;     /* generation << 32 | next piece */
  int64_t start, end, pieces;
} TG_LINE;            /* one cache line per range */

/* The fields are grouped by who writes them when, one cache line per
 * group (a line one core writes while another reads it moves between the
 * cores on every write), and each range has a line of its own. */
static struct {
  /* the launch: the caller writes it once per launch, the workers read it */
  struct {
    uint32_t gen;     /* the launch's generation; the workers' futex word */
    int nranges;
    tg_kernel fn;
    void **bufs;
    const int64_t *vars;
  } TG_LINE;
  /* its end: the participants' counts */
  struct {
    int64_t left;     /* pieces not yet run */
    uint32_t fin;     /* counts launches whose last piece has run: the caller's futex word */
    int waiting;      /* the caller sleeps (or is about to) on fin */
  } TG_LINE;
  /* the rest: set per batch or rarely written */
  struct {
    pthread_mutex_t mu; /* one launch at a time */
    int workers;      /* started */
    int sleepers;
    int used;         /* the most ranges a launch has had */
    int64_t wait_ns;  /* the caller polls this long for the others' pieces before it sleeps */
    int64_t spin_ns;  /* an idle worker polls this long before it sleeps */
  } TG_LINE;
  struct tg_range ranges[TG_MAX];
} tg TG_LINE = {.mu = PTHREAD_MUTEX_INITIALIZER};

static inline void tg_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ volatile("yield");
#endif
}

static int64_t tg_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* tg_work runs pieces of launch gen, its own range's first, until none is
 * left to claim. */
static void tg_work(uint32_t gen, int self) {
  int nr = __atomic_load_n(&tg.nranges, __ATOMIC_ACQUIRE);
  if (self >= nr) return; /* a launch on fewer cores (GOMAXPROCS lowered) */
  int64_t done = 0;
  for (int k = 0; k < nr; k++) {
    struct tg_range *r = &tg.ranges[(self + k) % nr];
    for (;;) {
      uint64_t c = __atomic_load_n(&r->claim, __ATOMIC_ACQUIRE);
      if ((uint32_t)(c >> 32) != gen) goto out; /* that launch is over */
      int64_t i = (int64_t)(uint32_t)c, pieces = r->pieces;
      if (i >= pieces) break;
      if (!__atomic_compare_exchange_n(&r->claim, &c, c + 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) continue;
      /* claimed: the launch is not over, so its fields are still this launch's */
      pieces = r->pieces;
      int64_t n = r->end - r->start;
#ifdef TG_STATS
      int64_t ks = tg_now();
      struct tg_stat *st = __atomic_load_n(&tg_cur, __ATOMIC_ACQUIRE);
      int who = self > 0;
      if (st && done == 0) st->first[who] = ks - tg_t0;
#endif
      tg.fn(tg.bufs, tg.vars, r->start + n * i / pieces, r->start + n * (i + 1) / pieces);
      done++;
#ifdef TG_STATS
      if (st) {
        int64_t ke = tg_now();
        st->kern[who] += ke - ks;
        st->pieces[who]++;
        st->done[who] = ke - tg_t0;
      }
#endif
    }
  }
out:
  /* one write to the shared count per participant, not one per piece: the
   * caller spins on it, so every write is a cache line moved between cores */
  if (done > 0 && __atomic_sub_fetch(&tg.left, done, __ATOMIC_SEQ_CST) == 0) {
    /* the launch's last piece: wake the caller if it went to sleep (it
     * announces it before its last look at left) */
    __atomic_fetch_add(&tg.fin, 1, __ATOMIC_SEQ_CST);
    if (self != 0 && __atomic_load_n(&tg.waiting, __ATOMIC_SEQ_CST))
      syscall(SYS_futex, &tg.fin, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
  }
}

static void *tg_worker(void *arg) {
  /* arg: its index << 32 | the generation when it was started (it works
   * on every later launch, the one that started it included) */
  int self = (int)((uint64_t)(uintptr_t)arg >> 32);
  uint32_t seen = (uint32_t)(uintptr_t)arg;
  for (;;) {
    int64_t deadline = tg_now() + tg.spin_ns;
    uint32_t g;
    for (int i = 0;; i++) {
      g = __atomic_load_n(&tg.gen, __ATOMIC_ACQUIRE);
      if (g != seen) break;
      tg_pause();
      if ((i & 255) == 255 && tg_now() > deadline) {
        /* announce sleeping before the last look: a launch posted after it
         * sees the sleeper and wakes it; one posted before changes gen,
         * which the futex compares */
        __atomic_fetch_add(&tg.sleepers, 1, __ATOMIC_SEQ_CST);
        syscall(SYS_futex, &tg.gen, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
        __atomic_fetch_sub(&tg.sleepers, 1, __ATOMIC_SEQ_CST);
        deadline = tg_now() + tg.spin_ns;
      }
    }
    seen = g;
#ifdef TG_STATS
    {
      struct tg_stat *st = __atomic_load_n(&tg_cur, __ATOMIC_ACQUIRE);
      if (st) st->seen[1] = tg_now() - tg_t0;
    }
#endif
    tg_work(g, self);
  }
  return NULL;
}

/* tg_start starts workers up to cores-1 (tg.mu held): 0, or -1 when one
 * could not be started. */
static int tg_start(int cores) {
  while (tg.workers < cores - 1) {
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    /* The workers start with the process's signals blocked (they inherit
     * the mask): signals meant for the process (a child's exit, SIGINT,
     * the Go runtime's) go to Go's threads. A kernel's own fault
     * (SIGSEGV, SIGBUS, SIGFPE, SIGILL) still reaches Go's handler. */
    sigset_t all, old;
    sigfillset(&all);
    sigdelset(&all, SIGSEGV);
    sigdelset(&all, SIGBUS);
    sigdelset(&all, SIGFPE);
    sigdelset(&all, SIGILL);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int err = pthread_create(&t, &attr, tg_worker, (void *)(uintptr_t)((uint64_t)(tg.workers + 1) << 32 | tg.gen));
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (err != 0) return -1;
    tg.workers++;
  }
  return 0;
}

/* tg_split runs fn over [0, n) on cores participants, 2 <= cores <= n,
 * each range in up to pieces pieces, the workers started (tg.mu held), and
 * returns when every piece has run. */
static void tg_split(tg_kernel fn, void **bufs, const int64_t *vars, int64_t n, int cores, int64_t pieces) {
  if (pieces < TG_PIECES) pieces = TG_PIECES;
  if (pieces > TG_MAX_PIECES) pieces = TG_MAX_PIECES;
  uint32_t gen = tg.gen + 1;
  if (gen == 0) gen = 1;
  /* Every piece of the previous launch has been claimed and run. A late
   * worker may still look at the ranges: first every claim word gets the
   * new generation with no piece to claim (its claims fail from here on),
   * then the ranges change, then their pieces open. */
  if (cores > tg.used) tg.used = cores;
  for (int i = 0; i < tg.used; i++) /* the others' claim words hold generation 0, never a launch's */
    __atomic_store_n(&tg.ranges[i].claim, (uint64_t)gen << 32 | 0xffffffffu, __ATOMIC_RELEASE);
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  int64_t total = 0;
  for (int i = 0; i < cores; i++) {
    struct tg_range *r = &tg.ranges[i];
    r->start = n * i / cores;
    r->end = n * (i + 1) / cores;
    r->pieces = r->end - r->start < pieces ? r->end - r->start : pieces;
    total += r->pieces;
  }
  tg.fn = fn;
  tg.bufs = bufs;
  tg.vars = vars;
  __atomic_store_n(&tg.left, total, __ATOMIC_RELEASE);
  __atomic_store_n(&tg.nranges, cores, __ATOMIC_RELEASE);
  for (int i = 0; i < cores; i++)
    __atomic_store_n(&tg.ranges[i].claim, (uint64_t)gen << 32, __ATOMIC_RELEASE);
#ifdef TG_STATS
  if (tg_cur) tg_cur->post = tg_now() - tg_t0;
#endif
  __atomic_store_n(&tg.gen, gen, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&tg.sleepers, __ATOMIC_SEQ_CST) > 0)
    syscall(SYS_futex, &tg.gen, FUTEX_WAKE_PRIVATE, TG_MAX, NULL, NULL, 0);
  tg_work(gen, 0);
  /* Wait for the pieces others are in: poll a while (they end within a
   * piece's time unless their thread lost its core), then sleep. A thread
   * that lost its core waits in another core's run queue: this one
   * polling on would keep it there, this one asleep lets the scheduler
   * move it here. */
  if (__atomic_load_n(&tg.left, __ATOMIC_ACQUIRE) == 0) return;
  int64_t deadline = tg_now() + tg.wait_ns;
  for (int i = 1; __atomic_load_n(&tg.left, __ATOMIC_ACQUIRE) > 0; i++) {
    tg_pause();
    if ((i & 255) == 0 && tg_now() > deadline) {
      __atomic_store_n(&tg.waiting, 1, __ATOMIC_SEQ_CST);
      for (;;) {
        /* fin changes after left reaches 0 (or for a late worker's
         * earlier launch: then this looks again) */
        uint32_t f = __atomic_load_n(&tg.fin, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&tg.left, __ATOMIC_SEQ_CST) == 0) break;
        syscall(SYS_futex, &tg.fin, FUTEX_WAIT_PRIVATE, f, NULL, NULL, 0);
      }
      __atomic_store_n(&tg.waiting, 0, __ATOMIC_SEQ_CST);
      break;
    }
  }
}

/* tg_launch runs fn over [0, n) on up to cores participants (the caller
 * and cores-1 workers, started on first use), each range in up to pieces
 * pieces (at least TG_PIECES). One launch at a time in the
 * process (every device that loads this library shares its workers):
 * returns 1 without running anything when another launch is in progress,
 * -1 when the workers could not be started, 0 when fn has run. */
int tg_launch(tg_kernel fn, void **bufs, const int64_t *vars, int64_t n, int cores, int64_t spin_ns, int64_t wait_ns, int64_t pieces) {
  if (cores > TG_MAX) cores = TG_MAX;
  if (cores > n) cores = (int)n;
  if (cores < 2) {
    if (n > 0) fn(bufs, vars, 0, n);
    return 0;
  }
  if (pthread_mutex_trylock(&tg.mu) != 0) return 1;
  tg.spin_ns = spin_ns;
  tg.wait_ns = wait_ns;
  if (tg_start(cores) != 0) {
    pthread_mutex_unlock(&tg.mu);
    return -1;
  }
  tg_split(fn, bufs, vars, n, cores, pieces);
  pthread_mutex_unlock(&tg.mu);
  return 0;
}

/* tg_wake wakes the sleeping workers without a launch: they find none and
 * poll for spin_ns before they sleep again. The host calls it before it
 * prepares a batch, so that the batch's first hand-off finds them polling
 * (a futex wake-up on a virtual machine took ~25 µs of a decode step's
 * first parallel launch). */
void tg_wake(void) {
  if (__atomic_load_n(&tg.sleepers, __ATOMIC_SEQ_CST) > 0)
    syscall(SYS_futex, &tg.gen, FUTEX_WAKE_PRIVATE, TG_MAX, NULL, NULL, 0);
}

/* One launch of a batch: fn over [0, n), split across the cores in up to
 * split pieces per range, or run on the caller alone (split 0); ns is set
 * to the time it took. */
struct tg_item {
  tg_kernel fn;
  void **bufs;
  const int64_t *vars;
  int64_t n;
  int64_t split;
  int64_t ns;
};

/* tg_run runs count launches in order, each after the one before has
 * finished, holding the workers for all of them: a TinyJit replay's step
 * is one call from Go, and the workers do not go to sleep between its
 * launches while the caller runs the small ones. Returns as tg_launch
 * does (1: the workers are busy with another launch, nothing has run). */
int tg_run(struct tg_item *items, int64_t count, int cores, int64_t spin_ns, int64_t wait_ns) {
  if (cores > TG_MAX) cores = TG_MAX;
  int locked = 0;
  if (cores >= 2) {
    if (pthread_mutex_trylock(&tg.mu) != 0) return 1;
    locked = 1;
    tg.spin_ns = spin_ns;
  tg.wait_ns = wait_ns;
    if (tg_start(cores) != 0) {
      pthread_mutex_unlock(&tg.mu);
      return -1;
    }
  }
  int64_t t0 = tg_now();
#ifdef TG_STATS
  static struct tg_stat stats[4096];
  static FILE *sf;
  if (!sf) {
    const char *path = getenv("TGC_LAUNCHSTATS");
    sf = path ? fopen(path, "a") : NULL;
  }
#endif
  for (int64_t i = 0; i < count; i++) {
    struct tg_item *it = &items[i];
#ifdef TG_STATS
    struct tg_stat *stp = i < 4096 ? &stats[i] : NULL;
    if (stp) {
      *stp = (struct tg_stat){0};
      stp->n = it->n;
      stp->split = it->split;
    }
    tg_t0 = t0;
    __atomic_store_n(&tg_cur, stp, __ATOMIC_RELEASE);
#endif
    int c = it->n < cores ? (int)it->n : cores;
    if (it->split && c >= 2) tg_split(it->fn, it->bufs, it->vars, it->n, c, it->split);
    else if (it->n > 0) it->fn(it->bufs, it->vars, 0, it->n);
    int64_t t1 = tg_now();
#ifdef TG_STATS
    __atomic_store_n(&tg_cur, NULL, __ATOMIC_RELEASE);
    if (stp) stp->end = t1 - t0;
#endif
    it->ns = t1 - t0;
    t0 = t1;
  }
#ifdef TG_STATS
  if (sf) {
    fprintf(sf, "batch %ld\n", (long)count);
    for (int64_t i = 0; i < count && i < 4096; i++) {
      struct tg_stat *q = &stats[i];
      fprintf(sf, "%ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld\n", (long)i, (long)q->n, (long)q->split, (long)q->post,
              (long)q->seen[1], (long)q->first[0], (long)q->first[1], (long)q->done[0], (long)q->done[1],
              (long)q->kern[0], (long)q->kern[1], (long)q->pieces[0], (long)q->pieces[1], (long)q->end, (long)items[i].ns);
    }
    fflush(sf);
  }
#endif
  if (locked) {
    pthread_mutex_unlock(&tg.mu);
  }
  return 0;
}
