// f32 -> fp16 bits by SIMD bit math, without branches: the same bits as floatToHalf (common.ts) and
// numeric/half.ts. Used four lanes at a time by f16_encode, one lane at a time for block scales.
import { halfToFloat } from './common';

/**
 * Four f32 lanes -> fp16 bits in i32 lanes: round to nearest even, >= 65520 -> Inf, NaN -> 0x7e00, sign
 * kept. All three cases are computed and the right one selected.
 */
@inline export function halfBits4(x: v128): v128 {
  const a = v128.and(x, i32x4.splat(0x7fffffff));
  // Normal halves: rebias the exponent by -112 and round the 13 dropped bits to nearest even; the carry
  // of a round-up may reach the exponent (65520 becomes Inf, as in the reference).
  const odd = v128.and(i32x4.shr_u(a, 13), i32x4.splat(1));
  const normal = i32x4.shr_u(i32x4.add(i32x4.add(a, i32x4.splat(0xc8000fff)), odd), 13);
  // |x| < 2^-14 (subnormal half or zero): 0.5 + |x| rounds |x| to a multiple of 2^-24 (nearest even, by
  // the FPU), so the low bits of the sum are the half's mantissa.
  const sub = i32x4.sub(f32x4.add(a, f32x4.splat(0.5)), i32x4.splat(0x3f000000));
  const nanInf = v128.bitselect(i32x4.splat(0x7e00), i32x4.splat(0x7c00), i32x4.gt_s(a, i32x4.splat(0x7f800000)));
  let h = v128.bitselect(sub, normal, i32x4.lt_s(a, i32x4.splat(0x38800000)));
  h = v128.bitselect(nanInf, h, i32x4.ge_s(a, i32x4.splat(0x47800000)));
  return v128.or(h, v128.and(i32x4.shr_u(x, 16), i32x4.splat(0x8000)));
}

/** encode/half_round.ts halfNearest without branches: nearest even through f32, +-Inf saturated to +-65504. */
@inline export function halfNearestSat(x: f64): u32 {
  const h = <u32>i32x4.extract_lane(halfBits4(f32x4.splat(<f32>x)), 0);
  return select<u32>((h & 0x8000) | 0x7bff, h, (h & 0x7fff) == 0x7c00);
}

/** encode/half_round.ts halfUp without data-dependent branches: the smallest half >= x, saturated at 65504. */
@inline export function halfUpSat(x: f64): u32 {
  const h = halfNearestSat(x);
  // Not >= x (below, or x NaN): positive steps up to h + 1 (65504 stays), negative toward zero.
  const up = select<u32>(h, h + 1, h == 0x7bff);
  const down = select<u32>(0, h - 1, (h & 0x7fff) == 0);
  return select<u32>(h, select<u32>(down, up, (h & 0x8000) != 0), <f64>halfToFloat(h) >= x);
}
