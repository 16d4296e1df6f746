// The ggml tensor type table (ggml.c's type_traits): id, name, values per block, bytes per block.
// Checked against the real ggml in test/golden/kquants/types.json (tools/golden/kquants_golden.c).
import { UnknownFormatError } from '../errors.js';

export interface GgmlType {
  /** ggml_type enum value, as stored in GGUF tensor infos. */
  readonly id: number;
  /** ggml_type_name spelling ('q4_K', 'bf16'); equals our KvFormat id where bytes are identical. */
  readonly name: string;
  /** Values per block (ggml_blck_size); ne0 must be a multiple of it. */
  readonly blockValues: number;
  /** Bytes per block (ggml_type_size). */
  readonly blockBytes: number;
}

const QK_K = 256;
const t = (id: number, name: string, blockValues: number, blockBytes: number): GgmlType => Object.freeze({ id, name, blockValues, blockBytes });

/** Every ggml type id that exists; ids 4, 5, 31-33 and 36-38 were removed from ggml and are absent. */
const rows: readonly GgmlType[] = [
  t(0, 'f32', 1, 4),
  t(1, 'f16', 1, 2),
  t(2, 'q4_0', 32, 18),
  t(3, 'q4_1', 32, 20),
  t(6, 'q5_0', 32, 22),
  t(7, 'q5_1', 32, 24),
  t(8, 'q8_0', 32, 34),
  t(9, 'q8_1', 32, 36),
  t(10, 'q2_K', QK_K, 84),
  t(11, 'q3_K', QK_K, 110),
  t(12, 'q4_K', QK_K, 144),
  t(13, 'q5_K', QK_K, 176),
  t(14, 'q6_K', QK_K, 210),
  t(15, 'q8_K', QK_K, 292),
  t(16, 'iq2_xxs', QK_K, 66),
  t(17, 'iq2_xs', QK_K, 74),
  t(18, 'iq3_xxs', QK_K, 98),
  t(19, 'iq1_s', QK_K, 50),
  t(20, 'iq4_nl', 32, 18),
  t(21, 'iq3_s', QK_K, 110),
  t(22, 'iq2_s', QK_K, 82),
  t(23, 'iq4_xs', QK_K, 136),
  t(24, 'i8', 1, 1),
  t(25, 'i16', 1, 2),
  t(26, 'i32', 1, 4),
  t(27, 'i64', 1, 8),
  t(28, 'f64', 1, 8),
  t(29, 'iq1_m', QK_K, 56),
  t(30, 'bf16', 1, 2),
  t(34, 'tq1_0', QK_K, 54),
  t(35, 'tq2_0', QK_K, 66),
  t(39, 'mxfp4', 32, 17),
  t(40, 'nvfp4', 64, 36),
  t(41, 'q1_0', 128, 18),
  t(42, 'q2_0', 64, 18),
];

/** Named ids for the types kvpack dequantizes (the weight types of common GGUF files). */
export const GGML = Object.freeze({
  F32: 0,
  F16: 1,
  Q4_0: 2,
  Q4_1: 3,
  Q5_0: 6,
  Q5_1: 7,
  Q8_0: 8,
  Q4_K: 12,
  Q5_K: 13,
  Q6_K: 14,
  IQ4_NL: 20,
  BF16: 30,
});

export const ggmlTypes: ReadonlyMap<number, GgmlType> = new Map(rows.map((r) => [r.id, r]));
const byName: ReadonlyMap<string, GgmlType> = new Map(rows.map((r) => [r.name.toLowerCase(), r]));

/** Type by id, or undefined for ids ggml never had or removed. */
export function ggmlType(id: number): GgmlType | undefined {
  return ggmlTypes.get(id);
}

/** Type by name, case-insensitive ('Q4_K', 'q4_k', 'F16'); throws naming the known names. */
export function ggmlTypeByName(name: string): GgmlType {
  const r = byName.get(name.toLowerCase());
  if (!r)
    throw new UnknownFormatError(
      'ggml type',
      name,
      rows.map((x) => x.name),
    );
  return r;
}

/** Human-readable name of a type id, for error messages ('type 99' for unknown ids). */
export function ggmlTypeName(id: number): string {
  return ggmlTypes.get(id)?.name ?? `type ${id}`;
}

/** Bytes of a row of `ne0` values; ne0 must be a multiple of the block size. */
export function ggmlRowBytes(type: GgmlType, ne0: number): number {
  return (ne0 / type.blockValues) * type.blockBytes;
}
