// The weight-type table: one row per ggml weight type the engine multiplies, plain data. A row names how a
// block decodes (the reference the dequantizer and the TS matmul use), the wasm one-token kernel's
// activation order and reach, the tiled kernel, the int8 activation block, and what the matmul gate covers.
// The dequantizer (dequant.ts), Weight (model/forward-weights.ts) and the wasm dispatch (plan.ts) all
// read it: adding a weight type is one row here (plus its kernels in assembly/ and golden vectors).
import { formats } from '../../formats/registry.js';
import { decodeQ4K, decodeQ5K, decodeQ6K } from '../../gguf/kquants.js';
import { GGML, ggmlType, ggmlTypeName } from '../../gguf/types.js';

/** Decodes one block at src[srcOff..] into dst[dstOff..] (blockValues floats). */
export type BlockDecoder = (src: Uint8Array, srcOff: number, dst: Float32Array, dstOff: number) => void;

/** Kernels of assembly/matmul/run.ts by name (ids: its K_* constants, read from the module at dispatch). */
export type MatmulKernel = 'matmulVec' | 'matmulQ8Tiled' | 'matmulF32Tiled' | 'matmulQ8Relaxed';

export interface WeightTypeRow {
  readonly type: number;
  /**
   * The block decoder: 'format' for types whose bytes are a registered KV format's (looked up by ggml name
   * at call time, so one definition serves both), else the function (K-quants, weights only).
   */
  readonly decoder: 'format' | BlockDecoder;
  /** Whether the wasm kernels read this type in its packed bytes. */
  readonly wasm: boolean;
  /**
   * The one-token kernel (assembly/matmul/vec.ts matmulVec), or null: the activation order it reads
   * (packActVec ORDER_*) and the most tokens a call runs through it (once per token, re-reading the rows)
   * before the tiles pay. Bits never depend on it: every kernel of a type sums in the same order. Measured
   * on [2048, 768] and [768, 2048], one core, CPU time (against the row kernels since removed, and the
   * tiles): q8_0 at 3 tokens 290 vs 473 us (row kernel), at 4 384 vs 369 (tiled); q4_0 / q4_K at 6 543 /
   * 651 vs 574 / 699 (tiled), at 8 722 / 870 vs 571 / 705; q6_K at 3 530 vs 653 (row kernel), at 4 702 vs
   * 494 (tiled); f16 at 2 723 vs 533 (f32 row kernel); bf16 at 4 531 vs 563, at 6 793 vs 760 (f32 row
   * kernel); q4_1 / q5_0 / q5_1 / iq4_nl (weights cycled from DRAM) at 3 538-744 vs 610-933 (row kernel);
   * q5_K at 3 600-610 vs 781-852 (row kernel), at 4 773 vs 689-691 (tiled). `relaxed`: a relaxed-SIMD build's
   * kernel dots by i16x8.relaxed_dot_i8x16_i7x16_s (q4_0, q4_K, q5_K, q6_K; vecRelaxedType must agree, the matmul
   * gate checks; relaxed builds lay ORDER_NIB256 and ORDER_Q6K out as int8 in natural order, half of layoutBytes' q bytes).
   */
  readonly oneToken: { readonly order: number; readonly maxTokens: number; readonly relaxed?: boolean } | null;
  /** 'q8': int8 activations per `actBlock` values (matmulQ8Tiled) by default; 'f32': float weights, f32 activations always. */
  readonly acts: 'q8' | 'f32';
  /** Values per int8 activation scale (32, or 256 for K-quants); 0 for float types. */
  readonly actBlock: number;
  /** The one-token kernel converts f16 block scales four at a time (Inf/NaN not kept): weights with any take the tiles (vecScalesFinite). */
  readonly scalesChecked: boolean;
  /** Column counts the matmul gate draws: any ('float'), whole 32-value blocks, whole 256-value blocks. */
  readonly gateCols: 'float' | 'block32' | 'block256';
  /**
   * Whether a relaxed-SIMD build runs this type's tiles as matmulQ8Relaxed (assembly/matmul/relaxed_tile.ts, same
   * bits as matmulQ8Tiled): the 4- and 5-bit types, 0.68-0.93x the baseline tiles' time (q4_K / q5_K
   * 0.82-0.94x); 8-bit ones would split each weight in two dots, 1.4-1.7x (bench/relaxed-ab.ts, n 16-128).
   * relaxedTileType must agree (the matmul gate checks).
   */
  readonly relaxedTile: boolean;
  /**
   * Set on a kernel layout, not a file type: the ggml type whose weights the engine repacks to it at load where
   * the loaded build says so (repackTypeOf; interleave.ts defines the bytes). Its blocks are that type's, row by row.
   */
  readonly repackOf?: number;
  /** With repackOf: the builds whose repackTypeOf repacks to it ('relaxed', 'baseline' or 'all'). */
  readonly repackIn?: 'relaxed' | 'baseline' | 'all';
}

/**
 * Kernel layouts past ggml's ids (assembly/matmul/decode.ts T_*): 256 + the type's id, q4_0 / q8_0 / q4_K rows
 * interleaved four at a time field by field; GROUPED_BASE + the type's id, four rows' whole blocks in turn.
 */
export const GROUPED_BASE = 512;
export const KERNEL_LAYOUT = {
  Q4_0X4: 258,
  Q8_0X4: 264,
  Q4_KX4: 268,
  Q4_0G4: GROUPED_BASE + GGML.Q4_0,
  Q4_1G4: GROUPED_BASE + GGML.Q4_1,
  Q5_0G4: GROUPED_BASE + GGML.Q5_0,
  Q5_1G4: GROUPED_BASE + GGML.Q5_1,
  IQ4_NLG4: GROUPED_BASE + GGML.IQ4_NL,
} as const;
const LAYOUT_NAMES = new Map<number, string>([
  [KERNEL_LAYOUT.Q4_0X4, 'q4_0x4'],
  [KERNEL_LAYOUT.Q8_0X4, 'q8_0x4'],
  [KERNEL_LAYOUT.Q4_KX4, 'q4_Kx4'],
  ...[GGML.Q4_0, GGML.Q4_1, GGML.Q5_0, GGML.Q5_1, GGML.IQ4_NL].map((t) => [GROUPED_BASE + t, `${ggmlTypeName(t)}g4`] as const),
]);

/** The name of a ggml type or kernel layout (q4_0x4, q8_0x4, q4_Kx4, q5_0g4, ...). */
export function weightTypeName(type: number): string {
  return LAYOUT_NAMES.get(type) ?? ggmlTypeName(type);
}

// packActVec orders (assembly/matmul/vec.ts ORDER_*).
const NATURAL = 0,
  NIB32 = 1,
  NIB256 = 2,
  HALVES = 3,
  Q6K = 4,
  NAT8 = 5;

const row = (
  type: number,
  decoder: WeightTypeRow['decoder'],
  oneToken: WeightTypeRow['oneToken'],
  acts: 'q8' | 'f32',
  actBlock: number,
  scalesChecked: boolean,
  gateCols: WeightTypeRow['gateCols'],
  relaxedTile = false,
): WeightTypeRow => ({ type, decoder, wasm: true, oneToken, acts, actBlock, scalesChecked, gateCols, relaxedTile });

const FILE_TYPES: readonly WeightTypeRow[] = [
  // f32 has no one-token kernel: the f32 tile reads its rows in place at any n.
  row(GGML.F32, 'format', null, 'f32', 0, false, 'float'),
  row(GGML.F16, 'format', { order: HALVES, maxTokens: 1 }, 'f32', 0, false, 'float'),
  row(GGML.BF16, 'format', { order: HALVES, maxTokens: 4 }, 'f32', 0, false, 'float'),
  row(GGML.Q8_0, 'format', { order: NATURAL, maxTokens: 3 }, 'q8', 32, true, 'block32'),
  row(GGML.Q4_0, 'format', { order: NIB32, maxTokens: 6, relaxed: true }, 'q8', 32, true, 'block32', true),
  row(GGML.Q4_1, 'format', { order: NATURAL, maxTokens: 3 }, 'q8', 32, true, 'block32', true),
  row(GGML.Q5_0, 'format', { order: NATURAL, maxTokens: 3 }, 'q8', 32, true, 'block32', true),
  row(GGML.Q5_1, 'format', { order: NATURAL, maxTokens: 3 }, 'q8', 32, true, 'block32', true),
  row(GGML.IQ4_NL, 'format', { order: NATURAL, maxTokens: 3 }, 'q8', 32, true, 'block32'),
  row(GGML.Q4_K, decodeQ4K, { order: NIB256, maxTokens: 6, relaxed: true }, 'q8', 256, false, 'block256', true),
  row(GGML.Q5_K, decodeQ5K, { order: NIB256, maxTokens: 3, relaxed: true }, 'q8', 256, false, 'block256', true),
  row(GGML.Q6_K, decodeQ6K, { order: Q6K, maxTokens: 3, relaxed: true }, 'q8', 256, false, 'block256'),
  // q4_0 in four-row groups (assembly/matmul/vec_q4x4.ts): one row per lane of the relaxed dot. Relaxed builds
  // only (repackTypeOf); the tiles decode it row by row into q4_0's strips.
  {
    ...row(KERNEL_LAYOUT.Q4_0X4, 'format', { order: NAT8, maxTokens: 6, relaxed: true }, 'q8', 32, true, 'block32', true),
    repackOf: GGML.Q4_0,
    repackIn: 'relaxed',
  },
  // q8_0 in four-row groups (vec_q8x4.ts): one address stream per four rows. Both builds (repackTypeOf); the tiles
  // decode it row by row into q8_0's strips.
  { ...row(KERNEL_LAYOUT.Q8_0X4, 'format', { order: NATURAL, maxTokens: 3 }, 'q8', 32, true, 'block32'), repackOf: GGML.Q8_0, repackIn: 'all' },
  // q4_K the same way (vec_q4kx4.ts), x as q4_K's relaxed kernel takes it; d and dmin converted four at a time.
  {
    ...row(KERNEL_LAYOUT.Q4_KX4, decodeQ4K, { order: NIB256, maxTokens: 6, relaxed: true }, 'q8', 256, true, 'block256', true),
    repackOf: GGML.Q4_K,
    repackIn: 'relaxed',
  },
];

/**
 * A file type's row as its four-row grouped layout (assembly/matmul/decode.ts GROUPED: per block the four rows'
 * whole blocks in turn): the same kernels and facts, which vec.ts rowsQ reads as one stream.
 */
function grouped(file: number, repackIn: 'baseline' | 'all'): WeightTypeRow {
  const r = FILE_TYPES.find((x) => x.type === file)!;
  return { ...r, type: GROUPED_BASE + file, repackOf: file, repackIn };
}

export const WEIGHT_TYPES: readonly WeightTypeRow[] = [
  ...FILE_TYPES,
  // q4_0 in baseline builds (relaxed ones read q4_0x4); the other 32-value types without a layout of their own in both.
  grouped(GGML.Q4_0, 'baseline'),
  ...[GGML.Q4_1, GGML.Q5_0, GGML.Q5_1, GGML.IQ4_NL].map((t) => grouped(t, 'all')),
];

/**
 * The fields of assembly/matmul/types.ts's rows that its weightTypeFacts exports, in their FACT_* order, as
 * this table (and ggml's block sizes) give them: the matmul gate checks every type's agree.
 */
export const WASM_FACTS: readonly (readonly [string, (r: WeightTypeRow) => number])[] = [
  ['order', (r) => r.oneToken?.order ?? -1],
  ['actBlock', (r) => r.actBlock],
  ['blockBytes', (r) => ggmlType(r.repackOf ?? r.type)?.blockBytes ?? 0],
  ['blockValues', (r) => ggmlType(r.repackOf ?? r.type)?.blockValues ?? 0],
  ['scalesChecked', (r) => (r.scalesChecked ? 1 : 0)],
  ['vecRelaxed', (r) => (r.oneToken?.relaxed ? 1 : 0)],
];

const byType = new Map(WEIGHT_TYPES.map((r) => [r.type, r]));

/** The kernel layout weights of ggml `type` may be repacked to (a row with repackOf), or undefined. */
export function repackRowOf(type: number): WeightTypeRow | undefined {
  return WEIGHT_TYPES.find((r) => r.repackOf === type);
}

/** The row of a ggml type or kernel layout, or undefined (not a weight type the engine multiplies). */
export function weightType(type: number): WeightTypeRow | undefined {
  return byType.get(type);
}

/**
 * The block decoder of a ggml type, or undefined (kernel layouts too): K-quants from kquants.ts, the rest through the registered
 * format whose bytes are that type's (guarded: a same-named format whose bytes differ from ggml's is refused).
 */
export function blockDecoderOf(type: number): BlockDecoder | undefined {
  const r = byType.get(type);
  // A kernel layout's bytes are grouped rows, not blocks (interleave.ts gives a row back its file bytes).
  if (!r || r.repackOf !== undefined) return undefined;
  if (r.decoder !== 'format') return r.decoder;
  const t = ggmlType(type);
  const f = t && formats.get(t.name);
  if (!t || !f || f.ggmlType !== type || f.blockValues !== t.blockValues || f.blockBytes !== t.blockBytes) return undefined;
  return (src, so, dst, doff) => f.decodeBlock(src, so, dst, doff);
}
