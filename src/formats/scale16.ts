// f16 scale fields with a chosen rounding direction, saturated at +-65504 so a stored scale is never Inf.
import { fp32ToFp16, FP16_TABLE } from '../numeric/half.js';

/** Largest finite fp16 value; scales of blocks beyond it saturate (the errorBound then grows to match). */
export const F16_MAX = 65504;

/** fp16 bits of x (finite) rounded to nearest even, saturated to +-65504 instead of +-Inf. */
export function halfNearest(x: number): number {
  const h = fp32ToFp16(x);
  return (h & 0x7fff) === 0x7c00 ? (h & 0x8000) | 0x7bff : h;
}

/** fp16 bits of the smallest half >= x (x finite); saturates at 65504 (then the half may be < x). */
export function halfUp(x: number): number {
  const h = halfNearest(x);
  if (FP16_TABLE[h]! >= x) return h;
  // Positive (or +0): next half up has bits h + 1; negative: step toward zero, bits h - 1.
  if (h & 0x8000) return (h & 0x7fff) === 0 ? 0 : h - 1;
  return h === 0x7bff ? h : h + 1;
}

/** fp16 bits of the largest half <= x (x finite); saturates at -65504. */
export function halfDown(x: number): number {
  const h = halfUp(-x);
  return (h & 0x7fff) === 0 ? 0 : h ^ 0x8000;
}

/** Writes fp16 bits h little-endian and returns the value they hold. */
export function putHalf(dst: Uint8Array, off: number, h: number): number {
  dst[off] = h & 0xff;
  dst[off + 1] = h >>> 8;
  return FP16_TABLE[h]!;
}

export function halfValue(h: number): number {
  return FP16_TABLE[h]!;
}
