// Multiply-add throughput now: T threads each run independent chains of vector FMAs (12 accumulators, more
// than latency x pipes) for a fixed count; prints the best of P passes as G multiply-adds per second (lanes).
// W = 128 is the widest vector WebAssembly SIMD has (V8 issues one 128-bit vfmadd per relaxed f32x4 madd);
// W = 256 is what native llama.cpp's AVX2 kernels issue. bench/compute-peak.ts builds it once.
// Usage: fma-peak <128|256> <threads> <passes>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef float v4 __attribute__((vector_size(16)));
typedef float v8 __attribute__((vector_size(32)));

// Multiply-adds per thread per pass: ~0.1 s at the rates seen here.
#define ITERS (1L << 24)
#define CHAINS 12

static pthread_barrier_t start_barrier, end_barrier;
static int passes, width;
static volatile float sink;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

// acc = acc * m + a on CHAINS independent accumulators; m and a keep values finite (m < 1).
#define CHAIN_LOOP(V, N)                                                     \
  do {                                                                       \
    V acc[CHAINS], m, a;                                                     \
    for (int l = 0; l < N; l++) { m[l] = 0.999f; a[l] = 0.001f * (l + 1); } \
    for (int c = 0; c < CHAINS; c++) acc[c] = a * (float)c;                  \
    for (long i = 0; i < ITERS; i++)                                         \
      for (int c = 0; c < CHAINS; c++) acc[c] = acc[c] * m + a;              \
    float s = 0;                                                             \
    for (int c = 0; c < CHAINS; c++) s += acc[c][0];                         \
    sink = s;                                                                \
  } while (0)

static void run_pass(void) {
  if (width == 256) CHAIN_LOOP(v8, 8);
  else CHAIN_LOOP(v4, 4);
}

static void *worker(void *arg) {
  (void)arg;
  for (int r = 0; r < passes; r++) {
    pthread_barrier_wait(&start_barrier);
    run_pass();
    pthread_barrier_wait(&end_barrier);
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 4) { fprintf(stderr, "usage: fma-peak <128|256> <threads> <passes>\n"); return 2; }
  width = atoi(argv[1]);
  int threads = atoi(argv[2]);
  passes = atoi(argv[3]);
  if ((width != 128 && width != 256) || threads < 1 || threads > 256 || passes < 1) { fprintf(stderr, "fma-peak: bad arguments\n"); return 2; }
  pthread_barrier_init(&start_barrier, NULL, threads);
  pthread_barrier_init(&end_barrier, NULL, threads);
  pthread_t *ts = malloc(sizeof(pthread_t) * threads);
  for (int t = 1; t < threads; t++) pthread_create(&ts[t], NULL, worker, NULL);
  double best = 1e30;
  for (int r = 0; r < passes; r++) {
    pthread_barrier_wait(&start_barrier);
    double t0 = now_s();
    run_pass();
    pthread_barrier_wait(&end_barrier);
    double dt = now_s() - t0;
    if (dt < best) best = dt;
  }
  for (int t = 1; t < threads; t++) pthread_join(ts[t], NULL);
  double lanes = width / 32;
  printf("%.3f\n", (double)ITERS * CHAINS * lanes * threads / best / 1e9);
  return 0;
}
