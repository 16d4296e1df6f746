// One-token (decode) matmul row for q6_K weights (the output and half the ffn_down / attn_v tensors of
// Q4_K_M models): value = d * sc_g * (q - 32), q 6 bits (4 in ql, 2 in qh), one int8 scale per 16 values.
// The 16-byte ql / qh loads split into 16-bit lanes by shifts and masks: lane k of a load holds values 2k
// and 2k + 1 of its 16, so x comes per 16 values as the 8 even ones then the 8 odd ones (packActQ6K), with
// its per-16 sums for the -32 (sum_g sc_g (q . x)_g - 32 sum_g sc_g sum(x)_g, all in integers). Relaxed-SIMD builds
// run rowQ6KRelaxed instead: x int8 in natural order, the same integers by the relaxed dot.
import { halfToFloat, hsum4i } from '../shared/common';
import { actInverse, actScale, round8 } from './act';
import { keep, touch } from './touch';
import { VEC_RELAXED_Q6K } from './types';


/**
 * One token x [cols] f32 -> xq [cols] i16 (per 16 values: the 8 even, then the 8 odd), one scale amax/127
 * per 256 values in xd [cols/256] f32, each 16 values' sum in xs [cols/16] i16. Same rounding as packActQ8 (tile_q8.ts).
 * Relaxed-SIMD builds (VEC_RELAXED_Q6K) lay xq out as [cols] int8 in natural order instead, for rowQ6KRelaxed.
 */
export function packActQ6K(x: usize, cols: i32, xq: usize, xd: usize, xs: usize): void {
  for (let b0: usize = 0; b0 < <usize>cols; b0 += 256) {
    const d = actScale(x + (b0 << 2), 256);
    store<f32>(xd + ((b0 >> 8) << 2), d);
    const id = actInverse(d);
    for (let c = b0; c < b0 + 256; c += 16) {
      const a = round8(x + (c << 2), id), b = round8(x + (c << 2) + 32, id);
      if (VEC_RELAXED_Q6K) v128.store(xq + c, i8x16.narrow_i16x8_s(a, b));
      else {
        v128.store(xq + (c << 1), i16x8.shuffle(a, b, 0, 2, 4, 6, 8, 10, 12, 14));
        v128.store(xq + (c << 1), i16x8.shuffle(a, b, 1, 3, 5, 7, 9, 11, 13, 15), 16);
      }
      const s = i32x4.extadd_pairwise_i16x8_s(i16x8.add(a, b));
      store<i16>(xs + (c >> 3), <i16>(i32x4.extract_lane(s, 0) + i32x4.extract_lane(s, 1) + i32x4.extract_lane(s, 2) + i32x4.extract_lane(s, 3)));
    }
  }
}


/** Even / odd values' dots of one group of 16: q lanes (6-bit, unsigned) against x's 8 even, 8 odd. */
@inline function dot16(qe: v128, qo: v128, x: usize): v128 {
  return i32x4.add(i32x4.dot_i16x8_s(qe, v128.load(x)), i32x4.dot_i16x8_s(qo, v128.load(x, 16)));
}

/** Four int8 scales at p as i32x4. */
@inline function sc4(p: usize): v128 {
  return i32x4.extend_low_i16x8_s(i16x8.extend_low_i8x16_s(v128.load32_zero(p)));
}

/**
 * acc plus one block's value from t, its integer sum sum_g sc_g (q . x)_g in lanes: minus 32 sum_g sc_g sum(x)_g
 * (sc the block's 16 scales, xsum its 16 x sums), both in integers, then one float step per 256 values on the
 * exact sum (tile_q8.ts tileK does the same) by d * dx.
 */
@inline function blockStep(acc: f32, p: usize, t: v128, sc: v128, xsum: usize, dx: f32): f32 {
  const corr = i32x4.add(i32x4.dot_i16x8_s(i16x8.extend_low_i8x16_s(sc), v128.load(xsum)), i32x4.dot_i16x8_s(i16x8.extend_high_i8x16_s(sc), v128.load(xsum, 16)));
  const v = i32x4.sub(t, i32x4.shl(corr, 5));
  const u = i32x4.add(v, i32x4.shuffle(v, v, 2, 3, 0, 1));
  const T = f32x4.convert_i32x4_s(i32x4.add(u, i32x4.shuffle(u, u, 1, 0, 3, 2)));
  return acc + f32x4.extract_lane(f32x4.mul(T, f32x4.splat(halfToFloat(<u32>load<u16>(p + 208)) * dx)), 0);
}

/**
 * q6_K row (nb blocks of 210 B: ql[128], qh[64], int8 scales[16], f16 d) . x (packActQ6K's layout), touching
 * the row that starts at `ahead` as it goes (never past `last`). Per half
 * h of 128 values, chunk l of 16: ql bytes A = ql[l..], B = ql[32 + l..] and qh bytes H = qh[l..] make
 * values l, 32 + l, 64 + l, 96 + l (+ 0..15) from A's low nibble / B's low / A's high / B's high, with
 * H's bit pairs 0-1 / 2-3 / 4-5 / 6-7 on top (src/gguf/kquants.ts).
 */
@inline export function rowQ6K(w: usize, nb: usize, xq: usize, xd: usize, xs: usize, ahead: usize, last: usize): f32 {
  let acc: f32 = 0;
  const m4 = i16x8.splat(0x0f);
  const m2 = i16x8.splat(0x30);
  let sink: u32 = 0;
  for (let b: usize = 0; b < nb; b++) {
    const p = w + b * 210;
    // The row `ahead` touched at this row's pace (touch.ts).
    const ta = ahead + b * 210;
    sink += touch(ta, last) + touch(ta + 64, last) + touch(ta + 128, last) + touch(ta + 192, last);
    const x = xq + (b << 9);
    let t = i32x4.splat(0);
    for (let h: usize = 0; h < 2; h++) {
      const ql = p + (h << 6);
      const qh = p + 128 + (h << 5);
      const xh = x + (h << 8);
      // Groups 8h + 0..7 of 16 values: chunk l = 0 gives groups 0, 2, 4, 6 (values l + 32j), l = 16 the odd ones.
      let g0 = i32x4.splat(0), g1 = i32x4.splat(0), g2 = i32x4.splat(0), g3 = i32x4.splat(0);
      let g4 = i32x4.splat(0), g5 = i32x4.splat(0), g6 = i32x4.splat(0), g7 = i32x4.splat(0);
      for (let l: usize = 0; l < 32; l += 16) {
        const A = v128.load(ql + l), B = v128.load(ql + 32 + l), H = v128.load(qh + l);
        const x0 = xh + (l << 1);
        const p0 = dot16(v128.or(v128.and(A, m4), v128.and(i16x8.shl(H, 4), m2)), v128.or(v128.and(i16x8.shr_u(A, 8), m4), v128.and(i16x8.shr_u(H, 4), m2)), x0);
        const p1 = dot16(v128.or(v128.and(B, m4), v128.and(i16x8.shl(H, 2), m2)), v128.or(v128.and(i16x8.shr_u(B, 8), m4), v128.and(i16x8.shr_u(H, 6), m2)), x0 + 64);
        const p2 = dot16(v128.or(v128.and(i16x8.shr_u(A, 4), m4), v128.and(H, m2)), v128.or(i16x8.shr_u(A, 12), v128.and(i16x8.shr_u(H, 8), m2)), x0 + 128);
        const p3 = dot16(v128.or(v128.and(i16x8.shr_u(B, 4), m4), v128.and(i16x8.shr_u(H, 2), m2)), v128.or(i16x8.shr_u(B, 12), v128.and(i16x8.shr_u(H, 10), m2)), x0 + 192);
        if (l == 0) {
          g0 = p0; g2 = p1; g4 = p2; g6 = p3;
        } else {
          g1 = p0; g3 = p1; g5 = p2; g7 = p3;
        }
      }
      const s = p + 192 + (h << 3);
      t = i32x4.add(t, i32x4.add(i32x4.mul(hsum4i(g0, g1, g2, g3), sc4(s)), i32x4.mul(hsum4i(g4, g5, g6, g7), sc4(s + 4))));
    }
    acc = blockStep(acc, p, t, v128.load(p + 192), xs + (b << 5), load<f32>(xd + (b << 2)));
  }
  keep(sink);
  return acc;
}

/** One group of 16: q (6-bit bytes, 0..63: the 7-bit operand) . x (int8 at x) times its scale (sc: i16 splat), as i32x4 (at most 2 * 63 * 127 per i16 lane). */
@inline function group16(q: v128, x: usize, sc: v128): v128 {
  if (!ASC_FEATURE_RELAXED_SIMD) return i32x4.splat(0);
  return i32x4.dot_i16x8_s(i16x8.relaxed_dot_i8x16_i7x16_s(v128.load(x), q), sc);
}

/**
 * Chunk l (0 or 16) of one half: ql bytes A = ql[l..], B = ql[32 + l..], qh bytes H = qh[l..] make the groups
 * at values l, 32 + l, 64 + l, 96 + l (rowQ6K's unpacking, bytewise) . x at xl, times splats s0..s3 of their scales.
 */
@inline function chunk4(A: v128, B: v128, H: v128, xl: usize, s0: v128, s1: v128, s2: v128, s3: v128): v128 {
  const m4 = i8x16.splat(0x0f), m2 = i8x16.splat(0x30);
  const a = i32x4.add(group16(v128.or(v128.and(A, m4), v128.and(i16x8.shl(H, 4), m2)), xl, s0), group16(v128.or(v128.and(B, m4), v128.and(i16x8.shl(H, 2), m2)), xl + 32, s1));
  const b = i32x4.add(group16(v128.or(v128.and(i16x8.shr_u(A, 4), m4), v128.and(H, m2)), xl + 64, s2), group16(v128.or(v128.and(i16x8.shr_u(B, 4), m4), v128.and(i16x8.shr_u(H, 2), m2)), xl + 96, s3));
  return i32x4.add(a, b);
}

/**
 * t plus one half (128 values) of a block: ql, qh its bytes, x its int8 values, s its 8 scales as i16 lanes.
 * After each chunk the sum so far is stored to yr (the row's output, overwritten by the caller): the store keeps
 * the next chunk's loads after this chunk's arithmetic, where V8 issues all of a block's loads first and spills.
 */
@inline function half128(t: v128, ql: usize, qh: usize, x: usize, s: v128, yr: usize): v128 {
  t = i32x4.add(t, chunk4(v128.load(ql), v128.load(ql, 32), v128.load(qh), x, i16x8.shuffle(s, s, 0, 0, 0, 0, 0, 0, 0, 0), i16x8.shuffle(s, s, 2, 2, 2, 2, 2, 2, 2, 2), i16x8.shuffle(s, s, 4, 4, 4, 4, 4, 4, 4, 4), i16x8.shuffle(s, s, 6, 6, 6, 6, 6, 6, 6, 6)));
  v128.store32_lane(yr, t, 0);
  t = i32x4.add(t, chunk4(v128.load(ql, 16), v128.load(ql, 48), v128.load(qh, 16), x + 16, i16x8.shuffle(s, s, 1, 1, 1, 1, 1, 1, 1, 1), i16x8.shuffle(s, s, 3, 3, 3, 3, 3, 3, 3, 3), i16x8.shuffle(s, s, 5, 5, 5, 5, 5, 5, 5, 5), i16x8.shuffle(s, s, 7, 7, 7, 7, 7, 7, 7, 7)));
  v128.store32_lane(yr, t, 0);
  return t;
}

/**
 * rowQ6K's sums by the relaxed dot: the 6-bit values unpacked bytewise in natural order (16-bit shifts, each
 * byte's bits from its neighbour masked off), each group of 16 one dot times its scale. Same integers, same
 * float steps, so the bits are rowQ6K's. x in packActQ6K's relaxed layout; yr is the row's output (half128).
 * No touches ahead: bench/matmul-ab.ts, one thread, n 1, against the same kernel touching as rowQ6K does:
 * [4096, 4096] to [14336, 4096] 0.51-0.58x the time cold, [2048, 768] / [768, 2048] 0.88-0.90x cold, 1.00x warm.
 */
@inline export function rowQ6KRelaxed(w: usize, nb: usize, xq: usize, xd: usize, xs: usize, yr: usize): f32 {
  let acc: f32 = 0;
  for (let b: usize = 0; b < nb; b++) {
    const p = w + b * 210;
    const sc = v128.load(p + 192);
    const x = xq + (b << 8);
    const t = half128(half128(i32x4.splat(0), p, p + 128, x, i16x8.extend_low_i8x16_s(sc), yr), p + 64, p + 160, x + 128, i16x8.extend_high_i8x16_s(sc), yr);
    acc = blockStep(acc, p, t, sc, xs + (b << 5), load<f32>(xd + (b << 2)));
  }
  return acc;
}
