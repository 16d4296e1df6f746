// Shared kernels over f32 data: G-head dots and weighted sums, a stable softmax, fp16 bit conversions.
// Pointer-only (absolute byte addresses into the imported memory); no globals, no static data.
import { expN, expReduced, madd } from '../ops/math';

export { madd };

/** 2^112: turns fp16 bits shifted into f32 position back into the fp16 value (normals and subnormals). */
const HALF_RESCALE: f32 = reinterpret<f32>(0x77800000);

/**
 * fp16 bits -> f32, exact (Inf/NaN kept). Used for block scales. Branch-free: V8 compiles a float select to a
 * branch, and q4_0's scale sign is random, so a sign select mispredicted on every other block.
 */
@inline export function halfToFloat(h: u32): f32 {
  // Normals by an exponent rebias in integers, subnormals as m * 2^-24: no f32 subnormal enters a multiply
  // (x86 takes a microcode assist on one; q4_K / q6_K block scales are often fp16 subnormals: 2x the decode time).
  const m = h & 0x7fff;
  const sub = reinterpret<u32>(<f32>m * reinterpret<f32>(0x33800000));
  const mag = select<u32>((m << 13) + 0x38000000, sub, m >= 0x400);
  const bits = select<u32>(0x7f800000 | ((h & 0x3ff) << 13), mag, (h & 0x7c00) == 0x7c00);
  return reinterpret<f32>(bits | ((h & 0x8000) << 16));
}

/**
 * f16 magnitudes m = (h & 0x7fff) << 13 in i32 lanes -> f32 bits. A = m + (112 << 23) is the value of a
 * normal half; B = float(m + (113 << 23)) - 2^-14 that of a subnormal or zero (the renormalised value minus
 * its implicit one, all in normal floats). For normals B >= A, for subnormals and zero B < A: the value
 * is min(A, B), compared as integers (the bit patterns of positive floats order as their values).
 */
@inline export function magToFloat(m: v128): v128 {
  const a = i32x4.add(m, i32x4.splat(112 << 23));
  const b = f32x4.sub(i32x4.add(m, i32x4.splat(113 << 23)), f32x4.splat(reinterpret<f32>(113 << 23)));
  return i32x4.min_s(a, b);
}

/**
 * Four fp16 values (their bits in i32 lanes, upper bits ignored) -> f32x4, finite values exact and no f32
 * subnormal in a multiply (halfToFloat's rule, four at a time: K-quant block scales are often fp16 subnormals).
 * Inf/NaN become large finite values.
 */
@inline export function halfToFloat4Exact(v: v128): v128 {
  return v128.or(magToFloat(v128.and(i32x4.shl(v, 13), i32x4.splat(0x0fffe000))), v128.and(i32x4.shl(v, 16), i32x4.splat(0x80000000)));
}

/** Four fp16 values (u16 bits widened to i32 lanes) -> f32x4. Inf/NaN become large finite values. */
@inline export function halfToFloat4(v: v128): v128 {
  const sign = i32x4.shl(v128.and(v, i32x4.splat(0x8000)), 16);
  const mag = i32x4.shl(v128.and(v, i32x4.splat(0x7fff)), 13);
  return v128.or(f32x4.mul(mag, f32x4.splat(HALF_RESCALE)), sign);
}

/** f32 -> fp16 bits, round to nearest even; overflow -> Inf, NaN -> 0x7e00 (same as numeric/half.ts). */
export function floatToHalf(value: f32): u32 {
  const x = reinterpret<u32>(value);
  const sign = (x >>> 16) & 0x8000;
  const exp = <i32>((x >>> 23) & 0xff);
  let mant = x & 0x7fffff;
  if (exp == 0xff) return sign | (mant != 0 ? 0x7e00 : 0x7c00);
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = <u32>(14 - e);
    const half = mant >>> shift;
    const rem = mant & ((1 << shift) - 1);
    const mid: u32 = 1 << (shift - 1);
    const up: u32 = rem > mid || (rem == mid && (half & 1) == 1) ? 1 : 0;
    return sign | (half + up);
  }
  const half = (<u32>e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  const up: u32 = rem > 0x1000 || (rem == 0x1000 && (half & 1) == 1) ? 1 : 0;
  return sign | (half + up);
}

/** [sum a, sum b, sum c, sum d] of four f32x4 vectors. */
@inline export function hsum4(a: v128, b: v128, c: v128, d: v128): v128 {
  const ab = f32x4.add(f32x4.shuffle(a, b, 0, 1, 4, 5), f32x4.shuffle(a, b, 2, 3, 6, 7));
  const cd = f32x4.add(f32x4.shuffle(c, d, 0, 1, 4, 5), f32x4.shuffle(c, d, 2, 3, 6, 7));
  return f32x4.add(f32x4.shuffle(ab, cd, 0, 2, 4, 6), f32x4.shuffle(ab, cd, 1, 3, 5, 7));
}

/** [sum a, sum b, sum c, sum d] of four i32x4 vectors. */
@inline export function hsum4i(a: v128, b: v128, c: v128, d: v128): v128 {
  const ab = i32x4.add(i32x4.shuffle(a, b, 0, 1, 4, 5), i32x4.shuffle(a, b, 2, 3, 6, 7));
  const cd = i32x4.add(i32x4.shuffle(c, d, 0, 1, 4, 5), i32x4.shuffle(c, d, 2, 3, 6, 7));
  return i32x4.add(i32x4.shuffle(ab, cd, 0, 2, 4, 6), i32x4.shuffle(ab, cd, 1, 3, 5, 7));
}

/** sum of 32 i16 products q[0..32) . (v0..v3) as i32x4 partial sums (exact for |q| <= 32767, |v| <= 128). */
@inline export function idot4(q: usize, v0: v128, v1: v128, v2: v128, v3: v128): v128 {
  const a = i32x4.add(i32x4.dot_i16x8_s(v128.load(q), v0), i32x4.dot_i16x8_s(v128.load(q, 16), v1));
  const b = i32x4.add(i32x4.dot_i16x8_s(v128.load(q, 32), v2), i32x4.dot_i16x8_s(v128.load(q, 48), v3));
  return i32x4.add(a, b);
}

/** Stores lanes 0..R-1 of s (R a constant after inlining) at o, o + os, o + 2*os, o + 3*os. */
@inline export function storeRows(R: i32, s: v128, o: usize, os: usize): void {
  store<f32>(o, f32x4.extract_lane(s, 0));
  if (R > 1) store<f32>(o + os, f32x4.extract_lane(s, 1));
  if (R > 2) store<f32>(o + 2 * os, f32x4.extract_lane(s, 2));
  if (R > 3) store<f32>(o + 3 * os, f32x4.extract_lane(s, 3));
}

/** The lane sum in hsum4's order, (a0 + a2) + (a1 + a3): a row's dot has the same bits in every pass of dotRows. */
@inline export function hsumPairs(a: v128): f32 {
  const p = f32x4.add(a, f32x4.shuffle(a, a, 2, 3, 0, 1));
  return f32x4.extract_lane(p, 0) + f32x4.extract_lane(p, 1);
}

@inline export function hsum(a: v128): f32 {
  return f32x4.extract_lane(a, 0) + f32x4.extract_lane(a, 1) + f32x4.extract_lane(a, 2) + f32x4.extract_lane(a, 3);
}

/**
 * out[g*outStride + t] = dot(q[g, :], row t) for g < G, t < T.
 * q: [G, D] f32; row t at rows + t*rowStride bytes, D f32 values; D % 4 == 0.
 * Heads go in fours so each K vector load serves four query heads; leftover heads take four rows at once.
 */
export function dotRows(q: usize, G: i32, D: i32, rows: usize, T: i32, rowStride: usize, out: usize, outStride: i32): void {
  const rowB = <usize>D << 2;
  const G4 = G & ~3;
  for (let t = 0; t < T; t++) {
    const k = rows + <usize>t * rowStride;
    for (let g = 0; g < G4; g += 4) {
      const q0 = q + <usize>g * rowB;
      const q1 = q0 + rowB;
      const q2 = q1 + rowB;
      const q3 = q2 + rowB;
      let a0 = f32x4.splat(0);
      let a1 = f32x4.splat(0);
      let a2 = f32x4.splat(0);
      let a3 = f32x4.splat(0);
      for (let i: usize = 0; i < rowB; i += 16) {
        const kv = v128.load(k + i);
        a0 = f32x4.add(a0, f32x4.mul(v128.load(q0 + i), kv));
        a1 = f32x4.add(a1, f32x4.mul(v128.load(q1 + i), kv));
        a2 = f32x4.add(a2, f32x4.mul(v128.load(q2 + i), kv));
        a3 = f32x4.add(a3, f32x4.mul(v128.load(q3 + i), kv));
      }
      const s = hsum4(a0, a1, a2, a3);
      const o = out + ((<usize>g * outStride + t) << 2);
      const os = <usize>outStride << 2;
      store<f32>(o, f32x4.extract_lane(s, 0));
      store<f32>(o + os, f32x4.extract_lane(s, 1));
      store<f32>(o + 2 * os, f32x4.extract_lane(s, 2));
      store<f32>(o + 3 * os, f32x4.extract_lane(s, 3));
    }
  }
  if (G4 == G) return;
  // Leftover heads: four rows per pass share each q load.
  const T4 = T & ~3;
  for (let g = G4; g < G; g++) {
    const qg = q + <usize>g * rowB;
    const og = out + ((<usize>g * outStride) << 2);
    let t = 0;
    for (; t < T4; t += 4) {
      const k0 = rows + <usize>t * rowStride;
      const k1 = k0 + rowStride;
      const k2 = k1 + rowStride;
      const k3 = k2 + rowStride;
      let a0 = f32x4.splat(0);
      let a1 = f32x4.splat(0);
      let a2 = f32x4.splat(0);
      let a3 = f32x4.splat(0);
      for (let i: usize = 0; i < rowB; i += 16) {
        const qv = v128.load(qg + i);
        a0 = f32x4.add(a0, f32x4.mul(v128.load(k0 + i), qv));
        a1 = f32x4.add(a1, f32x4.mul(v128.load(k1 + i), qv));
        a2 = f32x4.add(a2, f32x4.mul(v128.load(k2 + i), qv));
        a3 = f32x4.add(a3, f32x4.mul(v128.load(k3 + i), qv));
      }
      v128.store(og + (<usize>t << 2), hsum4(a0, a1, a2, a3));
    }
    for (; t < T; t++) {
      const k0 = rows + <usize>t * rowStride;
      let a0 = f32x4.splat(0);
      for (let i: usize = 0; i < rowB; i += 16) a0 = f32x4.add(a0, f32x4.mul(v128.load(k0 + i), v128.load(qg + i)));
      store<f32>(og + (<usize>t << 2), hsumPairs(a0));
    }
  }
}

/**
 * acc[g, c] += sum_t w[g*wStride + t] * row_t[c] for g < G, t < T, c < D.
 * acc: [G, D] f32; row t at rows + t*rowStride bytes; D % 16 == 0. Sixteen channels stay in registers
 * while the rows stream past; callers keep T small (an L1 tile) so rows are re-read from cache.
 */
export function axpyRows(w: usize, wStride: i32, G: i32, D: i32, rows: usize, T: i32, rowStride: usize, acc: usize): void {
  const rowB = <usize>D << 2;
  for (let g = 0; g < G; g++) {
    const wg = w + ((<usize>g * wStride) << 2);
    const ag = acc + <usize>g * rowB;
    let c: usize = 0;
    for (; c + 128 <= rowB; c += 128) {
      let a0 = v128.load(ag + c);
      let a1 = v128.load(ag + c, 16);
      let a2 = v128.load(ag + c, 32);
      let a3 = v128.load(ag + c, 48);
      let a4 = v128.load(ag + c, 64);
      let a5 = v128.load(ag + c, 80);
      let a6 = v128.load(ag + c, 96);
      let a7 = v128.load(ag + c, 112);
      let r = rows + c;
      let t = 0;
      // Two rows per iteration: half the loop overhead per multiply-add.
      for (; t + 2 <= T; t += 2) {
        const ws = v128.load32_splat(wg + (<usize>t << 2));
        const wt = v128.load32_splat(wg + (<usize>t << 2), 4);
        const r1 = r + rowStride;
        a0 = f32x4.add(f32x4.add(a0, f32x4.mul(ws, v128.load(r))), f32x4.mul(wt, v128.load(r1)));
        a1 = f32x4.add(f32x4.add(a1, f32x4.mul(ws, v128.load(r, 16))), f32x4.mul(wt, v128.load(r1, 16)));
        a2 = f32x4.add(f32x4.add(a2, f32x4.mul(ws, v128.load(r, 32))), f32x4.mul(wt, v128.load(r1, 32)));
        a3 = f32x4.add(f32x4.add(a3, f32x4.mul(ws, v128.load(r, 48))), f32x4.mul(wt, v128.load(r1, 48)));
        a4 = f32x4.add(f32x4.add(a4, f32x4.mul(ws, v128.load(r, 64))), f32x4.mul(wt, v128.load(r1, 64)));
        a5 = f32x4.add(f32x4.add(a5, f32x4.mul(ws, v128.load(r, 80))), f32x4.mul(wt, v128.load(r1, 80)));
        a6 = f32x4.add(f32x4.add(a6, f32x4.mul(ws, v128.load(r, 96))), f32x4.mul(wt, v128.load(r1, 96)));
        a7 = f32x4.add(f32x4.add(a7, f32x4.mul(ws, v128.load(r, 112))), f32x4.mul(wt, v128.load(r1, 112)));
        r = r1 + rowStride;
      }
      if (t < T) {
        const ws = v128.load32_splat(wg + (<usize>t << 2));
        a0 = f32x4.add(a0, f32x4.mul(ws, v128.load(r)));
        a1 = f32x4.add(a1, f32x4.mul(ws, v128.load(r, 16)));
        a2 = f32x4.add(a2, f32x4.mul(ws, v128.load(r, 32)));
        a3 = f32x4.add(a3, f32x4.mul(ws, v128.load(r, 48)));
        a4 = f32x4.add(a4, f32x4.mul(ws, v128.load(r, 64)));
        a5 = f32x4.add(a5, f32x4.mul(ws, v128.load(r, 80)));
        a6 = f32x4.add(a6, f32x4.mul(ws, v128.load(r, 96)));
        a7 = f32x4.add(a7, f32x4.mul(ws, v128.load(r, 112)));
      }
      v128.store(ag + c, a0);
      v128.store(ag + c, a1, 16);
      v128.store(ag + c, a2, 32);
      v128.store(ag + c, a3, 48);
      v128.store(ag + c, a4, 64);
      v128.store(ag + c, a5, 80);
      v128.store(ag + c, a6, 96);
      v128.store(ag + c, a7, 112);
    }
    for (; c < rowB; c += 64) {
      let a0 = v128.load(ag + c);
      let a1 = v128.load(ag + c, 16);
      let a2 = v128.load(ag + c, 32);
      let a3 = v128.load(ag + c, 48);
      let r = rows + c;
      for (let t = 0; t < T; t++) {
        const ws = v128.load32_splat(wg + (<usize>t << 2));
        a0 = f32x4.add(a0, f32x4.mul(ws, v128.load(r)));
        a1 = f32x4.add(a1, f32x4.mul(ws, v128.load(r, 16)));
        a2 = f32x4.add(a2, f32x4.mul(ws, v128.load(r, 32)));
        a3 = f32x4.add(a3, f32x4.mul(ws, v128.load(r, 48)));
        r += rowStride;
      }
      v128.store(ag + c, a0);
      v128.store(ag + c, a1, 16);
      v128.store(ag + c, a2, 32);
      v128.store(ag + c, a3, 48);
    }
  }
}

/**
 * e^x for x <= 0 (x clamped at -87, where e^x is below f32's normal range): one 2^n scale suffices, ~1 ulp.
 * pmax keeps a NaN x (f32x4.max is ~7 instructions in V8, pmax one); 2^n's exponent comes from n + 2^23 + 127,
 * whose low bits are n + 127 for the integral n in [-126, 0] (the same bits as truncating, 6 instructions fewer).
 */
@inline function exp4(x: v128): v128 {
  x = f32x4.pmax(x, f32x4.splat(-87.0));
  const n = expN(x);
  const pow2n = i32x4.shl(f32x4.add(n, f32x4.splat(8388735.0)), 23);
  return f32x4.mul(expReduced(x, n), pow2n);
}

/**
 * Max of row[lo, hi) (f32), NaN if any value is NaN, as f32x4.max would give: a pmax chain (one instruction a
 * vector; f32x4.max's seven made this scan 1.1 ns a value) and a separate NaN flag.
 */
@inline function rowMax(row: usize, lo: i32, hi: i32): f32 {
  let m: f32 = -Infinity;
  let t = lo;
  let mv = f32x4.splat(-Infinity);
  let nan = i32x4.splat(0);
  for (; t + 4 <= hi; t += 4) {
    const v = v128.load(row + (<usize>t << 2));
    mv = f32x4.pmax(mv, v);
    nan = v128.or(nan, f32x4.ne(v, v));
  }
  for (; t < hi; t++) m = Mathf.max(m, load<f32>(row + (<usize>t << 2)));
  if (v128.any_true(nan)) return NaN;
  return Mathf.max(m, Mathf.max(Mathf.max(f32x4.extract_lane(mv, 0), f32x4.extract_lane(mv, 1)), Mathf.max(f32x4.extract_lane(mv, 2), f32x4.extract_lane(mv, 3))));
}

/**
 * Stable softmax numerators, row by row: row r of s ([R, stride] f32) gets exp(s - max) on [lo, hi) and 0
 * elsewhere in [0, stride); sums[r] (f64) = the sum of the kept numerators, accumulated in f64.
 * lohi: [R, 2] i32. Rows with lo >= hi get all zeros and sum 0.
 */
export function softmaxRows(s: usize, R: i32, stride: i32, lohi: usize, sums: usize): void {
  for (let r = 0; r < R; r++) {
    const row = s + ((<usize>r * stride) << 2);
    const lo = load<i32>(lohi + (<usize>r << 3));
    const hi = load<i32>(lohi + (<usize>r << 3), 4);
    for (let t = 0; t < lo; t++) store<f32>(row + (<usize>t << 2), 0);
    for (let t = hi; t < stride; t++) store<f32>(row + (<usize>t << 2), 0);
    const max = rowMax(row, lo, hi);
    const m4 = f32x4.splat(max);
    let sum2 = f64x2.splat(0);
    let t = lo;
    for (; t + 4 <= hi; t += 4) {
      const p = row + (<usize>t << 2);
      const e = exp4(f32x4.sub(v128.load(p), m4));
      v128.store(p, e);
      sum2 = f64x2.add(sum2, f64x2.add(f64x2.promote_low_f32x4(e), f64x2.promote_low_f32x4(f32x4.shuffle(e, e, 2, 3, 0, 1))));
    }
    let sum = f64x2.extract_lane(sum2, 0) + f64x2.extract_lane(sum2, 1);
    for (; t < hi; t++) {
      const p = row + (<usize>t << 2);
      const e = f32x4.extract_lane(exp4(f32x4.splat(load<f32>(p) - max)), 0);
      store<f32>(p, e);
      sum += <f64>e;
    }
    store<f64>(sums + (<usize>r << 3), sum);
  }
}

/**
 * One chunk of online softmax (flash-attention style), row by row. Row r of s ([R, stride] f32 scores)
 * becomes exp(s - m') on [lo, hi) and 0 elsewhere, where m' = max(m[r], chunk max); the running state
 * (m [R] f32, l [R] f64, acc [R, D] f32) is rescaled by exp(m[r] - m') first, then l[r] += the new numerators.
 * Rows with lo >= hi leave the state alone. lohi: [R, 2] i32; D % 4 == 0.
 */
export function softmaxChunk(s: usize, R: i32, stride: i32, lohi: usize, m: usize, l: usize, acc: usize, D: i32): void {
  for (let r = 0; r < R; r++) {
    const row = s + ((<usize>r * stride) << 2);
    const lo = load<i32>(lohi + (<usize>r << 3));
    const hi = load<i32>(lohi + (<usize>r << 3), 4);
    if (lo >= hi) {
      memory.fill(row, 0, <usize>stride << 2);
      continue;
    }
    for (let t = 0; t < lo; t++) store<f32>(row + (<usize>t << 2), 0);
    for (let t = hi; t < stride; t++) store<f32>(row + (<usize>t << 2), 0);
    const cmax = rowMax(row, lo, hi);
    const mOld = load<f32>(m + (<usize>r << 2));
    const max = Mathf.max(mOld, cmax);
    let sum: f64 = load<f64>(l + (<usize>r << 3));
    if (mOld != max) {
      // The running state was relative to a smaller max: scale it down (exp(-inf) = 0 on the first chunk).
      const alpha: f32 = mOld == -Infinity ? 0 : f32x4.extract_lane(exp4(f32x4.splat(mOld - max)), 0);
      sum *= <f64>alpha;
      const av = f32x4.splat(alpha);
      const a = acc + ((<usize>r * D) << 2);
      for (let c = 0; c < D; c += 4) v128.store(a + (<usize>c << 2), f32x4.mul(v128.load(a + (<usize>c << 2)), av));
      store<f32>(m + (<usize>r << 2), max);
    }
    const m4 = f32x4.splat(max);
    let sum2 = f64x2.splat(0);
    let t = lo;
    // 64 values (each <= 1) summed in f32 lanes, then the partial added in f64: the f32 partial is off by at
    // most 16 * 2^-24 relative, the running sum stays f64 over any length.
    while (t + 4 <= hi) {
      let part = f32x4.splat(0);
      const end = min(hi, t + 64);
      for (; t + 4 <= end; t += 4) {
        const p = row + (<usize>t << 2);
        const e = exp4(f32x4.sub(v128.load(p), m4));
        v128.store(p, e);
        part = f32x4.add(part, e);
      }
      sum2 = f64x2.add(sum2, f64x2.add(f64x2.promote_low_f32x4(part), f64x2.promote_low_f32x4(f32x4.shuffle(part, part, 2, 3, 0, 1))));
    }
    sum += f64x2.extract_lane(sum2, 0) + f64x2.extract_lane(sum2, 1);
    for (; t < hi; t++) {
      const p = row + (<usize>t << 2);
      const e = f32x4.extract_lane(exp4(f32x4.splat(load<f32>(p) - max)), 0);
      store<f32>(p, e);
      sum += <f64>e;
    }
    store<f64>(l + (<usize>r << 3), sum);
  }
}

/**
 * Integer q for the integer score kernels: each row of R x D f32 (D % 32 == 0) in blocks of 32, d = amax /
 * maxq, v = round-to-nearest-even(x / d) stored as i16 at dst ([R, D] i16), d at dsc ([R, D/32] f32).
 * maxq 127 is llama.cpp's int8 q; 32767 keeps 16 bits (same kernel speed: SIMD widens to i16 anyway).
 */
export function quantizeRows(src: usize, R: i32, D: i32, maxq: f32, dst: usize, dsc: usize): void {
  const nb = D >> 5;
  for (let r = 0; r < R; r++) {
    for (let ib = 0; ib < nb; ib++) {
      const x = src + ((<usize>(r * D + (ib << 5))) << 2);
      let mv = f32x4.splat(0);
      for (let j: usize = 0; j < 128; j += 16) mv = f32x4.max(mv, f32x4.abs(v128.load(x + j)));
      const amax = Mathf.max(Mathf.max(f32x4.extract_lane(mv, 0), f32x4.extract_lane(mv, 1)), Mathf.max(f32x4.extract_lane(mv, 2), f32x4.extract_lane(mv, 3)));
      const d: f32 = amax / maxq;
      const id = f32x4.splat(d != 0 ? <f32>1 / d : 0);
      store<f32>(dsc + ((<usize>(r * nb + ib)) << 2), d);
      const o = dst + ((<usize>(r * D + (ib << 5))) << 1);
      for (let j: usize = 0; j < 128; j += 32) {
        const a = i32x4.trunc_sat_f32x4_s(f32x4.nearest(f32x4.mul(v128.load(x + j), id)));
        const b = i32x4.trunc_sat_f32x4_s(f32x4.nearest(f32x4.mul(v128.load(x + j, 16), id)));
        v128.store(o + (j >> 1), i16x8.narrow_i32x4_s(a, b));
      }
    }
  }
}

/** x[i] *= k for n f32 values (n % 4 == 0): query pre-scaling and rescales. */
export function scaleF32(x: usize, n: i32, k: f32): void {
  const kv = f32x4.splat(k);
  for (let i = 0; i < n; i += 4) {
    const p = x + (<usize>i << 2);
    v128.store(p, f32x4.mul(v128.load(p), kv));
  }
}

/** Sum of n f32 values (n % 16 == 0), four independent chains: the read-bandwidth probe for benchmarks. */
export function sumF32(p: usize, n: i32): f32 {
  let a0 = f32x4.splat(0);
  let a1 = f32x4.splat(0);
  let a2 = f32x4.splat(0);
  let a3 = f32x4.splat(0);
  const end = p + (<usize>n << 2);
  for (; p < end; p += 64) {
    a0 = f32x4.add(a0, v128.load(p));
    a1 = f32x4.add(a1, v128.load(p, 16));
    a2 = f32x4.add(a2, v128.load(p, 32));
    a3 = f32x4.add(a3, v128.load(p, 48));
  }
  return hsum(f32x4.add(f32x4.add(a0, a1), f32x4.add(a2, a3)));
}

/** 16 values of q (f32 at q) times x0..x3 (4 each), as f32x4 partial sums. */
@inline export function dot4(q: usize, x0: v128, x1: v128, x2: v128, x3: v128): v128 {
  return f32x4.add(f32x4.add(f32x4.mul(v128.load(q), x0), f32x4.mul(v128.load(q, 16), x1)), f32x4.add(f32x4.mul(v128.load(q, 32), x2), f32x4.mul(v128.load(q, 48), x3)));
}

/** First byte past the module's static data: the arena must hand out nothing below it (runtime/arena.ts). */
export function heapBase(): usize {
  return __heap_base;
}
