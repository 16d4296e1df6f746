// Read bandwidth now: T threads each read their part of an S MiB buffer (past L3) P times; prints the best
// pass as GB/s. bench/read-bandwidth.ts builds it once and records it beside each timed run, because
// another tenant's memory traffic on the host slows a decode without showing in this machine's load.
// Usage: read-bandwidth <MiB> <threads> <passes>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct { const uint64_t *p; size_t n; uint64_t acc; } part_t;

static pthread_barrier_t start_barrier, end_barrier;
static int passes;
static double best_s = 1e30;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

// Eight independent OR chains: the loop is bound by loads, not by one dependency chain (vectorized at -O3).
static uint64_t read_part(const uint64_t *p, size_t n) {
  uint64_t a[8] = {0};
  for (size_t i = 0; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; k++) a[k] |= p[i + k];
  return a[0] | a[1] | a[2] | a[3] | a[4] | a[5] | a[6] | a[7];
}

static void *worker(void *arg) {
  part_t *w = arg;
  for (int r = 0; r < passes; r++) {
    pthread_barrier_wait(&start_barrier);
    w->acc |= read_part(w->p, w->n);
    pthread_barrier_wait(&end_barrier);
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 4) { fprintf(stderr, "usage: read-bandwidth <MiB> <threads> <passes>\n"); return 2; }
  size_t mib = strtoul(argv[1], NULL, 10);
  int threads = atoi(argv[2]);
  passes = atoi(argv[3]);
  if (mib < 1 || threads < 1 || threads > 256 || passes < 1) { fprintf(stderr, "read-bandwidth: bad arguments\n"); return 2; }
  size_t words = (mib << 20) / 8;
  uint64_t *buf = aligned_alloc(64, words * 8);
  if (!buf) { fprintf(stderr, "read-bandwidth: out of memory\n"); return 1; }
  memset(buf, 1, words * 8);
  part_t *parts = calloc(threads, sizeof(part_t));
  pthread_t *tids = calloc(threads, sizeof(pthread_t));
  pthread_barrier_init(&start_barrier, NULL, threads + 1);
  pthread_barrier_init(&end_barrier, NULL, threads + 1);
  size_t per = (words / threads) & ~(size_t)7;
  for (int t = 0; t < threads; t++) {
    parts[t].p = buf + per * t;
    parts[t].n = per;
    pthread_create(&tids[t], NULL, worker, &parts[t]);
  }
  uint64_t acc = 0;
  for (int r = 0; r < passes; r++) {
    double t0 = now_s();
    pthread_barrier_wait(&start_barrier);
    pthread_barrier_wait(&end_barrier);
    double s = now_s() - t0;
    if (s < best_s) best_s = s;
  }
  for (int t = 0; t < threads; t++) { pthread_join(tids[t], NULL); acc |= parts[t].acc; }
  // acc is printed so the reads cannot be optimized away (every byte is 1: it is never 0).
  printf("%.2f %llx\n", (double)(per * threads * 8) / best_s / 1e9, (unsigned long long)(acc & 1));
  return acc ? 0 : 1;
}
