// Encoders for the affine min-max formats (src/formats/affine.ts): token axis int4/int2_g32/64/128 and KIVI's
// channel axis int4c/int2c_g32. The reference computes in float64, so these do too (f64 ops are IEEE-exact).
import { halfToFloat } from '../shared/common';
import { halfUp, halfDown } from './half_round';

/** Values j..j+3 of a group whose values step `step` bytes (4: contiguous, one vector load). */
@inline function load4(src: usize, step: usize, j: i32): v128 {
  if (step == 4) return v128.load(src + (<usize>j << 2));
  const p = src + <usize>j * step;
  return f32x4(load<f32>(p), load<f32>(p + step), load<f32>(p + 2 * step), load<f32>(p + 3 * step));
}

/** Codes of two values (f64 lanes): clamp(floor((x - m) / d + 0.5), 0, top); NaN -> 0 as the JS Uint8Array store. */
@inline function codes2(x: v128, m: v128, d: v128, top: v128): v128 {
  const t = f64x2.floor(f64x2.add(f64x2.div(f64x2.sub(x, m), d), f64x2.splat(0.5)));
  return i32x4.trunc_sat_f64x2_s_zero(f64x2.max(f64x2.splat(0), f64x2.min(top, t)));
}

/**
 * One group of n values, value j at src + j*step bytes -> f16 d, f16 m, codes low bits first.
 * code = min(top, floor((x - m) / d + 0.5)) (0 when d = 0), m rounded down and d up to f16.
 * f32x4 min/max order -0 below +0 and propagate NaN, as Math.min/max do.
 */
@inline function encodeGroup(src: usize, step: usize, n: i32, bits: i32, dst: usize): void {
  let vlo = f32x4.splat(f32.POSITIVE_INFINITY);
  let vhi = f32x4.splat(f32.NEGATIVE_INFINITY);
  for (let j = 0; j < n; j += 4) {
    const x = load4(src, step, j);
    vlo = f32x4.min(vlo, x);
    vhi = f32x4.max(vhi, x);
  }
  const lo = <f64>min(min(f32x4.extract_lane(vlo, 0), f32x4.extract_lane(vlo, 1)), min(f32x4.extract_lane(vlo, 2), f32x4.extract_lane(vlo, 3)));
  const hi = <f64>max(max(f32x4.extract_lane(vhi, 0), f32x4.extract_lane(vhi, 1)), max(f32x4.extract_lane(vhi, 2), f32x4.extract_lane(vhi, 3)));
  const top = <f64>((1 << bits) - 1);
  const mBits = halfDown(lo);
  const m = <f64>halfToFloat(mBits);
  const sBits = halfUp((hi - m) / top);
  const d = <f64>halfToFloat(sBits);
  store<u16>(dst, <u16>sBits);
  store<u16>(dst, <u16>mBits, 2);
  const live = d != 0 && d == d; // JS `d ? ... : 0`: NaN counts as zero
  const mv = f64x2.splat(m);
  const dv = f64x2.splat(d);
  const tv = f64x2.splat(top);
  for (let j = 0; j < n; j += 4) {
    const x = load4(src, step, j);
    // codes of values j..j+3 in i32 lanes 0..3
    const c = live ? i32x4.shuffle(codes2(f64x2.promote_low_f32x4(x), mv, dv, tv), codes2(f64x2.promote_low_f32x4(i32x4.shuffle(x, x, 2, 3, 0, 1)), mv, dv, tv), 0, 1, 4, 5) : i32x4.splat(0);
    if (bits == 2) {
      const b = i32x4.mul(c, i32x4(1, 4, 16, 64)); // lanes at bits 0, 2, 4, 6 of one byte
      store<u8>(dst + 4 + <usize>(j >> 2), <u8>(i32x4.extract_lane(b, 0) | i32x4.extract_lane(b, 1) | i32x4.extract_lane(b, 2) | i32x4.extract_lane(b, 3)));
    } else {
      const b = i32x4.mul(c, i32x4(1, 16, 1, 16));
      store<u8>(dst + 4 + <usize>(j >> 1), <u8>(i32x4.extract_lane(b, 0) | i32x4.extract_lane(b, 1)));
      store<u8>(dst + 5 + <usize>(j >> 1), <u8>(i32x4.extract_lane(b, 2) | i32x4.extract_lane(b, 3)));
    }
  }
}

/** Token axis: T rows of D values (row t at src + t*srcStride floats) -> T * D/group blocks. */
@inline function encodeTokens(src: usize, srcStride: i32, T: i32, D: i32, dst: usize, bits: i32, group: i32): void {
  const nb = D / group;
  const bb = <usize>(4 + ((group * bits) >> 3));
  for (let t = 0; t < T; t++) {
    const s = src + ((<usize>t * srcStride) << 2);
    const o = dst + <usize>t * nb * bb;
    for (let ib = 0; ib < nb; ib++) encodeGroup(s + ((<usize>ib * group) << 2), 4, group, bits, o + <usize>ib * bb);
  }
}

/** Channel axis: 32 tokens x D -> D blocks in channel order (channel c's values step srcStride floats). */
@inline function encodeChannels(src: usize, srcStride: i32, D: i32, dst: usize, bits: i32): void {
  const bb = <usize>(4 + ((32 * bits) >> 3));
  for (let c = 0; c < D; c++) encodeGroup(src + (<usize>c << 2), <usize>srcStride << 2, 32, bits, dst + <usize>c * bb);
}

export function int4_g32_encode(src: usize, srcStride: i32, T: i32, D: i32, dst: usize): void { encodeTokens(src, srcStride, T, D, dst, 4, 32); }
export function int4_g64_encode(src: usize, srcStride: i32, T: i32, D: i32, dst: usize): void { encodeTokens(src, srcStride, T, D, dst, 4, 64); }
export function int4_g128_encode(src: usize, srcStride: i32, T: i32, D: i32, dst: usize): void { encodeTokens(src, srcStride, T, D, dst, 4, 128); }
export function int2_g32_encode(src: usize, srcStride: i32, T: i32, D: i32, dst: usize): void { encodeTokens(src, srcStride, T, D, dst, 2, 32); }
export function int2_g64_encode(src: usize, srcStride: i32, T: i32, D: i32, dst: usize): void { encodeTokens(src, srcStride, T, D, dst, 2, 64); }
export function int2_g128_encode(src: usize, srcStride: i32, T: i32, D: i32, dst: usize): void { encodeTokens(src, srcStride, T, D, dst, 2, 128); }
/** One whole group (T == 32, checked by the wrapper); the wrapper's extra argument is unused. */
export function int4c_g32_encode(src: usize, srcStride: i32, T: i32, D: i32, dst: usize): void { encodeChannels(src, srcStride, D, dst, 4); }
export function int2c_g32_encode(src: usize, srcStride: i32, T: i32, D: i32, dst: usize): void { encodeChannels(src, srcStride, D, dst, 2); }
