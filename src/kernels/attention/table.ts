// The kernel table: one row per wasm kernel, plain data. A row names the format, the op, the precision it
// computes at, the module export and its calling convention (abi.ts), plus any per-format constant or
// lookup table the kernel reads. The registry resolves every kernel from these rows, on the main thread
// and in the pool workers alike: adding a kernel is one row here (and its export in assembly/index.ts).
import { DefinitionError } from '../../errors.js';
import { registerLookupTables } from '../runtime/wasm.js';
import type { Abi } from './abi.js';
import { q2c_0 } from '../../formats/q2c_0.js';
import { LLOYD_MAX_4 } from '../../numeric/lloydmax.js';

export type Op = 'encode' | 'decode' | 'scores' | 'accumulate';
/**
 * What a kernel computes at. 'f32': exactly the dequantized values (every op). Scores 'int8' / 'int16': q
 * quantized per 32 values, integer dots (attend.ts QPrecision). Accumulate 'int16': softmax weight x V
 * block scale rounded to 16 bits per 32 tokens (attend.ts VPrecision).
 */
export type Precision = 'f32' | 'int8' | 'int16';

export interface KernelRow {
  readonly format: string;
  readonly op: Op;
  readonly precision: Precision;
  readonly impl: 'wasm';
  /** Export of the kernel module (assembly/index.ts). */
  readonly export: string;
  readonly abi: Abi;
  /** A constant the kernel takes as its last argument (abi.ts `param`). */
  readonly param?: number;
  /** f32 values placed in arena memory once at load; the kernel gets their address (abi.ts `table`). */
  readonly table?: readonly number[];
}

/** q2c_0's encode threshold between the inner and outer levels, as the float32 the kernel compares with. */
const Q2C_T_HI = Math.fround(LLOYD_MAX_4.thresholds[2]);

/**
 * q2c_0's level table: 256 x f32x4, byte b -> the levels of its four 2-bit codes (tokens 0..3, bits 2i..2i+1),
 * read back through the reference decoder (scale d = 1.0, every code equal).
 */
const Q2C_LEVELS: readonly number[] = (() => {
  const block = new Uint8Array(q2c_0.blockBytes);
  const out = new Float32Array(q2c_0.blockValues);
  const level = [0, 1, 2, 3].map((code) => {
    block[0] = 0x00;
    block[1] = 0x3c; // f16 1.0
    block.fill(code * 0x55, 2);
    q2c_0.decodeBlock(block, 0, out, 0);
    return out[0]!;
  });
  return Object.freeze(Array.from({ length: 1024 }, (_, i) => level[((i >> 2) >> (2 * (i & 3))) & 3]!));
})();

function row(format: string, op: Op, precision: Precision, exp: string, abi: Abi, extra: { param?: number; table?: readonly number[] } = {}): KernelRow {
  return Object.freeze({ format, op, precision, impl: 'wasm' as const, export: exp, abi, ...extra });
}

export const KERNEL_TABLE: readonly KernelRow[] = Object.freeze([
  // Token axis: a kernel reads whole rows of one kv head starting at its first token.
  row('f32', 'encode', 'f32', 'f32_encode', 'encode'),
  row('f32', 'decode', 'f32', 'f32_decode', 'decode'),
  row('f32', 'scores', 'f32', 'f32_scores', 'scores'),
  row('f32', 'accumulate', 'f32', 'f32_accum', 'accum'),
  row('f16', 'encode', 'f32', 'f16_encode', 'encode'),
  row('f16', 'decode', 'f32', 'f16_decode', 'decode'),
  row('f16', 'scores', 'f32', 'f16_scores', 'scores'),
  row('f16', 'accumulate', 'f32', 'f16_accum', 'accum'),
  row('bf16', 'encode', 'f32', 'bf16_encode', 'encode'),
  row('bf16', 'decode', 'f32', 'bf16_decode', 'decode'),
  row('bf16', 'scores', 'f32', 'bf16_scores', 'scores'),
  row('bf16', 'accumulate', 'f32', 'bf16_accum', 'accum'),
  row('q8_0', 'encode', 'f32', 'q8_0_encode', 'encode'),
  row('q8_0', 'decode', 'f32', 'q8_0_decode', 'decode'),
  row('q8_0', 'scores', 'f32', 'q8_0_scores', 'scores'),
  row('q8_0', 'scores', 'int8', 'q8_0_scores_i', 'scores-int'),
  row('q8_0', 'scores', 'int16', 'q8_0_scores_i', 'scores-int'),
  row('q8_0', 'accumulate', 'f32', 'q8_0_accum', 'accum'),
  row('q8_0', 'accumulate', 'int16', 'q8_0_accum_w16', 'accum'),
  row('q4_0', 'encode', 'f32', 'q4_0_encode', 'encode'),
  row('q4_0', 'decode', 'f32', 'q4_0_decode', 'decode'),
  row('q4_0', 'scores', 'f32', 'q4_0_scores', 'scores'),
  row('q4_0', 'scores', 'int8', 'q4_0_scores_i', 'scores-int'),
  row('q4_0', 'scores', 'int16', 'q4_0_scores_i', 'scores-int'),
  row('q4_0', 'accumulate', 'f32', 'q4_0_accum', 'accum'),
  row('q4_0', 'accumulate', 'int16', 'q4_0_accum_w16', 'accum'),
  row('q4_1', 'encode', 'f32', 'q4_1_encode', 'encode'),
  row('q4_1', 'decode', 'f32', 'q4_1_decode', 'decode'),
  row('q4_1', 'scores', 'f32', 'q4_1_scores', 'scores'),
  row('q4_1', 'accumulate', 'f32', 'q4_1_accum', 'accum'),
  row('q5_0', 'encode', 'f32', 'q5_0_encode', 'encode'),
  row('q5_0', 'decode', 'f32', 'q5_0_decode', 'decode'),
  row('q5_0', 'scores', 'f32', 'q5_0_scores', 'scores'),
  row('q5_0', 'accumulate', 'f32', 'q5_0_accum', 'accum'),
  row('q5_1', 'encode', 'f32', 'q5_1_encode', 'encode'),
  row('q5_1', 'decode', 'f32', 'q5_1_decode', 'decode'),
  row('q5_1', 'scores', 'f32', 'q5_1_scores', 'scores'),
  row('q5_1', 'accumulate', 'f32', 'q5_1_accum', 'accum'),
  row('iq4_nl', 'encode', 'f32', 'iq4_nl_encode', 'encode'),
  row('iq4_nl', 'decode', 'f32', 'iq4_nl_decode', 'decode'),
  row('iq4_nl', 'scores', 'f32', 'iq4_nl_scores', 'scores'),
  row('iq4_nl', 'accumulate', 'f32', 'iq4_nl_accum', 'accum'),
  row('nf4', 'encode', 'f32', 'nf4_encode', 'encode'),
  row('nf4', 'decode', 'f32', 'nf4_decode', 'decode'),
  row('nf4', 'scores', 'f32', 'nf4_scores', 'scores'),
  row('nf4', 'accumulate', 'f32', 'nf4_accum', 'accum'),
  row('int4_g32', 'encode', 'f32', 'int4_g32_encode', 'encode'),
  row('int4_g32', 'decode', 'f32', 'int4_g32_decode', 'decode'),
  row('int4_g32', 'scores', 'f32', 'int4_g32_scores', 'scores'),
  row('int4_g32', 'accumulate', 'f32', 'int4_g32_accum', 'accum'),
  row('int4_g64', 'encode', 'f32', 'int4_g64_encode', 'encode'),
  row('int4_g64', 'decode', 'f32', 'int4_g64_decode', 'decode'),
  row('int4_g64', 'scores', 'f32', 'int4_g64_scores', 'scores'),
  row('int4_g64', 'accumulate', 'f32', 'int4_g64_accum', 'accum'),
  row('int4_g128', 'encode', 'f32', 'int4_g128_encode', 'encode'),
  row('int4_g128', 'decode', 'f32', 'int4_g128_decode', 'decode'),
  row('int4_g128', 'scores', 'f32', 'int4_g128_scores', 'scores'),
  row('int4_g128', 'accumulate', 'f32', 'int4_g128_accum', 'accum'),
  row('int2_g32', 'encode', 'f32', 'int2_g32_encode', 'encode'),
  row('int2_g32', 'decode', 'f32', 'int2_g32_decode', 'decode'),
  row('int2_g32', 'scores', 'f32', 'int2_g32_scores', 'scores'),
  row('int2_g32', 'accumulate', 'f32', 'int2_g32_accum', 'accum'),
  row('int2_g64', 'encode', 'f32', 'int2_g64_encode', 'encode'),
  row('int2_g64', 'decode', 'f32', 'int2_g64_decode', 'decode'),
  row('int2_g64', 'scores', 'f32', 'int2_g64_scores', 'scores'),
  row('int2_g64', 'accumulate', 'f32', 'int2_g64_accum', 'accum'),
  row('int2_g128', 'encode', 'f32', 'int2_g128_encode', 'encode'),
  row('int2_g128', 'decode', 'f32', 'int2_g128_decode', 'decode'),
  row('int2_g128', 'scores', 'f32', 'int2_g128_scores', 'scores'),
  row('int2_g128', 'accumulate', 'f32', 'int2_g128_accum', 'accum'),
  row('int2s_g8', 'encode', 'f32', 'int2s_g8_encode', 'encode'),
  row('int2s_g8', 'decode', 'f32', 'int2s_g8_decode', 'decode'),
  row('int2s_g8', 'scores', 'f32', 'int2s_g8_scores', 'scores'),
  row('int2s_g8', 'accumulate', 'f32', 'int2s_g8_accum', 'accum'),
  row('int2s_g4', 'encode', 'f32', 'int2s_g4_encode', 'encode'),
  row('int2s_g4', 'decode', 'f32', 'int2s_g4_decode', 'decode'),
  row('int2s_g4', 'scores', 'f32', 'int2s_g4_scores', 'scores'),
  row('int2s_g4', 'accumulate', 'f32', 'int2s_g4_accum', 'accum'),
  row('tern_g32', 'encode', 'f32', 'tern_g32_encode', 'encode'),
  row('tern_g32', 'decode', 'f32', 'tern_g32_decode', 'decode'),
  row('tern_g32', 'scores', 'f32', 'tern_g32_scores', 'scores'),
  row('tern_g32', 'accumulate', 'f32', 'tern_g32_accum', 'accum'),
  row('tern_g8', 'encode', 'f32', 'tern_g8_encode', 'encode'),
  row('tern_g8', 'decode', 'f32', 'tern_g8_decode', 'decode'),
  row('tern_g8', 'scores', 'f32', 'tern_g8_scores', 'scores'),
  row('tern_g8', 'accumulate', 'f32', 'tern_g8_accum', 'accum'),
  row('tern_g4', 'encode', 'f32', 'tern_g4_encode', 'encode'),
  row('tern_g4', 'decode', 'f32', 'tern_g4_decode', 'decode'),
  row('tern_g4', 'scores', 'f32', 'tern_g4_scores', 'scores'),
  row('tern_g4', 'accumulate', 'f32', 'tern_g4_accum', 'accum'),
  row('sign_g32', 'encode', 'f32', 'sign_g32_encode', 'encode'),
  row('sign_g32', 'decode', 'f32', 'sign_g32_decode', 'decode'),
  row('sign_g32', 'scores', 'f32', 'sign_g32_scores', 'scores'),
  row('sign_g32', 'accumulate', 'f32', 'sign_g32_accum', 'accum'),
  row('sign_g8', 'encode', 'f32', 'sign_g8_encode', 'encode'),
  row('sign_g8', 'decode', 'f32', 'sign_g8_decode', 'decode'),
  row('sign_g8', 'scores', 'f32', 'sign_g8_scores', 'scores'),
  row('sign_g8', 'accumulate', 'f32', 'sign_g8_accum', 'accum'),
  row('sign_g4', 'encode', 'f32', 'sign_g4_encode', 'encode'),
  row('sign_g4', 'decode', 'f32', 'sign_g4_decode', 'decode'),
  row('sign_g4', 'scores', 'f32', 'sign_g4_scores', 'scores'),
  row('sign_g4', 'accumulate', 'f32', 'sign_g4_accum', 'accum'),
  // Channel axis: the kernels take the run's token t0 and walk its groups themselves.
  row('q2c_0', 'encode', 'f32', 'q2c_0_encode', 'encode-channel', { param: Q2C_T_HI }),
  row('q2c_0', 'decode', 'f32', 'q2c_0_decode', 'decode-channel', { table: Q2C_LEVELS }),
  row('q2c_0', 'scores', 'f32', 'q2c_0_scores', 'scores-channel', { table: Q2C_LEVELS }),
  row('q2c_0', 'accumulate', 'f32', 'q2c_0_accum', 'accum-channel', { table: Q2C_LEVELS }),
  row('int4c_g32', 'encode', 'f32', 'int4c_g32_encode', 'encode-channel'),
  row('int4c_g32', 'decode', 'f32', 'int4c_g32_decode', 'decode-channel'),
  row('int4c_g32', 'scores', 'f32', 'int4c_g32_scores', 'scores-channel'),
  row('int4c_g32', 'accumulate', 'f32', 'int4c_g32_accum', 'accum-channel'),
  row('int2c_g32', 'encode', 'f32', 'int2c_g32_encode', 'encode-channel'),
  row('int2c_g32', 'decode', 'f32', 'int2c_g32_decode', 'decode-channel'),
  row('int2c_g32', 'scores', 'f32', 'int2c_g32_scores', 'scores-channel'),
  row('int2c_g32', 'accumulate', 'f32', 'int2c_g32_accum', 'accum-channel'),
]);

/** `format:op:precision:impl`, the key the registry and attend reports use. */
export function kernelKey(format: string, op: Op, precision: Precision, impl: string): string {
  return `${format}:${op}:${precision}:${impl}`;
}

const byKey: ReadonlyMap<string, KernelRow> = (() => {
  const m = new Map<string, KernelRow>();
  for (const r of KERNEL_TABLE) {
    const k = kernelKey(r.format, r.op, r.precision, r.impl);
    if (m.has(k)) throw new DefinitionError(`kernel table: two rows for ${k}`);
    m.set(k, r);
  }
  return m;
})();

/** The row with this key, if any. */
export function tableRow(key: string): KernelRow | undefined {
  return byKey.get(key);
}

/** The lookup tables rows read, each once (the wasm loader places them in arena memory). */
export function rowTables(): Array<readonly number[]> {
  return [...new Set(KERNEL_TABLE.flatMap((r) => (r.table ? [r.table] : [])))];
}

// Every kernel instance places the rows' lookup tables in its arena (runtime/wasm.ts).
registerLookupTables(rowTables());
