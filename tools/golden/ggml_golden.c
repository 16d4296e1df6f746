// Writes test/golden/ggml/<format>.json from REAL ggml (libggml-base.so): for each deterministic input
// case, the float32 input bits, ggml's encoded bytes and ggml's decoded float32 bits.
// Build and run: see tools/golden/README.md. Our own program; only the prototypes below come from ggml's API.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ggml's exported reference codecs (block pointers declared as void: we only pass raw bytes).
void quantize_row_q4_0_ref(const float *x, void *y, int64_t k);
void quantize_row_q4_1_ref(const float *x, void *y, int64_t k);
void quantize_row_q5_0_ref(const float *x, void *y, int64_t k);
void quantize_row_q5_1_ref(const float *x, void *y, int64_t k);
void quantize_row_q8_0_ref(const float *x, void *y, int64_t k);
void quantize_row_iq4_nl_ref(const float *x, void *y, int64_t k);
void dequantize_row_q4_0(const void *x, float *y, int64_t k);
void dequantize_row_q4_1(const void *x, float *y, int64_t k);
void dequantize_row_q5_0(const void *x, float *y, int64_t k);
void dequantize_row_q5_1(const void *x, float *y, int64_t k);
void dequantize_row_q8_0(const void *x, float *y, int64_t k);
void dequantize_row_iq4_nl(const void *x, float *y, int64_t k);
void ggml_fp32_to_fp16_row(const float *x, uint16_t *y, int64_t n);
void ggml_fp16_to_fp32_row(const uint16_t *x, float *y, int64_t n);
void ggml_fp32_to_bf16_row_ref(const float *x, uint16_t *y, int64_t n);
void ggml_fp32_to_bf16_row(const float *x, uint16_t *y, int64_t n);
void ggml_bf16_to_fp32_row(const uint16_t *x, float *y, int64_t n);

#define MAXN 256

typedef void (*quant_fn)(const float *, void *, int64_t);
typedef void (*dequant_fn)(const void *, float *, int64_t);

typedef struct {
  const char *id;
  int ggml_type;
  int block_values;
  int block_bytes;
  quant_fn quant;
  dequant_fn dequant;
} block_format;

static const block_format BLOCK_FORMATS[] = {
    {"q4_0", 2, 32, 18, quantize_row_q4_0_ref, dequantize_row_q4_0},
    {"q4_1", 3, 32, 20, quantize_row_q4_1_ref, dequantize_row_q4_1},
    {"q5_0", 6, 32, 22, quantize_row_q5_0_ref, dequantize_row_q5_0},
    {"q5_1", 7, 32, 24, quantize_row_q5_1_ref, dequantize_row_q5_1},
    {"q8_0", 8, 32, 34, quantize_row_q8_0_ref, dequantize_row_q8_0},
    {"iq4_nl", 20, 32, 18, quantize_row_iq4_nl_ref, dequantize_row_iq4_nl},
};

// splitmix64: a fixed, documented generator so the inputs never depend on the C library's rand().
static uint64_t rng_state;
static uint64_t next_u64(void) {
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
static double next_unit(void) { return (double)((next_u64() >> 11) + 1) / 9007199254740993.0; }  // (0, 1)
static double next_normal(void) {
  return sqrt(-2.0 * log(next_unit())) * cos(6.283185307179586 * next_unit());
}

static uint32_t bits_of(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float float_of(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

typedef struct {
  char name[64];
  int n;
  float x[MAXN];
} input_case;

static input_case cases[64];
static int n_cases;

static input_case *add_case(const char *name, int n) {
  input_case *c = &cases[n_cases++];
  snprintf(c->name, sizeof c->name, "%s", name);
  c->n = n;
  memset(c->x, 0, sizeof c->x);
  return c;
}

static void add_normals(const char *name, int n, double scale, uint64_t seed) {
  input_case *c = add_case(name, n);
  rng_state = seed;
  for (int i = 0; i < n; i++) c->x[i] = (float)(next_normal() * scale);
}

// Inputs shared by every block format: random blocks plus the edge blocks the brief lists.
static void build_block_cases(void) {
  add_normals("normal_s1_n32", 32, 1.0, 1);
  add_normals("normal_s0.01_n64", 64, 0.01, 2);
  add_normals("normal_s30_n256", 256, 30.0, 3);
  add_normals("normal_s1e-3_n32", 32, 1e-3, 4);
  add_normals("normal_s1000_n64", 64, 1000.0, 5);
  add_normals("normal_s1_n256", 256, 1.0, 6);
  add_case("zeros_n32", 32);
  { input_case *c = add_case("constant_pos_n32", 32); for (int i = 0; i < 32; i++) c->x[i] = 0.75f; }
  { input_case *c = add_case("constant_neg_n64", 64); for (int i = 0; i < 64; i++) c->x[i] = -2.5f; }
  { // one large outlier among small values, placed mid-block
    add_normals("outlier_n32", 32, 0.1, 7);
    cases[n_cases - 1].x[13] = 50.0f;
  }
  { // the extreme pair: largest fp16 value of both signs (negative first), plus ramps between them
    input_case *c = add_case("pm_max_n32", 32);
    for (int i = 0; i < 32; i++) c->x[i] = (float)(-65504.0 + 65504.0 * 2.0 * i / 31.0);
    c->x[0] = -65504.0f; c->x[31] = 65504.0f;
  }
  { // positive max first: values of the opposite sign at full magnitude hit the clamped end of the grid
    input_case *c = add_case("pm_max_first_pos_n32", 32);
    for (int i = 0; i < 32; i++) c->x[i] = (i % 2 ? -1.0f : 1.0f) * 65504.0f;
  }
  { // scales beyond fp16 range: the stored scale becomes Inf (ggml's behaviour, frozen here)
    input_case *c = add_case("scale_overflow_n32", 32);
    rng_state = 8;
    for (int i = 0; i < 32; i++) c->x[i] = (float)(next_normal() * 1e9);
  }
  add_normals("tiny_normal_range_n32", 32, 1e-30, 9);   // fp16 scale flushes to zero
  add_normals("tiny_subnormal_n32", 32, 1e-39, 10);     // 1/d overflows to Inf in float32
  add_normals("tiny_subnormal_n64", 64, 1e-42, 11);
  { // q8_0 ties: d = 127/127 = 1, so x*id = k + 0.5 exactly
    input_case *c = add_case("ties_q8_n32", 32);
    c->x[0] = 127.0f;
    for (int i = 1; i < 32; i++) c->x[i] = (float)(i - 16) + 0.5f;
  }
  { // q4_0 ties: max = -8 gives d = 1
    input_case *c = add_case("ties_q4_0_n32", 32);
    c->x[0] = -8.0f;
    for (int i = 1; i < 32; i++) c->x[i] = (float)((i % 16) - 8) + 0.5f;
  }
  { // q5_0 ties: max = -16 gives d = 1
    input_case *c = add_case("ties_q5_0_n32", 32);
    c->x[0] = -16.0f;
    for (int i = 1; i < 32; i++) c->x[i] = (float)(i - 16) + 0.5f;
  }
  { // q4_1 ties: min 0, max 15 gives d = 1
    input_case *c = add_case("ties_q4_1_n32", 32);
    c->x[0] = 0.0f; c->x[1] = 15.0f;
    for (int i = 2; i < 32; i++) c->x[i] = (float)(i % 15) + 0.5f;
  }
  { // q5_1 ties: min 0, max 31 gives d = 1
    input_case *c = add_case("ties_q5_1_n32", 32);
    c->x[0] = 0.0f; c->x[1] = 31.0f;
    for (int i = 2; i < 32; i++) c->x[i] = (float)(i - 2) + 0.5f;
  }
  { // offset block: a large common value with small spread (fp16 rounding of the min dominates q4_1/q5_1)
    add_normals("offset_100_n32", 32, 0.01, 12);
    for (int i = 0; i < 32; i++) cases[n_cases - 1].x[i] += 100.0f;
  }
  { // a linear ramp over [-1, 1]
    input_case *c = add_case("ramp_n64", 64);
    for (int i = 0; i < 64; i++) c->x[i] = (float)(-1.0 + 2.0 * i / 63.0);
  }
}

// Inputs for f16/bf16: conversion edge cases, then random values and random finite bit patterns.
static void build_half_cases(void) {
  static const uint32_t edges[] = {
      0x00000000, 0x80000000,                          // +-0
      0x477fe000, 0xc77fe000,                          // +-65504 (largest fp16)
      0x477fef00, 0x477fefff,                          // 65519, just below the fp16 overflow tie
      0x477ff000, 0xc77ff000, 0x47800000, 0x501502f9,  // 65520 (-> Inf), -65520, 65536, 1e10
      0x7f7fffff, 0xff7fffff,                          // +-FLT_MAX
      0x38800000, 0x387fc000, 0x387fe000,              // 2^-14 (smallest normal fp16) and neighbours
      0x33800000, 0x33000000, 0x33000001, 0x33c00000,  // 2^-24, 2^-25 (tie -> 0), just above, 1.5*2^-24
      0x34200000, 0x32800000, 0x00000001, 0x80000001,  // 2.5*2^-24 (tie -> even), 2^-26, float subnormals
      0x007fffff, 0x00400000,                          // largest float subnormal, 2^-127
      0x3f801000, 0x3f803000, 0x3f800fff, 0x3f801001,  // 1 + 2^-11 (tie -> 1), 1 + 3*2^-11 (tie -> up)
      0x45001000, 0x45003000,                          // 2049, 2051: integer ties in fp16
      0x3f808000, 0x3f818000, 0x3f807fff, 0x3f808001,  // bf16 ties at 1 + 2^-8 and 1 + 3*2^-8
      0x7f7f8000, 0x7f7effff,                          // bf16: rounds up to Inf / stays finite
      0x7f800000, 0xff800000, 0x7fc00000,              // +-Inf, NaN (JS keeps only the canonical NaN)
      0x3eaaaaab, 0xbeaaaaab, 0x40490fdb,              // 1/3, -1/3, pi
  };
  int ne = (int)(sizeof edges / sizeof edges[0]);
  input_case *c = add_case("edges", ne);
  for (int i = 0; i < ne; i++) c->x[i] = float_of(edges[i]);
  add_normals("normal_s1_n64", 64, 1.0, 21);
  add_normals("normal_s1e-5_n64", 64, 1e-5, 22);
  add_normals("normal_s3e4_n64", 64, 3e4, 23);
  input_case *r = add_case("random_bits_n256", 256);
  rng_state = 24;
  for (int i = 0; i < 256; i++) {
    uint32_t u;
    do u = (uint32_t)next_u64(); while ((u & 0x7f800000) == 0x7f800000);  // finite only
    r->x[i] = float_of(u);
  }
}

static FILE *open_out(const char *dir, const char *id) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s.json", dir, id);
  FILE *f = fopen(path, "w");
  if (!f) { perror(path); exit(1); }
  return f;
}

static void write_floats(FILE *f, const float *x, int n) {
  fputc('[', f);
  for (int i = 0; i < n; i++) fprintf(f, "%s\"%08x\"", i ? "," : "", bits_of(x[i]));
  fputc(']', f);
}

static void write_bytes(FILE *f, const uint8_t *b, int n) {
  fputc('"', f);
  for (int i = 0; i < n; i++) fprintf(f, "%02x", b[i]);
  fputc('"', f);
}

static void write_header(FILE *f, const char *id, int ggml_type) {
  fprintf(f, "{\n  \"format\": \"%s\",\n  \"ggmlType\": %d,\n", id, ggml_type);
  fprintf(f, "  \"generator\": \"tools/golden/ggml_golden.c against node-llama-cpp's libggml-base.so\",\n");
  fprintf(f, "  \"encoding\": \"input/decoded: float32 bits as 8 hex digits; bytes: hex string\",\n");
  fprintf(f, "  \"cases\": [\n");
}

// iq4_nl: for a block whose largest magnitude is below GROUP_MAX_EPS (1e-15f) ggml skips the block and then
// packs its never-initialised index buffer, so the 16 qs bytes are stack garbage; only d (= 0) is defined.
static int unspecified_ranges(const block_format *bf, const input_case *c, int ranges[][2]) {
  int n = 0;
  if (!bf || strcmp(bf->id, "iq4_nl") != 0) return 0;
  for (int ib = 0; ib < c->n / bf->block_values; ib++) {
    float amax = 0;
    for (int j = 0; j < bf->block_values; j++) amax = fmaxf(amax, fabsf(c->x[ib * bf->block_values + j]));
    if (amax < 1e-15f) {
      ranges[n][0] = ib * bf->block_bytes + 2;
      ranges[n][1] = (ib + 1) * bf->block_bytes;
      n++;
    }
  }
  return n;
}

static void write_case(FILE *f, int first, const input_case *c, const uint8_t *bytes, int nbytes, const float *dec,
                       const block_format *bf) {
  fprintf(f, "%s    {\"name\": \"%s\", \"n\": %d,\n     \"input\": ", first ? "" : ",\n", c->name, c->n);
  write_floats(f, c->x, c->n);
  int ranges[MAXN][2];
  int nr = unspecified_ranges(bf, c, ranges);
  if (nr) {
    fprintf(f, ",\n     \"unspecifiedBytes\": [");
    for (int i = 0; i < nr; i++) fprintf(f, "%s[%d, %d]", i ? ", " : "", ranges[i][0], ranges[i][1]);
    fputc(']', f);
  }
  fprintf(f, ",\n     \"bytes\": ");
  write_bytes(f, bytes, nbytes);
  fprintf(f, ",\n     \"decoded\": ");
  write_floats(f, dec, c->n);
  fputc('}', f);
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : "test/golden/ggml";
  static uint8_t bytes[MAXN * 4];
  static float dec[MAXN];

  build_block_cases();
  for (size_t k = 0; k < sizeof BLOCK_FORMATS / sizeof BLOCK_FORMATS[0]; k++) {
    const block_format *bf = &BLOCK_FORMATS[k];
    FILE *f = open_out(dir, bf->id);
    write_header(f, bf->id, bf->ggml_type);
    for (int i = 0; i < n_cases; i++) {
      const input_case *c = &cases[i];
      int nbytes = c->n / bf->block_values * bf->block_bytes;
      memset(bytes, 0xaa, sizeof bytes);
      bf->quant(c->x, bytes, c->n);
      bf->dequant(bytes, dec, c->n);
      write_case(f, i == 0, c, bytes, nbytes, dec, bf);
    }
    fprintf(f, "\n  ]\n}\n");
    fclose(f);
  }

  n_cases = 0;
  build_half_cases();
  static uint16_t h[MAXN], h2[MAXN];
  // f16
  FILE *f = open_out(dir, "f16");
  write_header(f, "f16", 1);
  for (int i = 0; i < n_cases; i++) {
    ggml_fp32_to_fp16_row(cases[i].x, h, cases[i].n);
    ggml_fp16_to_fp32_row(h, dec, cases[i].n);
    write_case(f, i == 0, &cases[i], (const uint8_t *)h, 2 * cases[i].n, dec, NULL);  // little-endian host
  }
  fprintf(f, "\n  ]\n}\n");
  fclose(f);
  // bf16: the _ref row is the definition; check the plain row agrees so either could be cited.
  f = open_out(dir, "bf16");
  write_header(f, "bf16", 30);
  for (int i = 0; i < n_cases; i++) {
    ggml_fp32_to_bf16_row_ref(cases[i].x, h, cases[i].n);
    ggml_fp32_to_bf16_row(cases[i].x, h2, cases[i].n);
    if (memcmp(h, h2, 2 * cases[i].n)) fprintf(stderr, "warning: bf16 row and row_ref differ in %s\n", cases[i].name);
    ggml_bf16_to_fp32_row(h, dec, cases[i].n);
    write_case(f, i == 0, &cases[i], (const uint8_t *)h, 2 * cases[i].n, dec, NULL);
  }
  fprintf(f, "\n  ]\n}\n");
  fclose(f);
  // f32: the identity, kept so the suite covers every format with a ggml type.
  f = open_out(dir, "f32");
  write_header(f, "f32", 0);
  for (int i = 0; i < n_cases; i++) write_case(f, i == 0, &cases[i], (const uint8_t *)cases[i].x, 4 * cases[i].n, cases[i].x, NULL);
  fprintf(f, "\n  ]\n}\n");
  fclose(f);
  return 0;
}
