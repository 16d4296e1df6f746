// Encoders for tern_g32/g8/g4 (src/formats/tern.ts). Per group of g: the L2-optimal ternary scale from
// |x| sorted descending (prefix sums in float64, as ternScale), rounded to f16; codes |x| > s/2 -> sign,
// else 0; trits packed 5 per byte. Sorting runs as min/max networks on the |x| bit patterns (non-negative
// floats order as integers); a group with a NaN takes V8's order (jsorder.ts) as the reference does.
import { halfToFloat4 } from '../shared/common';
import { halfNearestSat } from '../shared/half_bits';
import { byteAt, jsSortOrder } from './jsorder';

const QK = 32;
const ABS = 0x7fffffff;

/** Four lanes sorted descending. */
@inline function sort4(v: v128): v128 {
  // Sorting network (0,1)(2,3), (0,2)(1,3), (1,2), larger values to lower lanes.
  let s = i32x4.shuffle(v, v, 1, 0, 3, 2);
  v = i32x4.shuffle(i32x4.max_s(v, s), i32x4.min_s(v, s), 0, 5, 2, 7);
  s = i32x4.shuffle(v, v, 2, 3, 0, 1);
  v = i32x4.shuffle(i32x4.max_s(v, s), i32x4.min_s(v, s), 0, 1, 6, 7);
  s = i32x4.shuffle(v, v, 0, 2, 1, 3);
  return i32x4.shuffle(i32x4.max_s(v, s), i32x4.min_s(v, s), 0, 1, 6, 3);
}

/** A bitonic 4-lane vector sorted descending: half-cleaners at distance 2 then 1. */
@inline function clean4(v: v128): v128 {
  let s = i32x4.shuffle(v, v, 2, 3, 0, 1);
  v = i32x4.shuffle(i32x4.max_s(v, s), i32x4.min_s(v, s), 0, 1, 6, 7);
  s = i32x4.shuffle(v, v, 1, 0, 3, 2);
  return i32x4.shuffle(i32x4.max_s(v, s), i32x4.min_s(v, s), 0, 5, 2, 7);
}

@inline function rev4(v: v128): v128 {
  return i32x4.shuffle(v, v, 3, 2, 1, 0);
}

@inline function absBits(p: usize, i: i32): v128 {
  return v128.and(v128.load(p + (<usize>i << 4)), i32x4.splat(ABS));
}

/**
 * ternScale's result given |x| descending in vectors w0..w(n/4-1): s = sum_k / k for the first k that
 * maximizes sum_k^2 / k (sum_k summed in that order, float64), 0 when no k beats 0. The sums run in order;
 * the quotients go two at a time, lane 0 holding odd k and lane 1 even k, each keeping its first maximum.
 */
@inline function scaleOfSorted(n: i32, w0: v128, w1: v128, w2: v128, w3: v128, w4: v128, w5: v128, w6: v128, w7: v128): f64 {
  let sum: f64 = 0;
  let best = f64x2.splat(0);
  let kBest = best;
  let sumBest = best;
  for (let m = 0; m < n >> 2; m++) {
    const v = m == 0 ? w0 : m == 1 ? w1 : m == 2 ? w2 : m == 3 ? w3 : m == 4 ? w4 : m == 5 ? w5 : m == 6 ? w6 : w7;
    const s1 = sum + <f64>f32x4.extract_lane(v, 0);
    const s2 = s1 + <f64>f32x4.extract_lane(v, 1);
    const s3 = s2 + <f64>f32x4.extract_lane(v, 2);
    sum = s3 + <f64>f32x4.extract_lane(v, 3);
    const k = f64x2.splat(<f64>(m << 2));
    const sa = f64x2.replace_lane(f64x2.splat(s1), 1, s2);
    const ka = f64x2.add(k, f64x2(1, 2));
    const qa = f64x2.div(f64x2.mul(sa, sa), ka);
    let up = f64x2.gt(qa, best);
    best = v128.bitselect(qa, best, up);
    kBest = v128.bitselect(ka, kBest, up);
    sumBest = v128.bitselect(sa, sumBest, up);
    const sb = f64x2.replace_lane(f64x2.splat(s3), 1, sum);
    const kb = f64x2.add(k, f64x2(3, 4));
    const qb = f64x2.div(f64x2.mul(sb, sb), kb);
    up = f64x2.gt(qb, best);
    best = v128.bitselect(qb, best, up);
    kBest = v128.bitselect(kb, kBest, up);
    sumBest = v128.bitselect(sb, sumBest, up);
  }
  // The larger maximum wins; on a tie, the smaller k (the sequential scan met it first). Lane 0 of the
  // swapped vectors holds lane 1's candidate; all in vector selects (no data-dependent branch).
  const bestSw = i64x2.shuffle(best, best, 1, 0);
  const kSw = i64x2.shuffle(kBest, kBest, 1, 0);
  const one = v128.or(f64x2.gt(bestSw, best), v128.and(f64x2.eq(bestSw, best), f64x2.lt(kSw, kBest)));
  const k = v128.bitselect(kSw, kBest, one);
  const s = f64x2.div(v128.bitselect(i64x2.shuffle(sumBest, sumBest, 1, 0), sumBest, one), k);
  return f64x2.extract_lane(v128.and(s, f64x2.gt(k, f64x2.splat(0))), 0);
}

/** The same scan over V8's order of a group holding a NaN (NaN sums end every later improvement). */
function scaleJs(p: usize, n: i32): f64 {
  const lo = jsSortOrder(p, n, false, false);
  const hi = n > 16 ? jsSortOrder(p, n, false, true) : lo;
  let sum: f64 = 0;
  let best: f64 = 0;
  let kBest: f64 = 0;
  let sumBest: f64 = 0;
  for (let pos = 0; pos < n; pos++) {
    sum += <f64>abs<f32>(load<f32>(p + (<usize>byteAt(lo, hi, pos) << 2)));
    const k = <f64>(pos + 1);
    const q = (sum * sum) / k;
    if (q > best) {
      best = q;
      kBest = k;
      sumBest = sum;
    }
  }
  return kBest > 0 ? sumBest / kBest : 0;
}

@inline function hasNaN(p: usize, n: i32): bool {
  let m = i32x4.splat(0);
  for (let i = 0; i < n; i += 4) {
    const x = v128.load(p + (<usize>i << 2));
    m = v128.or(m, f32x4.ne(x, x));
  }
  return v128.any_true(m);
}

/** ternScale of the g values at p (g = 4, 8 or 32). */
@inline function ternScale(p: usize, g: i32): f64 {
  if (hasNaN(p, g)) return scaleJs(p, g);
  const z = i32x4.splat(0);
  if (g == 4) return scaleOfSorted(4, sort4(absBits(p, 0)), z, z, z, z, z, z, z);
  if (g == 8) {
    // Two sorted 4s merged: bitonic half-cleaner against the reversed second, then clean each half.
    const a = sort4(absBits(p, 0));
    const b = rev4(sort4(absBits(p, 1)));
    return scaleOfSorted(8, clean4(i32x4.max_s(a, b)), clean4(i32x4.min_s(a, b)), z, z, z, z, z, z);
  }
  // g = 32: sorted 4s -> 8s -> 16s -> 32, each merge a bitonic merge (reverse the second run, half-clean).
  let v0 = sort4(absBits(p, 0));
  let v1 = rev4(sort4(absBits(p, 1)));
  let v2 = sort4(absBits(p, 2));
  let v3 = rev4(sort4(absBits(p, 3)));
  let v4 = sort4(absBits(p, 4));
  let v5 = rev4(sort4(absBits(p, 5)));
  let v6 = sort4(absBits(p, 6));
  let v7 = rev4(sort4(absBits(p, 7)));
  let h = i32x4.max_s(v0, v1);
  v1 = clean4(i32x4.min_s(v0, v1));
  v0 = clean4(h);
  h = i32x4.max_s(v2, v3);
  v3 = clean4(i32x4.min_s(v2, v3));
  v2 = clean4(h);
  h = i32x4.max_s(v4, v5);
  v5 = clean4(i32x4.min_s(v4, v5));
  v4 = clean4(h);
  h = i32x4.max_s(v6, v7);
  v7 = clean4(i32x4.min_s(v6, v7));
  v6 = clean4(h);
  // 8s -> 16s: (v0 v1) with reversed (v2 v3); (v4 v5) with reversed (v6 v7).
  let a0 = i32x4.max_s(v0, rev4(v3));
  let a1 = i32x4.max_s(v1, rev4(v2));
  let b0 = i32x4.min_s(v0, rev4(v3));
  let b1 = i32x4.min_s(v1, rev4(v2));
  v0 = clean4(i32x4.max_s(a0, a1));
  v1 = clean4(i32x4.min_s(a0, a1));
  v2 = clean4(i32x4.max_s(b0, b1));
  v3 = clean4(i32x4.min_s(b0, b1));
  a0 = i32x4.max_s(v4, rev4(v7));
  a1 = i32x4.max_s(v5, rev4(v6));
  b0 = i32x4.min_s(v4, rev4(v7));
  b1 = i32x4.min_s(v5, rev4(v6));
  v4 = clean4(i32x4.max_s(a0, a1));
  v5 = clean4(i32x4.min_s(a0, a1));
  v6 = clean4(i32x4.max_s(b0, b1));
  v7 = clean4(i32x4.min_s(b0, b1));
  // 16s -> 32: half-clean at distance 16, then 8 and 4 across vectors, then within each vector.
  const h0 = i32x4.max_s(v0, rev4(v7));
  const h1 = i32x4.max_s(v1, rev4(v6));
  const h2 = i32x4.max_s(v2, rev4(v5));
  const h3 = i32x4.max_s(v3, rev4(v4));
  const l0 = i32x4.min_s(v0, rev4(v7));
  const l1 = i32x4.min_s(v1, rev4(v6));
  const l2 = i32x4.min_s(v2, rev4(v5));
  const l3 = i32x4.min_s(v3, rev4(v4));
  a0 = i32x4.max_s(h0, h2);
  a1 = i32x4.max_s(h1, h3);
  b0 = i32x4.min_s(h0, h2);
  b1 = i32x4.min_s(h1, h3);
  v0 = clean4(i32x4.max_s(a0, a1));
  v1 = clean4(i32x4.min_s(a0, a1));
  v2 = clean4(i32x4.max_s(b0, b1));
  v3 = clean4(i32x4.min_s(b0, b1));
  a0 = i32x4.max_s(l0, l2);
  a1 = i32x4.max_s(l1, l3);
  b0 = i32x4.min_s(l0, l2);
  b1 = i32x4.min_s(l1, l3);
  v4 = clean4(i32x4.max_s(a0, a1));
  v5 = clean4(i32x4.min_s(a0, a1));
  v6 = clean4(i32x4.max_s(b0, b1));
  v7 = clean4(i32x4.min_s(b0, b1));
  return scaleOfSorted(32, v0, v1, v2, v3, v4, v5, v6, v7);
}

/** Trits of values 4i..4i+3 in i32 lanes: |x| > s/2 -> 0 (x < 0) or 2, else 1; half: s/2 per lane. */
@inline function trits4(p: usize, i: i32, half: v128): v128 {
  const x = v128.load(p + (<usize>i << 4));
  const big = f32x4.gt(f32x4.abs(x), half);
  return i32x4.add(i32x4.splat(1), v128.and(big, v128.or(f32x4.lt(x, f32x4.splat(0)), i32x4.splat(1))));
}

/** s/2 of group `grp` in every lane, from the halves of groups 0..3 (h0) and 4..7 (h1). */
@inline function halfOf(h0: v128, h1: v128, grp: i32): v128 {
  return i8x16.swizzle(grp < 4 ? h0 : h1, i32x4.splat((grp & 3) * 0x04040404 + 0x03020100));
}

// Digit plane k: byte i (< 7) = trit 5i + k; -1 past element 31 (swizzle reads 0 there).
const PLANE0 = i8x16(0, 5, 10, 15, 20, 25, 30, -1, -1, -1, -1, -1, -1, -1, -1, -1);
const PLANE1 = i8x16(1, 6, 11, 16, 21, 26, 31, -1, -1, -1, -1, -1, -1, -1, -1, -1);
const PLANE2 = i8x16(2, 7, 12, 17, 22, 27, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
const PLANE3 = i8x16(3, 8, 13, 18, 23, 28, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
const PLANE4 = i8x16(4, 9, 14, 19, 24, 29, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);

/** Trits at the plane's indices, from trits 0..15 (lo) and 16..31 (hi). */
@inline function plane(lo: v128, hi: v128, idx: v128): v128 {
  return v128.or(i8x16.swizzle(lo, idx), i8x16.swizzle(hi, i8x16.sub(idx, i8x16.splat(16))));
}

@inline function times3(v: v128): v128 {
  return i8x16.add(i8x16.add(v, v), v);
}

/** T rows of D values -> T * D/32 blocks: 32/g f16 scales, then 7 bytes of base-3 digits. */
@inline function ternRows(src: usize, srcStride: i32, T: i32, D: i32, dst: usize, g: i32): void {
  const nb = D >> 5;
  const sets = QK / g;
  const bb = <usize>(2 * sets + 7);
  for (let t = 0; t < T; t++) {
    const s = src + ((<usize>t * srcStride) << 2);
    for (let ib = 0; ib < nb; ib++) {
      const p = s + (<usize>ib << 7);
      const o = dst + (<usize>t * nb + ib) * bb;
      for (let k = 0; k < sets; k++) store<u16>(o + (<usize>k << 1), <u16>halfNearestSat(ternScale(p + (<usize>(k * g) << 2), g)));
      // The stored scales (finite: halfNearestSat saturates) as f32, halved: exact.
      const h = g == 32 ? v128.load16_splat(o) : g == 8 ? v128.load64_zero(o) : v128.load(o);
      const h0 = f32x4.mul(halfToFloat4(i32x4.extend_low_i16x8_u(h)), f32x4.splat(0.5));
      const h1 = f32x4.mul(halfToFloat4(i32x4.extend_high_i16x8_u(h)), f32x4.splat(0.5));
      const lo = i8x16.narrow_i16x8_u(
        i16x8.narrow_i32x4_u(trits4(p, 0, halfOf(h0, h1, 0)), trits4(p, 1, halfOf(h0, h1, 4 / g))),
        i16x8.narrow_i32x4_u(trits4(p, 2, halfOf(h0, h1, 8 / g)), trits4(p, 3, halfOf(h0, h1, 12 / g))),
      );
      const hi = i8x16.narrow_i16x8_u(
        i16x8.narrow_i32x4_u(trits4(p, 4, halfOf(h0, h1, 16 / g)), trits4(p, 5, halfOf(h0, h1, 20 / g))),
        i16x8.narrow_i32x4_u(trits4(p, 6, halfOf(h0, h1, 24 / g)), trits4(p, 7, halfOf(h0, h1, 28 / g))),
      );
      // byte i = t(5i) + 3 t(5i+1) + 9 t(5i+2) + 27 t(5i+3) + 81 t(5i+4), by Horner (at most 242: no carry).
      let b = plane(lo, hi, PLANE4);
      b = i8x16.add(times3(b), plane(lo, hi, PLANE3));
      b = i8x16.add(times3(b), plane(lo, hi, PLANE2));
      b = i8x16.add(times3(b), plane(lo, hi, PLANE1));
      b = i8x16.add(times3(b), plane(lo, hi, PLANE0));
      const qt = o + (<usize>sets << 1);
      store<u32>(qt, i32x4.extract_lane(b, 0));
      store<u16>(qt, <u16>i16x8.extract_lane_u(b, 2), 4);
      store<u8>(qt, <u8>i8x16.extract_lane_u(b, 6), 6);
    }
  }
}

export function tern_g32_encode(src: usize, srcStride: i32, T: i32, D: i32, dst: usize): void { ternRows(src, srcStride, T, D, dst, 32); }
export function tern_g8_encode(src: usize, srcStride: i32, T: i32, D: i32, dst: usize): void { ternRows(src, srcStride, T, D, dst, 8); }
export function tern_g4_encode(src: usize, srcStride: i32, T: i32, D: i32, dst: usize): void { ternRows(src, srcStride, T, D, dst, 4); }
