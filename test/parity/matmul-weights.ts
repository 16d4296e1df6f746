// Random weights of every ggml type the matmuls read, and the error bound of int8 ('q8') activations: the
// matmul parity checks (test/parity/matmul-gate.ts, src/kernels/matmul/matmul.test.ts) share them.
import { encode } from '../../src/formats/codec.js';
import { GGML, ggmlType } from '../../src/gguf/types.js';
import { WEIGHT_TYPES } from '../../src/kernels/matmul/table.js';
import type { Prng } from '../../src/numeric/prng.js';

/**
 * Every file weight type the wasm matmuls take: the weight-type table's rows (adding a row adds it to the gate).
 * Kernel layouts (rows with repackOf) are reached through their file type's weights, repacked at load.
 */
export const MATMUL_TYPES: readonly number[] = WEIGHT_TYPES.filter((r) => r.wasm && r.repackOf === undefined).map((r) => r.type);
/** The kernel layouts: each is checked on its file type's weights of whole row groups. */
export const REPACK_TYPES: readonly number[] = WEIGHT_TYPES.filter((r) => r.repackOf !== undefined).map((r) => r.type);
/** Types in whole 256-value blocks, and the float types (any column count). */
export const K_TYPES: ReadonlySet<number> = new Set(WEIGHT_TYPES.filter((r) => r.gateCols === 'block256').map((r) => r.type));
export const FLOAT_TYPES: ReadonlySet<number> = new Set(WEIGHT_TYPES.filter((r) => r.gateCols === 'float').map((r) => r.type));

/** f32 activations: wasm and TS sum in different orders; allowed error relative to sum |w x|. */
export const F32_ACT_REL = 2e-6;
/** q8 activations: each value is off by at most half its block's step amax/127, times |w|; slack for f32 sums. */
export const Q8_ACT_SLACK = 1.001;

/** A [rows, cols] weight: ggml-identical formats encode random normals; K-quants get random bytes with sane f16 scales. */
export function randomWeight(type: number, rows: number, cols: number, rng: Prng): Uint8Array {
  const t = ggmlType(type)!;
  if (!K_TYPES.has(type)) return encode(t.name, rng.normals(rows * cols), [rows, cols]);
  const bytes = new Uint8Array((cols / t.blockValues) * t.blockBytes * rows);
  for (let i = 0; i < bytes.length; i++) bytes[i] = rng.int(256);
  const f16 = (at: number) => {
    bytes[at] = rng.int(256);
    bytes[at + 1] = 0x1c + rng.int(8);
  };
  for (let b = 0; b < bytes.length; b += t.blockBytes) {
    if (type === GGML.Q6_K) f16(b + 208);
    else {
      f16(b);
      f16(b + 2);
    }
  }
  return bytes;
}

/**
 * The largest |y - ref| allowed for each output of one token: f32 accumulation (F32_ACT_REL of sum |w x|),
 * plus, with int8 activations (qb values per scale), half an activation step per value times |w|.
 * full: the weight dequantized [rows, cols]; x: the token [cols].
 */
export function matmulTolerance(full: Float32Array, x: Float32Array, rows: number, cols: number, qb: number | null): Float64Array {
  const half = new Float64Array(cols);
  if (qb) {
    for (let b = 0; b < cols; b += qb) {
      let amax = 0;
      for (let c = b; c < b + qb && c < cols; c++) amax = Math.max(amax, Math.abs(x[c]!));
      for (let c = b; c < b + qb && c < cols; c++) half[c] = amax / 127 / 2;
    }
  }
  const tol = new Float64Array(rows);
  for (let r = 0; r < rows; r++) {
    let mag = 0,
      bound = 0;
    for (let c = 0; c < cols; c++) {
      const wv = Math.abs(full[r * cols + c]!);
      mag += wv * Math.abs(x[c]!);
      bound += wv * half[c]!;
    }
    tol[r] = Q8_ACT_SLACK * bound + F32_ACT_REL * mag + 1e-30;
  }
  return tol;
}
