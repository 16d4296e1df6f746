// Kernel layouts that interleave weight rows, defined here in plain TS (the wasm repack at load is tested
// against it): q4_0x4 holds q4_0 rows four at a time. Per 32-value block, a group's 72 bytes are the four
// rows' f16 d (rows 0..3), then four 16-byte vectors, vector k holding qs bytes 4k..4k+3 of rows 0, 1, 2, 3.
// The relaxed one-token kernel (assembly/matmul/vec_q4x4.ts) then dots each row into its own lane.
import { ShapeError } from '../../errors.js';

/** q4_0 block bytes and the bytes of one block of a four-row group. */
const Q4_BLOCK = 18;
const GROUP_BLOCK = 4 * Q4_BLOCK;

/**
 * Where byte i (< 18) of row r's q4_0 block b lies in q4_0x4 bytes (groups from offset 0): the one mapping
 * both directions below use. Bytes 0-1 are d, 2..17 the qs bytes, 4 per vector.
 */
function q4x4Offset(rowBytes: number, r: number, b: number, i: number): number {
  const o = (r - (r % 4)) * rowBytes + b * GROUP_BLOCK;
  const lane = r % 4;
  if (i < 2) return o + 2 * lane + i;
  const q = i - 2;
  return o + 8 + 16 * (q >> 2) + 4 * lane + (q & 3);
}

/** q4_0 rows src [rows][rowBytes] (rows % 4 == 0) -> the q4_0x4 bytes of the same rows. */
export function interleaveQ4x4(src: Uint8Array, rowBytes: number, rows: number): Uint8Array {
  if (rows % 4 !== 0 || rowBytes % Q4_BLOCK !== 0 || src.length < rows * rowBytes)
    throw new ShapeError(`q4_0x4: ${rows} rows of ${rowBytes} B in ${src.length} B (rows must come in fours, rows in whole q4_0 blocks)`);
  const out = new Uint8Array(rows * rowBytes);
  for (let r = 0; r < rows; r++)
    for (let b = 0; b < rowBytes / Q4_BLOCK; b++) for (let i = 0; i < Q4_BLOCK; i++) out[q4x4Offset(rowBytes, r, b, i)] = src[r * rowBytes + b * Q4_BLOCK + i]!;
  return out;
}

/** Row r of q4_0x4 bytes (groups from data[0]) -> its q4_0 row bytes in out [rowBytes]. */
export function q4x4Row(data: Uint8Array, rowBytes: number, r: number, out: Uint8Array): void {
  for (let b = 0; b < rowBytes / Q4_BLOCK; b++) for (let i = 0; i < Q4_BLOCK; i++) out[b * Q4_BLOCK + i] = data[q4x4Offset(rowBytes, r, b, i)]!;
}
