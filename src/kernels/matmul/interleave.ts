// Kernel layouts that interleave weight rows, defined here in plain TS (the wasm repack at load is tested
// against it): q4_0x4 holds q4_0 rows four at a time. Per 32-value block, a group's 72 bytes are the four
// rows' f16 d (rows 0..3), then four 16-byte vectors, vector k holding qs bytes 4k..4k+3 of rows 0, 1, 2, 3.
// The relaxed one-token kernel (assembly/matmul/vec_q4x4.ts) then dots each row into its own lane.
import { ShapeError } from '../../errors.js';

/** q4_0 block bytes and the bytes of one block of a four-row group. */
const Q4_BLOCK = 18;
const GROUP_BLOCK = 4 * Q4_BLOCK;

/** q4_0 rows src [rows][rowBytes] (rows % 4 == 0) -> the q4_0x4 bytes of the same rows. */
export function interleaveQ4x4(src: Uint8Array, rowBytes: number, rows: number): Uint8Array {
  if (rows % 4 !== 0 || rowBytes % Q4_BLOCK !== 0 || src.length < rows * rowBytes)
    throw new ShapeError(`q4_0x4: ${rows} rows of ${rowBytes} B in ${src.length} B (rows must come in fours, rows in whole q4_0 blocks)`);
  const out = new Uint8Array(rows * rowBytes);
  const nb = rowBytes / Q4_BLOCK;
  for (let g = 0; g < rows; g += 4) {
    const base = g * rowBytes;
    for (let b = 0; b < nb; b++) {
      const o = base + b * GROUP_BLOCK;
      for (let r = 0; r < 4; r++) {
        const s = base + r * rowBytes + b * Q4_BLOCK;
        out[o + 2 * r] = src[s]!;
        out[o + 2 * r + 1] = src[s + 1]!;
        for (let k = 0; k < 4; k++) for (let j = 0; j < 4; j++) out[o + 8 + 16 * k + 4 * r + j] = src[s + 2 + 4 * k + j]!;
      }
    }
  }
  return out;
}

/** Row r of q4_0x4 bytes (groups from data[0]) -> its q4_0 row bytes in out [rowBytes]. */
export function q4x4Row(data: Uint8Array, rowBytes: number, r: number, out: Uint8Array): void {
  const nb = rowBytes / Q4_BLOCK;
  const base = (r - (r % 4)) * rowBytes;
  const lane = r % 4;
  for (let b = 0; b < nb; b++) {
    const o = base + b * GROUP_BLOCK;
    const d = b * Q4_BLOCK;
    out[d] = data[o + 2 * lane]!;
    out[d + 1] = data[o + 2 * lane + 1]!;
    for (let k = 0; k < 4; k++) for (let j = 0; j < 4; j++) out[d + 2 + 4 * k + j] = data[o + 8 + 16 * k + 4 * lane + j]!;
  }
}
