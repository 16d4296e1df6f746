// Encoders for ggml q4_1, q5_0, q5_1 and iq4_nl, bit-exact to src/formats/*.ts (float32 math, as the C
// _ref encoders; casts follow ggml-cast.ts: x86's out-of-range (int) gives 0x80000000).
import { floatToHalf } from '../shared/common';

const QK = 32;

/** C `(int8_t)x` on four lanes as x86 computes it (ggml-cast.ts): in-range lanes truncate, NaN and |x| >= 2^31 lanes give 0x80000000 (low byte 0). */
@inline function castInt8x4(x: v128): v128 {
  const inRange = v128.and(f32x4.ge(x, f32x4.splat(-2147483648.0)), f32x4.lt(x, f32x4.splat(2147483648.0)));
  const t = v128.bitselect(i32x4.trunc_sat_f32x4_s(x), i32x4.splat(i32.MIN_VALUE), inRange);
  return i32x4.shr_s(i32x4.shl(t, 24), 24);
}

/** Low bytes of four i32 lanes (each 0..255) as one u32, lane 0 first. */
@inline function bytes4(v: v128): u32 {
  return i32x4.extract_lane(i8x16.narrow_i16x8_u(i16x8.narrow_i32x4_u(v, v), v), 0);
}

/** Bit 4 of each lane (0..255 values) as a 4-bit mask, lane 0 lowest. */
@inline function bit4(v: v128): u32 {
  return <u32>i32x4.bitmask(i32x4.shl(v, 27));
}

/**
 * Codes of values j..j+3 (or j+16..j+19 when hi): castInt8((x - sub) * id + add)
 * in float32, capped at cap (ggml's MIN) unless cap < 0, then & 0xff.
 */
@inline function codes4(p: usize, j: i32, sub: f32, id: f32, add: f32, cap: i32, hi: bool): v128 {
  const x = v128.load(p + (<usize>(hi ? j + 16 : j) << 2));
  const y = f32x4.add(f32x4.mul(f32x4.sub(x, f32x4.splat(sub)), f32x4.splat(id)), f32x4.splat(add)); // x - 0 == x, -0 included
  const c = castInt8x4(y);
  return v128.and(cap >= 0 ? i32x4.min_s(c, i32x4.splat(cap)) : c, i32x4.splat(0xff));
}

/** 1/d, or 0 when d is 0 (JS `d ? ...`: NaN counts as false too). */
@inline function inverse(d: f32): f32 {
  return d != 0 && d == d ? <f32>1 / d : 0;
}

/** The first element equal to 0 (of either sign): ggml's strict-compare loop keeps the first zero it meets. */
@inline function firstZero(p: usize): f32 {
  for (let j = 0; j < QK; j++) {
    const v = load<f32>(p + (<usize>j << 2));
    if (v == 0) return v;
  }
  return 0;
}

/**
 * Min and max of a block as ggml's loop (from +-FLT_MAX, `v < min`): pmin/pmax are that compare, so NaN is
 * skipped; only the sign of a zero result depends on order, and firstZero settles it.
 */
@inline function minMax(p: usize): v128 {
  let vlo = f32x4.splat(f32.MAX_VALUE);
  let vhi = f32x4.splat(-f32.MAX_VALUE);
  for (let j = 0; j < QK; j += 4) {
    const x = v128.load(p + (<usize>j << 2));
    vlo = f32x4.pmin(vlo, x);
    vhi = f32x4.pmax(vhi, x);
  }
  vlo = f32x4.pmin(vlo, i32x4.shuffle(vlo, vlo, 2, 3, 0, 1));
  vhi = f32x4.pmax(vhi, i32x4.shuffle(vhi, vhi, 2, 3, 0, 1));
  let lo = f32x4.extract_lane(f32x4.pmin(vlo, i32x4.shuffle(vlo, vlo, 1, 0, 3, 2)), 0);
  let hi = f32x4.extract_lane(f32x4.pmax(vhi, i32x4.shuffle(vhi, vhi, 1, 0, 3, 2)), 0);
  if (lo == 0) lo = firstZero(p);
  if (hi == 0) hi = firstZero(p);
  return f32x4(lo, hi, 0, 0);
}

/** The value of largest magnitude, first one on ties (ggml's amax/max loop). */
@inline function signedMax(p: usize): f32 {
  let amax: f32 = 0;
  let mx: f32 = 0;
  for (let j = 0; j < QK; j++) {
    const v = load<f32>(p + (<usize>j << 2));
    if (amax < abs(v)) { amax = abs(v); mx = v; }
  }
  return mx;
}

@inline function q4_1Block(p: usize, o: usize): void {
  const mm = minMax(p);
  const lo = f32x4.extract_lane(mm, 0);
  const hi = f32x4.extract_lane(mm, 1);
  const d: f32 = (hi - lo) / 15;
  const id = inverse(d);
  store<u16>(o, <u16>floatToHalf(d));
  store<u16>(o, <u16>floatToHalf(lo), 2);
  for (let j = 0; j < QK / 2; j += 4) {
    const xi0 = codes4(p, j, lo, id, 0.5, 15, false);
    const xi1 = codes4(p, j, lo, id, 0.5, 15, true);
    // (xi0 | xi1 << 4) & 0xff: a "negative" xi0 (255) fills the high nibble too, as in the reference
    store<u32>(o + 4 + <usize>j, bytes4(v128.and(v128.or(xi0, i32x4.shl(xi1, 4)), i32x4.splat(0xff))));
  }
}

@inline function q5_0Block(p: usize, o: usize): void {
  const d: f32 = signedMax(p) / <f32>-16;
  const id = inverse(d);
  store<u16>(o, <u16>floatToHalf(d));
  let qh: u32 = 0;
  for (let j = 0; j < QK / 2; j += 4) {
    const xi0 = codes4(p, j, 0, id, 16.5, 31, false);
    const xi1 = codes4(p, j, 0, id, 16.5, 31, true);
    store<u32>(o + 6 + <usize>j, bytes4(v128.or(v128.and(xi0, i32x4.splat(0x0f)), i32x4.shl(v128.and(xi1, i32x4.splat(0x0f)), 4))));
    qh |= bit4(xi0) << j;
    qh |= bit4(xi1) << (j + 16);
  }
  store<u32>(o + 2, qh); // unaligned little-endian, as the reference's four byte stores
}

@inline function q5_1Block(p: usize, o: usize): void {
  const mm = minMax(p);
  const lo = f32x4.extract_lane(mm, 0);
  const hi = f32x4.extract_lane(mm, 1);
  const d: f32 = (hi - lo) / 31;
  const id = inverse(d);
  store<u16>(o, <u16>floatToHalf(d));
  store<u16>(o, <u16>floatToHalf(lo), 2);
  let qh: u32 = 0;
  for (let j = 0; j < QK / 2; j += 4) {
    const xi0 = codes4(p, j, lo, id, 0.5, -1, false);
    const xi1 = codes4(p, j, lo, id, 0.5, -1, true);
    store<u32>(o + 8 + <usize>j, bytes4(v128.or(v128.and(xi0, i32x4.splat(0x0f)), i32x4.shl(v128.and(xi1, i32x4.splat(0x0f)), 4))));
    qh |= bit4(xi0) << j;
    qh |= bit4(xi1) << (j + 16);
  }
  store<u32>(o + 4, qh);
}

// kvalues_iq4nl as i8 lanes, and the 15 decision points 2x between neighbours (sums of adjacent levels).
@inline function iq4Level(l: i32): f32 {
  return <f32>i8x16.extract_lane_s(i8x16.swizzle(i8x16(-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113), i8x16.splat(<i8>l)), 0);
}

/** Nearest level index of x (midpoint -> upper): the number of decision points <= 2x (NaN -> 0). */
@inline function iq4Nearest(x: f32): i32 {
  const x2 = f32x4.splat(x + x);
  const c0 = f32x4.ge(x2, f32x4(-231, -187, -148, -114));
  const c1 = f32x4.ge(x2, f32x4(-84, -57, -32, -9));
  const c2 = f32x4.ge(x2, f32x4(14, 38, 63, 91));
  const c3 = f32x4.ge(x2, f32x4(122, 158, 202, f32.POSITIVE_INFINITY));
  const s = i32x4.add(i32x4.add(c0, c1), i32x4.add(c2, c3)); // lanes of -1 per point passed
  return -(i32x4.extract_lane(s, 0) + i32x4.extract_lane(s, 1) + i32x4.extract_lane(s, 2) + i32x4.extract_lane(s, 3));
}

@inline function iq4_nlBlock(p: usize, o: usize): void {
  const mx = signedMax(p);
  v128.store(o + 2, i8x16.splat(0));
  store<u16>(o, 0);
  if (abs(mx) < <f32>1e-15) return; // GROUP_MAX_EPS: d = 0, every index 0
  const d0: f32 = mx / <f32>-127;
  const id: f32 = <f32>1 / d0;
  let sumqx: f32 = 0;
  let sumq2: f32 = 0;
  for (let j = 0; j < QK; j++) {
    const x = load<f32>(p + (<usize>j << 2));
    const l = iq4Nearest(id * x);
    const q = iq4Level(l);
    const wq: f32 = x * x * q;
    sumqx += wq * x;
    sumq2 += wq * q;
    const at = o + 2 + <usize>(j & 15);
    store<u8>(at, load<u8>(at) | <u8>(j < 16 ? l : l << 4));
  }
  store<u16>(o, <u16>floatToHalf(sumq2 > 0 ? sumqx / sumq2 : 0));
}

/** T rows of D values (row t at src + t*srcStride floats) -> T * D/32 blocks of bb bytes. */
@inline function encodeRows(kind: i32, src: usize, srcStride: i32, T: i32, D: i32, dst: usize): void {
  const nb = D / QK;
  const bb: usize = kind == 0 ? 20 : kind == 1 ? 22 : kind == 2 ? 24 : 18;
  for (let t = 0; t < T; t++) {
    const s = src + ((<usize>t * srcStride) << 2);
    const o = dst + <usize>t * nb * bb;
    for (let ib = 0; ib < nb; ib++) {
      const p = s + (<usize>ib << 7);
      const b = o + <usize>ib * bb;
      if (kind == 0) q4_1Block(p, b);
      else if (kind == 1) q5_0Block(p, b);
      else if (kind == 2) q5_1Block(p, b);
      else iq4_nlBlock(p, b);
    }
  }
}

export function q4_1_encode(src: usize, srcStride: i32, T: i32, D: i32, dst: usize): void { encodeRows(0, src, srcStride, T, D, dst); }
export function q5_0_encode(src: usize, srcStride: i32, T: i32, D: i32, dst: usize): void { encodeRows(1, src, srcStride, T, D, dst); }
export function q5_1_encode(src: usize, srcStride: i32, T: i32, D: i32, dst: usize): void { encodeRows(2, src, srcStride, T, D, dst); }
export function iq4_nl_encode(src: usize, srcStride: i32, T: i32, D: i32, dst: usize): void { encodeRows(3, src, srcStride, T, D, dst); }
