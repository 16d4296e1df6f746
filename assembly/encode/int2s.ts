// Encoders for int2s_g8/g4 (src/formats/int2s.ts): 32 values ranked by |x| descending (ties: lower index
// first), runs of g ranks form the sets, numbered by their lowest position; per set an f16 scale (absmax
// rounded up), a combinatorial-rank digit of its membership, and 2-bit codes. Digits, binomials and chunk
// values are integers below 2^53, so float64 and u64 arithmetic reproduce the reference's doubles exactly.
import { halfToFloat4 } from '../shared/common';
import { halfUpSat } from '../shared/half_bits';
import { byteAt, jsSortOrder } from './jsorder';

const QK = 32;
const ABS = 0x7fffffff;
/** sum over pairs i < j of [a_i > a_j] + [a_j > a_i]: C(32, 2) exactly when no two |x| are equal. */
const PAIRS = (QK * (QK - 1)) / 2;

@inline function absBits(p: usize, v: i32): v128 {
  return v128.and(v128.load(p + (<usize>v << 4)), i32x4.splat(ABS));
}

/** Bytes of the run index (rank >> shift) of 16 positions, from their ranks in i32 lanes r0..r3. */
@inline function runBytes(r0: v128, r1: v128, r2: v128, r3: v128, shift: i32): v128 {
  return i8x16.narrow_i16x8_u(i16x8.narrow_i32x4_u(i32x4.shr_u(r0, shift), i32x4.shr_u(r1, shift)), i16x8.narrow_i32x4_u(i32x4.shr_u(r2, shift), i32x4.shr_u(r3, shift)));
}

/**
 * Runs of a NaN-free block, packed: byte b = run of position b | run of position b + 16 << 4. rank_j =
 * #{i: a_i > a_j} + #{i < j: a_i == a_j} on the |x| bit patterns (non-negative floats order as integers).
 */
function runsFast(p: usize, shift: i32): v128 {
  const a0 = absBits(p, 0);
  const a1 = absBits(p, 1);
  const a2 = absBits(p, 2);
  const a3 = absBits(p, 3);
  const a4 = absBits(p, 4);
  const a5 = absBits(p, 5);
  const a6 = absBits(p, 6);
  const a7 = absBits(p, 7);
  let c0 = i32x4.splat(0);
  let c1 = c0;
  let c2 = c0;
  let c3 = c0;
  let c4 = c0;
  let c5 = c0;
  let c6 = c0;
  let c7 = c0;
  // Compare masks are -1: subtracting them counts.
  for (let i = 0; i < QK; i++) {
    const s = v128.and(v128.load32_splat(p + (<usize>i << 2)), i32x4.splat(ABS));
    c0 = i32x4.sub(c0, i32x4.gt_s(s, a0));
    c1 = i32x4.sub(c1, i32x4.gt_s(s, a1));
    c2 = i32x4.sub(c2, i32x4.gt_s(s, a2));
    c3 = i32x4.sub(c3, i32x4.gt_s(s, a3));
    c4 = i32x4.sub(c4, i32x4.gt_s(s, a4));
    c5 = i32x4.sub(c5, i32x4.gt_s(s, a5));
    c6 = i32x4.sub(c6, i32x4.gt_s(s, a6));
    c7 = i32x4.sub(c7, i32x4.gt_s(s, a7));
  }
  const sum = i32x4.add(i32x4.add(i32x4.add(c0, c1), i32x4.add(c2, c3)), i32x4.add(i32x4.add(c4, c5), i32x4.add(c6, c7)));
  const total = i32x4.extract_lane(sum, 0) + i32x4.extract_lane(sum, 1) + i32x4.extract_lane(sum, 2) + i32x4.extract_lane(sum, 3);
  if (total != PAIRS) {
    // Equal values: each also counts the equal ones at lower positions (lane j > i).
    for (let i = 0; i < QK; i++) {
      const s = v128.and(v128.load32_splat(p + (<usize>i << 2)), i32x4.splat(ABS));
      const iv = i32x4.splat(i);
      c0 = i32x4.sub(c0, v128.and(i32x4.eq(s, a0), i32x4.gt_s(i32x4(0, 1, 2, 3), iv)));
      c1 = i32x4.sub(c1, v128.and(i32x4.eq(s, a1), i32x4.gt_s(i32x4(4, 5, 6, 7), iv)));
      c2 = i32x4.sub(c2, v128.and(i32x4.eq(s, a2), i32x4.gt_s(i32x4(8, 9, 10, 11), iv)));
      c3 = i32x4.sub(c3, v128.and(i32x4.eq(s, a3), i32x4.gt_s(i32x4(12, 13, 14, 15), iv)));
      c4 = i32x4.sub(c4, v128.and(i32x4.eq(s, a4), i32x4.gt_s(i32x4(16, 17, 18, 19), iv)));
      c5 = i32x4.sub(c5, v128.and(i32x4.eq(s, a5), i32x4.gt_s(i32x4(20, 21, 22, 23), iv)));
      c6 = i32x4.sub(c6, v128.and(i32x4.eq(s, a6), i32x4.gt_s(i32x4(24, 25, 26, 27), iv)));
      c7 = i32x4.sub(c7, v128.and(i32x4.eq(s, a7), i32x4.gt_s(i32x4(28, 29, 30, 31), iv)));
    }
  }
  return v128.or(runBytes(c0, c1, c2, c3, shift), i8x16.shl(runBytes(c4, c5, c6, c7, shift), 4));
}

/** Runs of a block holding a NaN, packed as runsFast: positions in V8's order of the reference comparator. */
function runsJs(p: usize, shift: i32): v128 {
  const lo = jsSortOrder(p, QK, true, false);
  const hi = jsSortOrder(p, QK, true, true);
  const iota = i8x16(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  let runs = i8x16.splat(0);
  for (let pos = 0; pos < QK; pos++) {
    const j = byteAt(lo, hi, pos);
    const run = i8x16.splat(<i8>((pos >> shift) << (j < 16 ? 0 : 4)));
    runs = v128.or(runs, v128.and(run, i8x16.eq(iota, i8x16.splat(<i8>(j & 15)))));
  }
  return runs;
}

/**
 * C(q, i) = q(q-1)...(q-i+1) / i! for q < 32, i < 8 (0 when q < i): the product is exact in float64 (< 2^35)
 * and so is the quotient, an integer. `i` is a constant at every call, so the unused factors fold away.
 */
@inline function choose(q: f64, i: i32): f64 {
  let n = q;
  if (i > 1) n *= q - 1;
  if (i > 2) n *= q - 2;
  if (i > 3) n *= q - 3;
  if (i > 4) n *= q - 4;
  if (i > 5) n *= q - 5;
  if (i > 6) n *= q - 6;
  return n / <f64>(i == 1 ? 1 : i == 2 ? 2 : i == 3 ? 6 : i == 4 ? 24 : i == 5 ? 120 : i == 6 ? 720 : 5040);
}

/** Membership term of the member at the lowest bit of m: C(q, i), q = its index among rest's others. */
@inline function term(rest: u32, m: u32, i: i32): f64 {
  return choose(<f64>(popcnt(rest & ((<u32>1 << ctz(m)) - 1)) - 1), i);
}

/**
 * The 2-bit codes of values 4v..4v+3 as one byte (value 4v + i at bits 2i): clamp(floor(1.5 * (x/s + 1) +
 * 0.5), 0, 3) in float64, s the scale of the value's set; 2 (u = 0) where s is zero or NaN; 0 for NaN x.
 * sets: canonical set index of positions 0..15 or 16..31 (bytes); s0/s1: scales of sets 0..3 / 4..7 (f32
 * lanes); l0/l1: their live masks.
 */
@inline function codes4(p: usize, v: i32, sets: v128, s0: v128, s1: v128, l0: v128, l1: v128): u32 {
  // Set index of each value into byte 0 of its lane (bytes 1..3 select 0), then byte indices 4k..4k+3.
  const k = i8x16.swizzle(sets, v128.or(i32x4.add(i32x4.splat((v & 3) << 2), i32x4(0, 1, 2, 3)), i32x4.splat(0xffffff00)));
  const at = i32x4.add(i32x4.mul(k, i32x4.splat(0x04040404)), i32x4.splat(0x03020100));
  const at1 = i8x16.sub(at, i8x16.splat(16));
  const s = v128.or(i8x16.swizzle(s0, at), i8x16.swizzle(s1, at1));
  const on = v128.or(i8x16.swizzle(l0, at), i8x16.swizzle(l1, at1));
  const x = v128.load(p + (<usize>v << 4));
  const lo = code2(f64x2.promote_low_f32x4(x), f64x2.promote_low_f32x4(s));
  const hi = code2(f64x2.promote_low_f32x4(i32x4.shuffle(x, x, 2, 3, 0, 1)), f64x2.promote_low_f32x4(i32x4.shuffle(s, s, 2, 3, 0, 1)));
  const c = i32x4.mul(v128.bitselect(i32x4.shuffle(lo, hi, 0, 2, 4, 6), i32x4.splat(2), on), i32x4(1, 4, 16, 64));
  return <u32>(i32x4.extract_lane(c, 0) | i32x4.extract_lane(c, 1) | i32x4.extract_lane(c, 2) | i32x4.extract_lane(c, 3));
}

/**
 * Codes of two values (f64 lanes) in the low words of their lanes. pmax(0, t) is `0 < t ? t : 0`, which
 * also maps NaN to 0; 0..3 + 2^52 holds the integer in its low mantissa bits.
 */
@inline function code2(x: v128, s: v128): v128 {
  const t = f64x2.floor(f64x2.add(f64x2.mul(f64x2.add(f64x2.div(x, s), f64x2.splat(1)), f64x2.splat(1.5)), f64x2.splat(0.5)));
  return f64x2.add(f64x2.pmin(f64x2.splat(3), f64x2.pmax(f64x2.splat(0), t)), f64x2.splat(4503599627370496));
}

/** Lanes of f16 bits that are neither +-0 nor Inf/NaN (halfToFloat4 reads those as finite values). */
@inline function live(h: v128): v128 {
  const zero = i32x4.eq(v128.and(h, i32x4.splat(0x7fff)), i32x4.splat(0));
  return v128.not(v128.or(zero, i32x4.eq(v128.and(h, i32x4.splat(0x7c00)), i32x4.splat(0x7c00))));
}

/**
 * One block: runs -> canonical sets -> scales, membership chunks, codes. Membership chunks as in
 * attention/int2s.ts's membershipPlan: g=8 one 52-bit chunk of digits 0..3; g=4 45 bits (digits 0..3) then 22 (4..7).
 */
@inline function int2sBlock(p: usize, o: usize, g: i32): void {
  const shift = g == 8 ? 3 : 2;
  const sets = QK / g;
  const grp = o + <usize>(2 * sets);
  const qs = grp + <usize>(g == 8 ? 7 : 9);
  let nan = i32x4.splat(0);
  for (let v = 0; v < 8; v++) {
    const x = v128.load(p + (<usize>v << 4));
    nan = v128.or(nan, f32x4.ne(x, x));
  }
  const withNaN = v128.any_true(nan);
  const runs = withNaN ? runsJs(p, shift) : runsFast(p, shift);
  const rlo = v128.and(runs, i8x16.splat(15));
  const rhi = i8x16.shr_u(runs, 4);
  let rest: u32 = 0xffffffff;
  let chunk0: u64 = 0;
  let chunk1: u64 = 0;
  let weight: u64 = 1;
  let setLo = i8x16.splat(0);
  let setHi = setLo;
  for (let k = 0; k < sets; k++) {
    // Set k holds the lowest position not yet numbered.
    const run = i8x16.splat(<i8>byteAt(rlo, rhi, <i32>ctz(rest)));
    const inLo = i8x16.eq(rlo, run);
    const inHi = i8x16.eq(rhi, run);
    const members = <u32>i8x16.bitmask(inLo) | (<u32>i8x16.bitmask(inHi) << 16);
    setLo = v128.bitselect(i8x16.splat(<i8>k), setLo, inLo);
    setHi = v128.bitselect(i8x16.splat(<i8>k), setHi, inHi);
    // Scale: max |x| over the set, rounded up to f16. Without NaN, the max of the |x| bit patterns; with
    // one, f64.max, the operator V8 also runs for Math.max, so the NaN has the reference's sign.
    let amax: f64 = 0;
    if (withNaN) {
      for (let m = members; m != 0; m &= m - 1) amax = max<f64>(amax, <f64>abs<f32>(load<f32>(p + (<usize>ctz(m) << 2))));
    } else {
      let bits: u32 = 0;
      for (let m = members; m != 0; m &= m - 1) {
        const b = load<u32>(p + (<usize>ctz(m) << 2)) & ABS;
        bits = select<u32>(b, bits, b > bits);
      }
      amax = <f64>reinterpret<f32>(bits);
    }
    store<u16>(o + (<usize>k << 1), <u16>halfUpSat(amax));
    // Digit: the i-th member after the lowest, at index q among the other remaining positions, adds C(q, i).
    let m = members & (members - 1);
    let digit = term(rest, m, 1);
    m &= m - 1;
    digit += term(rest, m, 2);
    m &= m - 1;
    digit += term(rest, m, 3);
    if (g == 8) {
      m &= m - 1;
      digit += term(rest, m, 4);
      m &= m - 1;
      digit += term(rest, m, 5);
      m &= m - 1;
      digit += term(rest, m, 6);
      m &= m - 1;
      digit += term(rest, m, 7);
    }
    rest &= ~members;
    if (g == 4 && k == 4) weight = 1;
    if (g == 4 && k >= 4) chunk1 += <u64>digit * weight;
    else chunk0 += <u64>digit * weight;
    weight *= <u64>(g == 8 ? choose(<f64>(QK - 1 - k * g), 7) : choose(<f64>(QK - 1 - k * g), 3));
  }
  // Low bits first: g=8 fills 52 of 56 bits; g=4 puts chunk1 at bit 45, its top 3 bits in byte 8.
  // Writing 8 bytes at grp runs into qs for g=8, which is written next.
  store<u64>(grp, g == 8 ? chunk0 : chunk0 | (chunk1 << 45));
  if (g == 4) store<u8>(grp, <u8>(chunk1 >> 19), 8);
  // Codes, from the stored scales: live = neither zero nor NaN (JS `s ? x / s : 0`); as f32 they are exact.
  const h = g == 8 ? v128.load64_zero(o) : v128.load(o);
  const h0 = i32x4.extend_low_i16x8_u(h);
  const h1 = i32x4.extend_high_i16x8_u(h);
  const s0 = halfToFloat4(h0);
  const s1 = halfToFloat4(h1);
  const l0 = live(h0);
  const l1 = live(h1);
  for (let v = 0; v < 4; v++) store<u8>(qs + <usize>v, <u8>codes4(p, v, setLo, s0, s1, l0, l1));
  for (let v = 4; v < 8; v++) store<u8>(qs + <usize>v, <u8>codes4(p, v, setHi, s0, s1, l0, l1));
}

@inline function int2sRows(src: usize, srcStride: i32, T: i32, D: i32, dst: usize, g: i32): void {
  const nb = D >> 5;
  const bb = <usize>(g == 8 ? 23 : 33);
  for (let t = 0; t < T; t++) {
    const s = src + ((<usize>t * srcStride) << 2);
    for (let ib = 0; ib < nb; ib++) int2sBlock(s + (<usize>ib << 7), dst + (<usize>t * nb + ib) * bb, g);
  }
}

export function int2s_g8_encode(src: usize, srcStride: i32, T: i32, D: i32, dst: usize): void { int2sRows(src, srcStride, T, D, dst, 8); }
export function int2s_g4_encode(src: usize, srcStride: i32, T: i32, D: i32, dst: usize): void { int2sRows(src, srcStride, T, D, dst, 4); }
