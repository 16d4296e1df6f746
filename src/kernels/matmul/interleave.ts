// Kernel layouts that interleave weight rows four at a time, defined here in plain TS (the wasm repack at load
// is tested against it). A block of a four-row group holds each field of the type's block (its segments: d,
// dmin, scale words, qs words) for rows 0..3 in turn, unit by unit: unit k of row `lane` of a segment of
// `size`-byte units lies at the segment's start + 4 * size * k + size * lane. The relaxed one-token kernels
// (assembly/matmul/vec_q4x4.ts, vec_q4kx4.ts) then dot each row into its own lane from one 16-byte load; the
// grouped layouts (one segment, the whole block) let vec.ts rowsQ read four rows as one stream.
import { ShapeError } from '../../errors.js';
import { GGML, ggmlType, ggmlTypeName } from '../../gguf/types.js';
import { GROUPED_BASE, KERNEL_LAYOUT, weightTypeName } from './table.js';

/** Rows per group. */
const GROUP_ROWS = 4;

/** One field of a block: `units` units of `size` bytes per row. */
interface Segment {
  readonly size: number;
  readonly units: number;
}

export interface InterleavedLayout {
  /** The kernel layout's id (table.ts KERNEL_LAYOUT) and the ggml type whose rows it groups. */
  readonly id: number;
  readonly of: number;
  /** Bytes of the type's block; its segments, in block order, sum to it. */
  readonly blockBytes: number;
  readonly segments: readonly Segment[];
}

// q4_0: f16 d, 16 qs bytes. q8_0: f16 d, 32 qs bytes (one unit: each row's whole qs in turn). q4_K: f16 d, f16 dmin, 12 bytes of 6-bit scales and mins (3 words), 128 qs bytes.
const LAYOUTS: readonly InterleavedLayout[] = [
  {
    id: KERNEL_LAYOUT.Q4_0X4,
    of: GGML.Q4_0,
    blockBytes: 18,
    segments: [
      { size: 2, units: 1 },
      { size: 4, units: 4 },
    ],
  },
  {
    id: KERNEL_LAYOUT.Q8_0X4,
    of: GGML.Q8_0,
    blockBytes: 34,
    segments: [
      { size: 2, units: 1 },
      { size: 32, units: 1 },
    ],
  },
  // Four rows' whole blocks in turn (one unit of the block's size): q4_0 (baseline builds), q4_1, q5_0, q5_1, iq4_nl.
  ...[GGML.Q4_0, GGML.Q4_1, GGML.Q5_0, GGML.Q5_1, GGML.IQ4_NL].map((of) => {
    const blockBytes = ggmlType(of)!.blockBytes;
    return { id: GROUPED_BASE + of, of, blockBytes, segments: [{ size: blockBytes, units: 1 }] };
  }),
  {
    id: KERNEL_LAYOUT.Q4_KX4,
    of: GGML.Q4_K,
    blockBytes: 144,
    segments: [
      { size: 2, units: 1 },
      { size: 2, units: 1 },
      { size: 4, units: 3 },
      { size: 4, units: 32 },
    ],
  },
];

/** The interleaved layout of kernel layout id `type`, or undefined (a file layout). */
export function interleavedLayout(type: number): InterleavedLayout | undefined {
  return LAYOUTS.find((l) => l.id === type);
}

/**
 * Where byte i (< blockBytes) of row r's block b lies in the layout's bytes (groups from offset 0): the one
 * mapping both directions below use.
 */
function groupOffset(l: InterleavedLayout, rowBytes: number, r: number, b: number, i: number): number {
  const lane = r % GROUP_ROWS;
  let o = (r - lane) * rowBytes + b * GROUP_ROWS * l.blockBytes;
  for (const s of l.segments) {
    const bytes = s.size * s.units;
    if (i < bytes) return o + GROUP_ROWS * s.size * Math.floor(i / s.size) + s.size * lane + (i % s.size);
    i -= bytes;
    o += GROUP_ROWS * bytes;
  }
  throw new ShapeError(`${weightTypeName(l.id)}: byte ${i} is past a ${ggmlTypeName(l.of)} block`);
}

/** Rows src [rows][rowBytes] of the layout's type (rows % 4 == 0) -> the layout's bytes of the same rows. */
export function interleaveRows(l: InterleavedLayout, src: Uint8Array, rowBytes: number, rows: number): Uint8Array {
  if (rows % GROUP_ROWS !== 0 || rowBytes % l.blockBytes !== 0 || src.length < rows * rowBytes)
    throw new ShapeError(
      `${weightTypeName(l.id)}: ${rows} rows of ${rowBytes} B in ${src.length} B (rows must come in fours, rows in whole ${ggmlTypeName(l.of)} blocks)`,
    );
  const out = new Uint8Array(rows * rowBytes);
  for (let r = 0; r < rows; r++)
    for (let b = 0; b < rowBytes / l.blockBytes; b++)
      for (let i = 0; i < l.blockBytes; i++) out[groupOffset(l, rowBytes, r, b, i)] = src[r * rowBytes + b * l.blockBytes + i]!;
  return out;
}

/** Row r of the layout's bytes (groups from data[0]) -> its file-layout row bytes in out [rowBytes]. */
export function groupedRow(l: InterleavedLayout, data: Uint8Array, rowBytes: number, r: number, out: Uint8Array): void {
  for (let b = 0; b < rowBytes / l.blockBytes; b++) for (let i = 0; i < l.blockBytes; i++) out[b * l.blockBytes + i] = data[groupOffset(l, rowBytes, r, b, i)]!;
}
