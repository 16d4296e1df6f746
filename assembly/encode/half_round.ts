// f16 scale fields with a chosen rounding direction, mirroring src/formats/scale16.ts bit for bit: the
// argument is a float64 (as in JS), converted to f32 first exactly as fp32ToFp16 does.
import { floatToHalf, halfToFloat } from '../shared/common';

/** fp16 bits of x rounded to nearest even (through f32), saturated to +-65504 instead of +-Inf. */
@inline export function halfNearest(x: f64): u32 {
  const h = floatToHalf(<f32>x);
  return (h & 0x7fff) == 0x7c00 ? (h & 0x8000) | 0x7bff : h;
}

/** fp16 bits of the smallest half >= x; saturates at 65504 (scale16.halfUp). */
export function halfUp(x: f64): u32 {
  const h = halfNearest(x);
  if (<f64>halfToFloat(h) >= x) return h;
  // Positive (or +0): next half up is h + 1; negative: step toward zero, h - 1.
  if ((h & 0x8000) != 0) return (h & 0x7fff) == 0 ? 0 : h - 1;
  return h == 0x7bff ? h : h + 1;
}

/** fp16 bits of the largest half <= x; saturates at -65504 (scale16.halfDown). */
@inline export function halfDown(x: f64): u32 {
  const h = halfUp(-x);
  return (h & 0x7fff) == 0 ? 0 : h ^ 0x8000;
}
