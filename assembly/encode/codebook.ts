// Encoders for nf4 (src/formats/nf4.ts) and sign_g32/g8/g4 (sign.ts). Both references compute in float64
// (x/d, the mean |x| sum), so these do too; f16 rounding goes through half_round.ts.
import { halfToFloat } from '../shared/common';
import { halfUp, halfNearest } from './half_round';

/**
 * Number of NF4 decision points strictly below v (NaN -> 0): the code of the nearest level, ties to the lower.
 * The points are the exact float64 midpoints (l_i + l_(i+1)) / 2 of the float32 levels.
 */
@inline function nf4Code(v: f64): i32 {
  const x = f64x2.splat(v);
  let n = i64x2.add(f64x2.gt(x, f64x2(-0.84809640049934387, -0.61063292622566223)), f64x2.gt(x, f64x2(-0.45999526977539063, -0.33967943489551544)));
  n = i64x2.add(n, i64x2.add(f64x2.gt(x, f64x2(-0.23460740596055984, -0.13791173323988914)), f64x2.gt(x, f64x2(-0.045525018125772476, 0.039790149778127670))));
  n = i64x2.add(n, i64x2.add(f64x2.gt(x, f64x2(0.12025525048375130, 0.20352125167846680)), f64x2.gt(x, f64x2(0.29201377183198929, 0.38931253552436829))));
  n = i64x2.add(n, i64x2.add(f64x2.gt(x, f64x2(0.50166341662406921, 0.64278692007064819)), f64x2.gt(x, f64x2(0.86147841811180115, f64.POSITIVE_INFINITY))));
  return -<i32>(i64x2.extract_lane(n, 0) + i64x2.extract_lane(n, 1));
}

/** T rows of D values -> T * D/64 nf4 blocks: f16 d = absmax rounded up, byte i = code 2i | code 2i+1 << 4. */
export function nf4_encode(src: usize, srcStride: i32, T: i32, D: i32, dst: usize): void {
  const nb = D >> 6;
  for (let t = 0; t < T; t++) {
    const s = src + ((<usize>t * srcStride) << 2);
    for (let ib = 0; ib < nb; ib++) {
      const p = s + (<usize>ib << 8);
      const o = dst + (<usize>t * nb + ib) * 34;
      let amax: f64 = 0;
      for (let j = 0; j < 64; j++) amax = max<f64>(amax, abs<f64>(<f64>load<f32>(p + (<usize>j << 2))));
      const h = halfUp(amax);
      store<u16>(o, <u16>h);
      const d = <f64>halfToFloat(h);
      // d = 0 only for an all-zero block: v = 0 gives the 0 level (code 7); a NaN d too (JS `d ? ... : 0`).
      const live = d != 0 && d == d;
      for (let i = 0; i < 32; i++) {
        const a = live ? <f64>load<f32>(p + (<usize>i << 3)) / d : 0;
        const b = live ? <f64>load<f32>(p + (<usize>i << 3), 4) / d : 0;
        store<u8>(o + 2 + <usize>i, <u8>(nf4Code(a) | (nf4Code(b) << 4)));
      }
    }
  }
}

/** T rows -> T * D/32 sign blocks: 32/g f16 scales (nearest mean |x|, summed in float64), then sign bits. */
@inline function signRows(src: usize, srcStride: i32, T: i32, D: i32, dst: usize, g: i32): void {
  const nb = D >> 5;
  const sets = 32 / g;
  const bb = <usize>(2 * sets + 4);
  for (let t = 0; t < T; t++) {
    const s = src + ((<usize>t * srcStride) << 2);
    for (let ib = 0; ib < nb; ib++) {
      const p = s + (<usize>ib << 7);
      const o = dst + (<usize>t * nb + ib) * bb;
      for (let k = 0; k < sets; k++) {
        let sum: f64 = 0;
        for (let j = k * g; j < (k + 1) * g; j++) sum += abs<f64>(<f64>load<f32>(p + (<usize>j << 2)));
        store<u16>(o + (<usize>k << 1), <u16>halfNearest(sum / g));
      }
      // Bit j = element j < 0 (-0 and NaN give 0): the sign masks of 4 lanes at a time.
      for (let b = 0; b < 4; b++) {
        const q = p + (<usize>b << 5);
        const lo = i32x4.bitmask(f32x4.lt(v128.load(q), f32x4.splat(0)));
        const hi = i32x4.bitmask(f32x4.lt(v128.load(q, 16), f32x4.splat(0)));
        store<u8>(o + (<usize>sets << 1) + <usize>b, <u8>(lo | (hi << 4)));
      }
    }
  }
}

export function sign_g32_encode(src: usize, srcStride: i32, T: i32, D: i32, dst: usize): void { signRows(src, srcStride, T, D, dst, 32); }
export function sign_g8_encode(src: usize, srcStride: i32, T: i32, D: i32, dst: usize): void { signRows(src, srcStride, T, D, dst, 8); }
export function sign_g4_encode(src: usize, srcStride: i32, T: i32, D: i32, dst: usize): void { signRows(src, srcStride, T, D, dst, 4); }
