// Whole-array encode/decode over a registered format (the reference path; kernels live elsewhere).
import { getFormat } from './registry.js';
import { blocksFor, bytesFor, type KvFormat } from './format.js';
import { ShapeError, assertFinite } from '../errors.js';

/**
 * Shape [rows, cols]. Token-axis formats: rows = tokens, blocks run along cols (each row padded to whole
 * blocks). Channel-axis formats: rows = tokens, cols = channels; blocks run along rows, stored group by
 * group (`blockValues` tokens), channel by channel within a group; the token count is padded with zeros.
 */
export type Shape = readonly [rows: number, cols: number];

function resolveShape(f: KvFormat, count: number, shape?: Shape): Shape {
  const s: Shape = shape ?? (f.axis === 'token' ? [1, count] : [count, 1]);
  const [rows, cols] = s;
  if (!Number.isInteger(rows) || !Number.isInteger(cols) || rows < 0 || cols < 0) {
    throw new ShapeError(`shape [${rows}, ${cols}] must be two non-negative integers`);
  }
  if (rows * cols !== count) throw new ShapeError(`${count} values do not fill shape [${rows}, ${cols}]`);
  return s;
}

/** Encodes finite float32 values; NaN/Inf throw NonFiniteError naming the index. */
export function encode(formatId: string, values: Float32Array, shape?: Shape): Uint8Array {
  const f = getFormat(formatId);
  const [rows, cols] = resolveShape(f, values.length, shape);
  assertFinite(`encode(${formatId})`, values);
  const out = new Uint8Array(bytesFor(f, rows, cols));
  const B = f.blockValues;
  const block = new Float32Array(B);
  if (f.axis === 'token') {
    const nb = blocksFor(f, cols);
    for (let r = 0; r < rows; r++) {
      for (let ib = 0; ib < nb; ib++) {
        block.fill(0);
        const n = Math.min(B, cols - ib * B);
        block.set(values.subarray(r * cols + ib * B, r * cols + ib * B + n));
        f.encodeBlock(block, 0, out, (r * nb + ib) * f.blockBytes);
      }
    }
  } else {
    const groups = blocksFor(f, rows);
    for (let g = 0; g < groups; g++) {
      for (let c = 0; c < cols; c++) {
        block.fill(0);
        for (let t = 0; t < B && g * B + t < rows; t++) block[t] = values[(g * B + t) * cols + c]!;
        f.encodeBlock(block, 0, out, (g * cols + c) * f.blockBytes);
      }
    }
  }
  return out;
}

/** Decodes `count` values (layout as in `encode`); any bytes of the right length decode without throwing. */
export function decode(formatId: string, bytes: Uint8Array, count: number, shape?: Shape): Float32Array {
  const f = getFormat(formatId);
  const [rows, cols] = resolveShape(f, count, shape);
  const need = bytesFor(f, rows, cols);
  if (bytes.length !== need) {
    throw new ShapeError(`decode(${formatId}): shape [${rows}, ${cols}] needs ${need} bytes, got ${bytes.length}`);
  }
  const out = new Float32Array(count);
  const B = f.blockValues;
  const block = new Float32Array(B);
  if (f.axis === 'token') {
    const nb = blocksFor(f, cols);
    for (let r = 0; r < rows; r++) {
      for (let ib = 0; ib < nb; ib++) {
        f.decodeBlock(bytes, (r * nb + ib) * f.blockBytes, block, 0);
        const n = Math.min(B, cols - ib * B);
        out.set(block.subarray(0, n), r * cols + ib * B);
      }
    }
  } else {
    const groups = blocksFor(f, rows);
    for (let g = 0; g < groups; g++) {
      for (let c = 0; c < cols; c++) {
        f.decodeBlock(bytes, (g * cols + c) * f.blockBytes, block, 0);
        for (let t = 0; t < B && g * B + t < rows; t++) out[(g * B + t) * cols + c] = block[t]!;
      }
    }
  }
  return out;
}
