// Little-endian fp16 scale fields shared by block formats.
import { fp32ToFp16, FP16_TABLE } from '../numeric/half.js';

/** Writes fp16(value) at dst[off..off+2] and returns the value the stored half really holds. */
export function putF16(dst: Uint8Array, off: number, value: number): number {
  const h = fp32ToFp16(value);
  dst[off] = h & 0xff;
  dst[off + 1] = h >>> 8;
  return FP16_TABLE[h]!;
}

export function getF16(src: Uint8Array, off: number): number {
  return FP16_TABLE[src[off]! | (src[off + 1]! << 8)]!;
}
