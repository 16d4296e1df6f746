// Golden vectors for ggml's K-quants, produced by the real ggml shipped inside node-llama-cpp.
// For each case: deterministic input -> quantize_row_*_ref bytes -> dequantize_row_* float bits.
// Also dumps ggml's type table (name, block size, type size) so src/gguf/types.ts is checked against it.
// Not part of npm test; run tools/golden/kquants_golden.sh to regenerate test/golden/kquants/*.json.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

// Prototypes from ggml-quants.h / ggml.h (the .so ships no headers); blocks are passed as raw bytes.
void quantize_row_q4_K_ref(const float *x, void *y, int64_t k);
void quantize_row_q5_K_ref(const float *x, void *y, int64_t k);
void quantize_row_q6_K_ref(const float *x, void *y, int64_t k);
void dequantize_row_q4_K(const void *x, float *y, int64_t k);
void dequantize_row_q5_K(const void *x, float *y, int64_t k);
void dequantize_row_q6_K(const void *x, float *y, int64_t k);
void dequantize_row_q4_0(const void *x, float *y, int64_t k);
void dequantize_row_q4_1(const void *x, float *y, int64_t k);
void dequantize_row_q5_0(const void *x, float *y, int64_t k);
void dequantize_row_q5_1(const void *x, float *y, int64_t k);
void dequantize_row_q8_0(const void *x, float *y, int64_t k);
void dequantize_row_iq4_nl(const void *x, float *y, int64_t k);
void ggml_fp16_to_fp32_row(const void *x, float *y, int64_t k);
void ggml_bf16_to_fp32_row(const void *x, float *y, int64_t k);
const char *ggml_type_name(int type);
int64_t ggml_blck_size(int type);
size_t ggml_type_size(int type);

#define QK_K 256
#define GGML_TYPE_COUNT 43 // of the ggml inside node-llama-cpp 3.x (llama.cpp release v0.5.0 build)
#define N_BLOCKS 4
#define N (QK_K * N_BLOCKS)

typedef void (*quant_fn)(const float *, void *, int64_t);
typedef void (*dequant_fn)(const void *, float *, int64_t);

struct kq { const char *name; int block_bytes; quant_fn q; dequant_fn dq; int d_offsets[2]; };

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint32_t next_u32(void) {
  // xorshift64*: a fixed generator so the inputs are reproducible across machines.
  rng_state ^= rng_state >> 12; rng_state ^= rng_state << 25; rng_state ^= rng_state >> 27;
  return (uint32_t)((rng_state * 0x2545F4914F6CDD1Dull) >> 32);
}
static float uniform01(void) { return (next_u32() >> 8) * (1.0f / 16777216.0f); }
static float gauss(void) {
  float u = uniform01() + 1e-7f, v = uniform01();
  return sqrtf(-2.0f * logf(u)) * cosf(6.2831853f * v);
}

static void fill(const char *kind, float *x) {
  for (int i = 0; i < N; i++) {
    if (!strcmp(kind, "gauss")) x[i] = gauss();
    else if (!strcmp(kind, "mixed_scales")) x[i] = gauss() * ldexpf(1.0f, (int)(next_u32() % 9) - 4) * (1 + (i / 32) % 7);
    else if (!strcmp(kind, "positive")) x[i] = uniform01() * 3.0f + 0.5f;
    else if (!strcmp(kind, "outliers")) x[i] = (i % 97 == 5) ? 40.0f * gauss() : 0.01f * gauss();
    else if (!strcmp(kind, "zeros")) x[i] = 0.0f;
    else if (!strcmp(kind, "constant")) x[i] = -1.25f;
    else if (!strcmp(kind, "tiny")) x[i] = 1e-6f * gauss();
  }
}

static void print_bytes(FILE *f, const uint8_t *b, int n) {
  fputc('"', f);
  for (int i = 0; i < n; i++) fprintf(f, "%02x", b[i]);
  fputc('"', f);
}
static void print_bits(FILE *f, const float *y, int n) {
  fputc('[', f);
  for (int i = 0; i < n; i++) { uint32_t u; memcpy(&u, &y[i], 4); fprintf(f, i ? ",%u" : "%u", u); }
  fputc(']', f);
}

// Random block bytes with each fp16 scale forced finite: covers every bit pattern of the quant fields.
static void random_blocks(const struct kq *t, uint8_t *b) {
  for (int i = 0; i < t->block_bytes * N_BLOCKS; i++) b[i] = (uint8_t)next_u32();
  for (int blk = 0; blk < N_BLOCKS; blk++)
    for (int j = 0; j < 2; j++) {
      int o = t->d_offsets[j];
      if (o < 0) continue;
      uint8_t *h = b + blk * t->block_bytes + o;
      h[1] = (uint8_t)((h[1] & 0x83) | 0x30); // exponent 12..15 range: finite, moderate magnitude
    }
}

static void emit(const struct kq *t, const char *dir) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s.json", dir, t->name);
  FILE *f = fopen(path, "w");
  if (!f) { perror(path); exit(1); }
  static const char *kinds[] = { "gauss", "mixed_scales", "positive", "outliers", "zeros", "constant", "tiny" };
  float x[N], y[N];
  uint8_t b[210 * N_BLOCKS];
  fprintf(f, "{\n  \"type\": \"%s\",\n  \"source\": \"ggml (node-llama-cpp libggml-base.so) quantize_row_%s_ref + dequantize_row_%s\",\n  \"values\": %d,\n  \"cases\": [\n", t->name, t->name, t->name, N);
  int nk = sizeof kinds / sizeof kinds[0];
  for (int c = 0; c <= nk; c++) {
    const char *kind = c < nk ? kinds[c] : "random_bytes";
    if (c < nk) { fill(kind, x); t->q(x, b, N); } else random_blocks(t, b);
    t->dq(b, y, N);
    fprintf(f, "    { \"kind\": \"%s\",\n      \"input_bits\": ", kind);
    if (c < nk) print_bits(f, x, N); else fputs("null", f);
    fputs(",\n      \"bytes\": ", f);
    print_bytes(f, b, t->block_bytes * N_BLOCKS);
    fputs(",\n      \"output_bits\": ", f);
    print_bits(f, y, N);
    fprintf(f, " }%s\n", c < nk ? "," : "");
  }
  fputs("  ]\n}\n", f);
  fclose(f);
}

static void emit_types(const char *dir) {
  char path[512];
  snprintf(path, sizeof path, "%s/types.json", dir);
  FILE *f = fopen(path, "w");
  if (!f) { perror(path); exit(1); }
  fputs("{\n  \"source\": \"ggml_type_name / ggml_blck_size / ggml_type_size from node-llama-cpp libggml-base.so\",\n  \"types\": [\n", f);
  // ggml_type_name does no bounds check: loop to GGML_TYPE_COUNT (type_traits is 0x968 B / 56 B per row).
  for (int id = 0; id < GGML_TYPE_COUNT; id++) {
    const char *name = ggml_type_name(id);
    if (!name) name = "";
    fprintf(f, "%s    { \"id\": %d, \"name\": \"%s\", \"blockValues\": %lld, \"blockBytes\": %zu }", id ? ",\n" : "", id, name,
            (long long)ggml_blck_size(id), ggml_type_size(id));
  }
  fputs("\n  ]\n}\n", f);
  fclose(f);
}

// Weight types kvpack decodes through its KV formats: random block bytes (fp16 scales forced finite)
// -> ggml's dequantizer. f16/bf16 have no scale; their NaN bit patterns are compared as "is NaN".
struct wt { const char *name; int block_values, block_bytes; dequant_fn dq; int d_offsets[2]; };

static void emit_weights(const struct wt *t, const char *dir) {
  char path[512];
  snprintf(path, sizeof path, "%s/weights_%s.json", dir, t->name);
  FILE *f = fopen(path, "w");
  if (!f) { perror(path); exit(1); }
  enum { VALUES = 1024 };
  int blocks = VALUES / t->block_values, nbytes = blocks * t->block_bytes;
  uint8_t b[VALUES * 4];
  float y[VALUES];
  for (int i = 0; i < nbytes; i++) b[i] = (uint8_t)next_u32();
  for (int blk = 0; blk < blocks; blk++)
    for (int j = 0; j < 2; j++) {
      if (t->d_offsets[j] < 0) continue;
      uint8_t *h = b + blk * t->block_bytes + t->d_offsets[j];
      h[1] = (uint8_t)((h[1] & 0x83) | 0x30);
    }
  t->dq(b, y, VALUES);
  fprintf(f, "{\n  \"type\": \"%s\",\n  \"source\": \"ggml (node-llama-cpp libggml-base.so) dequantizer of random blocks\",\n  \"values\": %d,\n  \"bytes\": ", t->name, VALUES);
  print_bytes(f, b, nbytes);
  fputs(",\n  \"output_bits\": ", f);
  print_bits(f, y, VALUES);
  fputs("\n}\n", f);
  fclose(f);
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : "test/golden/kquants";
  // q4_K/q5_K start with d, dmin; q6_K ends with d (offset 208).
  struct kq types[] = {
    { "q4_K", 144, quantize_row_q4_K_ref, dequantize_row_q4_K, { 0, 2 } },
    { "q5_K", 176, quantize_row_q5_K_ref, dequantize_row_q5_K, { 0, 2 } },
    { "q6_K", 210, quantize_row_q6_K_ref, dequantize_row_q6_K, { 208, -1 } },
  };
  for (int i = 0; i < 3; i++) emit(&types[i], dir);
  struct wt weights[] = {
    { "q4_0", 32, 18, dequantize_row_q4_0, { 0, -1 } },
    { "q4_1", 32, 20, dequantize_row_q4_1, { 0, 2 } },
    { "q5_0", 32, 22, dequantize_row_q5_0, { 0, -1 } },
    { "q5_1", 32, 24, dequantize_row_q5_1, { 0, 2 } },
    { "q8_0", 32, 34, dequantize_row_q8_0, { 0, -1 } },
    { "iq4_nl", 32, 18, dequantize_row_iq4_nl, { 0, -1 } },
    { "f16", 1, 2, ggml_fp16_to_fp32_row, { -1, -1 } },
    { "bf16", 1, 2, ggml_bf16_to_fp32_row, { -1, -1 } },
  };
  for (int i = 0; i < 8; i++) emit_weights(&weights[i], dir);
  emit_types(dir);
  return 0;
}
