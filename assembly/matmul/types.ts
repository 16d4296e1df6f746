// The wasm side of the weight-type table (src/kernels/matmul/table.ts): one row per ggml weight type, read
// through @inline accessors, so a kernel inlined with its type a constant folds each fact to a constant.
// weightTypeFacts exports every field; the matmul gate checks them against the TS rows and ggml's block sizes.
import { T_BF16, T_F16, T_F32, T_IQ4_NL, T_Q4_0, T_Q4_0X4, T_Q4_1, T_Q4_K, T_Q4_KX4, T_Q5_0, T_Q5_1, T_Q5_K, T_Q6_K, T_Q8_0, T_Q8_0X4, GROUPED } from './decode';

/**
 * Value orders of packActVec (vec.ts): natural; q4_0's nibble order per 32 values; q4_K's per 64 (one qs
 * half-block), which relaxed-SIMD builds lay out as int8 in natural order instead (vec_qk_relaxed.ts).
 */
export const ORDER_NATURAL: i32 = 0;
export const ORDER_NIB32: i32 = 1;
export const ORDER_NIB256: i32 = 2;
/** f16 / bf16 weights: x stays f32, permuted per 8 values to even then odd (vec_halves.ts). */
export const ORDER_HALVES: i32 = 3;
/** q6_K: int16, per 16 values the 8 even then the 8 odd, one scale per 256, sums per 16 (vec_q6k.ts). */
export const ORDER_Q6K: i32 = 4;
/** q4_0x4: int8 in natural order, one scale per 32, sums per 32 (vec_q4x4.ts). */
export const ORDER_NAT8: i32 = 5;

// Fields of a row. The first FACT_SHARED are exported by weightTypeFacts and checked by the matmul gate against
// the TS table (src/kernels/matmul/table.ts WASM_FACTS, same order); the rest only steer the kernels.
/** The activation order the one-token kernel reads (-1: no one-token kernel); the table's oneToken.order. */
export const FACT_ORDER: i32 = 0;
/** Values per int8 activation scale (0: float types); the table's actBlock. */
export const FACT_ACT_BLOCK: i32 = 1;
/** Bytes and values of one ggml block (gguf/types.ts). */
export const FACT_BLOCK_BYTES: i32 = 2;
export const FACT_BLOCK_VALUES: i32 = 3;
/** 1: the one-token kernel converts f16 scales four at a time, Inf/NaN not kept (vecScalesFinite); the table's scalesChecked. */
export const FACT_SCALES_CHECKED: i32 = 4;
/**
 * 1: relaxed-SIMD builds' one-token kernel dots by i16x8.relaxed_dot_i8x16_i7x16_s (vec.ts VEC_RELAXED_*: q4_0,
 * q4_K, q5_K, q6_K); the table's oneToken.relaxed.
 */
export const FACT_VEC_RELAXED: i32 = 5;
export const FACT_SHARED: i32 = 6;
/** 1: an f16 min after the f16 d that rowsQ adds as m * dx * sum(x) (q4_1, q5_1). */
export const FACT_MIN: i32 = 6;
/** 1: rowsQ runs long rows eight at a time without touches (vec.ts EIGHT_MIN_ROW_BYTES: q8_0, q4_0). */
export const FACT_EIGHT_ROWS: i32 = 7;
/** The centre rowsQ subtracts after the integer dot, as centre * sum(x) (q4_0 8; q5_0's 16 goes inside its dot). */
export const FACT_CENTRE: i32 = 8;

@inline function pick(f: i32, order: i32, actBlock: i32, bytes: i32, values: i32, checked: i32, relaxed: i32, min: i32, eight: i32, centre: i32): i32 {
  return f == FACT_ORDER ? order : f == FACT_ACT_BLOCK ? actBlock : f == FACT_BLOCK_BYTES ? bytes : f == FACT_BLOCK_VALUES ? values : f == FACT_SCALES_CHECKED ? checked : f == FACT_VEC_RELAXED ? relaxed : f == FACT_MIN ? min : f == FACT_EIGHT_ROWS ? eight : centre;
}

/**
 * Field `f` of `type`'s row (0 for every field but the order, -1, for a type the kernels do not read). A four-row
 * group layout (decode.ts GROUPED) has its file type's row, read four rows at a time only.
 */
@inline export function fact(type: i32, f: i32): i32 {
  // One inlined copy of the rows: a second one per call site with a runtime type cost Binaryen minutes.
  const v = fileFact(type >= GROUPED ? type - GROUPED : type, f);
  return type >= GROUPED && f == FACT_EIGHT_ROWS ? 0 : v;
}

@inline function fileFact(type: i32, f: i32): i32 {
  //                               order, actBlock, block bytes, values, scalesChecked, vec relaxed, min, eight rows, centre
  if (type == T_F32) return pick(f, -1, 0, 4, 1, 0, 0, 0, 0, 0);
  if (type == T_F16) return pick(f, ORDER_HALVES, 0, 2, 1, 0, 0, 0, 0, 0);
  if (type == T_BF16) return pick(f, ORDER_HALVES, 0, 2, 1, 0, 0, 0, 0, 0);
  if (type == T_Q8_0) return pick(f, ORDER_NATURAL, 32, 34, 32, 1, 0, 0, 1, 0);
  // A q8_0x4 row takes q8_0's bytes, interleaved in groups of four (vec_q8x4.ts reads a group as one stream).
  if (type == T_Q8_0X4) return pick(f, ORDER_NATURAL, 32, 34, 32, 1, 0, 0, 0, 0);
  if (type == T_Q4_0) return pick(f, ORDER_NIB32, 32, 18, 32, 1, 1, 0, 1, 8);
  // Block bytes and values of one row's share: a q4_0x4 row takes q4_0's bytes, interleaved in groups of four.
  if (type == T_Q4_0X4) return pick(f, ORDER_NAT8, 32, 18, 32, 1, 1, 0, 0, 8);
  if (type == T_Q4_1) return pick(f, ORDER_NATURAL, 32, 20, 32, 1, 0, 1, 0, 0);
  if (type == T_Q5_0) return pick(f, ORDER_NATURAL, 32, 22, 32, 1, 0, 0, 0, 0);
  if (type == T_Q5_1) return pick(f, ORDER_NATURAL, 32, 24, 32, 1, 0, 1, 0, 0);
  if (type == T_IQ4_NL) return pick(f, ORDER_NATURAL, 32, 18, 32, 1, 0, 0, 0, 0);
  // q4_K and q5_K share ORDER_NIB256, whose relaxed layout only their relaxed kernel reads: both relaxed or neither.
  if (type == T_Q4_K) return pick(f, ORDER_NIB256, 256, 144, 256, 0, 1, 0, 0, 0);
  if (type == T_Q5_K) return pick(f, ORDER_NIB256, 256, 176, 256, 0, 1, 0, 0, 0);
  // q4_Kx4 (relaxed builds only): q4_K's bytes and x; its kernel converts d and dmin four at a time.
  if (type == T_Q4_KX4) return pick(f, ORDER_NIB256, 256, 144, 256, 1, 1, 0, 0, 0);
  if (type == T_Q6_K) return pick(f, ORDER_Q6K, 256, 210, 256, 0, 1, 0, 0, 0);
  return pick(f, -1, 0, 0, 0, 0, 0, 0, 0, 0);
}

@inline export function orderOf(type: i32): i32 {
  return fact(type, FACT_ORDER);
}
@inline export function blockBytesOf(type: i32): usize {
  return <usize>fact(type, FACT_BLOCK_BYTES);
}
@inline export function scalesChecked(type: i32): bool {
  return fact(type, FACT_SCALES_CHECKED) != 0;
}
@inline export function hasMin(type: i32): bool {
  return fact(type, FACT_MIN) != 0;
}
@inline export function centreOf(type: i32): i32 {
  return fact(type, FACT_CENTRE);
}
/**
 * Which one-token kernels a relaxed build swaps in, as compile-time constants: the kernels branch on these, not on
 * fact(), so the compiler drops the other path itself. Through fact() both paths were compiled into matmulVec
 * and Binaryen's -O3 took 200 s on it instead of 14 (q4_K / q5_K share ORDER_NIB256: both or neither). A
 * constant from fact() would be a start-function global. vec.ts vecRelaxedType reports these; the gate checks them.
 */
export const VEC_RELAXED_Q4_0: bool = ASC_FEATURE_RELAXED_SIMD;
export const VEC_RELAXED_NIB256: bool = ASC_FEATURE_RELAXED_SIMD;
export const VEC_RELAXED_Q6K: bool = ASC_FEATURE_RELAXED_SIMD;
@inline export function eightRows(type: i32): bool {
  return fact(type, FACT_EIGHT_ROWS) != 0;
}

/** Shared field `field` (< FACT_SHARED) of `type`'s row, for the gate's check against the TS table; -2 past them. */
export function weightTypeFacts(type: i32, field: i32): i32 {
  return field >= 0 && field < FACT_SHARED ? fact(type, field) : -2;
}
