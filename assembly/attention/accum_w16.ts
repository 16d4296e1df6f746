// Integer weighted sums over q4_0 / q8_0 V rows: acc[g, c] += sum_t w[g*wStride + t] * x_t[c], the same
// contract and signature as q4_0_accum / q8_0_accum, without decoding V to f32.
//
// Numerics. Per (row g, 32-token sub-block, 32-channel block b) the products s_t = w[g, t] * d_{t,b} (f32) are
// rounded to 16 bits: si_t = round-to-nearest-even(s_t * (32767 / amax)), amax = max_t |s_t|, a step of
// amax / 32767 (relative step 2^-15 of the block's largest weight); each weight is off by at most half a step.
// sum_t si_t * level_t,c is exact in i32; once per (g, sub-block, b), acc += f32(isum) * (amax * (1/32767)).
// Expected NMSE against the f32 kernels, per block: n * (step^2 / 12) / sum_t s_t^2 <= n / (12 * 32767^2)
// = 2.5e-9 for n = 32 tokens (7.8e-11 when all 32 terms are equal; ~0 when one term dominates, since it is
// rounded to exactly +-32767 steps). Softmax-like weights measure ~1e-9 (src/kernels/attention/accum-w16.test.ts), far
// below the V quantization noise itself (q8_0 ~3e-5, q4_0 ~1e-2 on Gaussian rows).
// amax == 0 (zero or masked weights, zero scales) adds nothing. amax below 2^-126 * 32767 (~3.9e-34) gives a
// subnormal, coarser step, on contributions below ~1e-33. Weights and V scales must be finite (softmax
// numerators are): Inf gives NaN, NaN gives unspecified values.
//
// Cost (x64 code V8 emits). Per token pair, 8 channels and a pass of R <= 4 rows: the unpack (2 load8x8 +
// 2 word interleaves, +2 and in half of q4_0's quarters) is shared by the R rows; each row takes a splat +
// 2 i32x4.dot_i16x8_s + 2 i32x4.add for 16 multiply-adds. At R = 4 that is 24-26 SIMD ops per 64
// multiply-adds (~0.4 each), plus per (row, sub-block, block) ~110 ops to round 32 weights and ~12 per 8
// channels to add the sums into acc: ~0.55 op per multiply-add in all (the rounding is ~30% of the time).
// The f32 path (decode, then axpyRows) spends ~1.1 op per value to decode plus load + mul + add per 4
// multiply-adds: ~1.0-1.1 op per multiply-add at G = 3-4. Measured (2-vCPU Zen 4, Node 20, 1 thread, T = 4096,
// G = 3-4, D = 64-128): 2.2-2.9x fewer ns per token than q4_0_accum / q8_0_accum.
//
// Tile use (bytes from `tile`, 6336 in all; callers reserve tileBytes(D) >= 16 KiB):
//   [0, 4096)      si of 64 rows: pair p (tokens 2p, 2p+1, two i16) of row g at (g >> 2) * 256 + p * 16 + (g & 3) * 4
//   [4096, 4352)   scale per row, f32 (amax / 32767; 0 when amax == 0)
//   [4352, 4608)   q4_0: -8 * sum_t si_t per row, i32
//   [4608, 4736)   d_{t,b} of the sub-block's 32 tokens, f32 (0 past the last token)
//   [4736, 4864)   a partial sub-block's weights of one row, zero-padded
//   [4864, 5952)   a partial sub-block's block b: up to 32 tokens x 18 or 34 bytes, zero-padded
//   [5952, 6080)   q4_0: a high quarter's raw sums for up to 4 rows
//   [6080, 6336)   si of up to 4 rows, row-major, before transposeRows
// Limits: D % 32 == 0; any G >= 1 (rows go in chunks of 64: their si fill the tile); any T >= 1 (a partial last
// sub-block and odd T are zero-padded in the tile: nothing past token T - 1 or column T - 1 of w is read).
import { halfToFloat } from '../shared/common';

const QK = 32;
/** 1/32767 as f32: the weight step is amax * STEP. */
const STEP: f32 = <f32>1 / 32767;
/** Tokens per sub-block: one weight scale per (row, sub-block, channel block). */
const SUB = 32;
/** Rows prepared at once (their si fill SI). */
const ROWS = 64;
// Tile offsets (see the layout above).
const SI: usize = 0;
const SC: usize = 4096;
const CO: usize = 4352;
const DS: usize = 4608;
const WT: usize = 4736;
const VT: usize = 4864;
const HS: usize = 5952;
const ST: usize = 6080;

/** f32 -> i32, round to nearest even, for |x| < 2^22: adding 1.5 * 2^23 leaves the integer in the low mantissa bits. */
@inline function roundI32(x: v128): v128 {
  return i32x4.sub(f32x4.add(x, f32x4.splat(12582912.0)), i32x4.splat(0x4b400000));
}

/** Four fp16 values (u16 bits in i32 lanes) -> f32x4, exact, Inf/NaN kept (as halfToFloat, four at a time). */
@inline function halfToFloat4Exact(h: v128): v128 {
  const mag = i32x4.shl(v128.and(h, i32x4.splat(0x7fff)), 13);
  const fin = f32x4.mul(mag, f32x4.splat(reinterpret<f32>(0x77800000)));
  const inf = i32x4.eq(v128.and(h, i32x4.splat(0x7c00)), i32x4.splat(0x7c00));
  const f = v128.bitselect(v128.or(mag, i32x4.splat(0x70000000)), fin, inf);
  return v128.or(f, i32x4.shl(v128.and(h, i32x4.splat(0x8000)), 16));
}

/** d_{t,b} of the n tokens of a sub-block (block b of token t at vb + t*rb), 0 past n. */
@inline function gatherScales(vb: usize, rb: usize, n: i32, ds: usize): void {
  if (n == SUB) {
    let p = vb;
    for (let t: usize = 0; t < 128; t += 16) {
      let h = v128.load16_lane(p, i16x8.splat(0), 0);
      h = v128.load16_lane(p + rb, h, 2);
      h = v128.load16_lane(p + 2 * rb, h, 4);
      h = v128.load16_lane(p + 3 * rb, h, 6);
      v128.store(ds + t, halfToFloat4Exact(h));
      p += rb << 2;
    }
    return;
  }
  for (let t = 0; t < n; t++) store<f32>(ds + (<usize>t << 2), halfToFloat(load<u16>(vb + <usize>t * rb)));
  for (let t = n; t < SUB; t++) store<f32>(ds + (<usize>t << 2), 0);
}

/** Four rows of 16 token pairs (i32, 64 bytes a row at st) -> 16 x [row 0..3] at o (stale rows past Gc are never read). */
@inline function transposeRows(st: usize, o: usize): void {
  for (let j: usize = 0; j < 64; j += 16) {
    const a = v128.load(st + j);
    const b = v128.load(st + j, 64);
    const c = v128.load(st + j, 128);
    const d = v128.load(st + j, 192);
    const ab0 = i32x4.shuffle(a, b, 0, 4, 1, 5);
    const cd0 = i32x4.shuffle(c, d, 0, 4, 1, 5);
    const ab1 = i32x4.shuffle(a, b, 2, 6, 3, 7);
    const cd1 = i32x4.shuffle(c, d, 2, 6, 3, 7);
    const p = o + (j << 2);
    v128.store(p, i64x2.shuffle(ab0, cd0, 0, 2));
    v128.store(p, i64x2.shuffle(ab0, cd0, 1, 3), 16);
    v128.store(p, i64x2.shuffle(ab1, cd1, 0, 2), 32);
    v128.store(p, i64x2.shuffle(ab1, cd1, 1, 3), 48);
  }
}

/** si, scale and (q4_0) offset term of Gc rows for one (sub-block, block); row g's weights at w0 + g*wStride floats. */
@inline function prepRows(Q4: bool, w0: usize, wStride: i32, Gc: i32, n: i32, tile: usize): void {
  const ds = tile + DS;
  for (let g = 0; g < Gc; g++) {
    let wg = w0 + ((<usize>g * wStride) << 2);
    if (n < SUB) {
      // Weights past T are not ours to read (and may not be finite): copy the partial sub-block, zero-padded.
      const wt = tile + WT;
      for (let t = 0; t < n; t++) store<f32>(wt + (<usize>t << 2), load<f32>(wg + (<usize>t << 2)));
      for (let t = n; t < SUB; t++) store<f32>(wt + (<usize>t << 2), 0);
      wg = wt;
    }
    const s0 = f32x4.mul(v128.load(wg), v128.load(ds));
    const s1 = f32x4.mul(v128.load(wg, 16), v128.load(ds, 16));
    const s2 = f32x4.mul(v128.load(wg, 32), v128.load(ds, 32));
    const s3 = f32x4.mul(v128.load(wg, 48), v128.load(ds, 48));
    const s4 = f32x4.mul(v128.load(wg, 64), v128.load(ds, 64));
    const s5 = f32x4.mul(v128.load(wg, 80), v128.load(ds, 80));
    const s6 = f32x4.mul(v128.load(wg, 96), v128.load(ds, 96));
    const s7 = f32x4.mul(v128.load(wg, 112), v128.load(ds, 112));
    // max |s| as max(max s, -min s): V8 rebuilds abs's constant at every use.
    const hi = f32x4.pmax(f32x4.pmax(f32x4.pmax(s0, s1), f32x4.pmax(s2, s3)), f32x4.pmax(f32x4.pmax(s4, s5), f32x4.pmax(s6, s7)));
    const lo = f32x4.pmin(f32x4.pmin(f32x4.pmin(s0, s1), f32x4.pmin(s2, s3)), f32x4.pmin(f32x4.pmin(s4, s5), f32x4.pmin(s6, s7)));
    let m = f32x4.pmax(hi, f32x4.sub(f32x4.splat(0), lo));
    m = f32x4.pmax(m, i32x4.shuffle(m, m, 2, 3, 0, 1));
    m = f32x4.pmax(m, i32x4.shuffle(m, m, 1, 0, 3, 2));
    const amax = f32x4.extract_lane(m, 0);
    const live = amax > 0;
    const inv = f32x4.splat(live ? <f32>32767 / amax : 0);
    store<f32>(tile + SC + (<usize>g << 2), live ? amax * STEP : 0);
    const i0 = roundI32(f32x4.mul(s0, inv));
    const i1 = roundI32(f32x4.mul(s1, inv));
    const i2 = roundI32(f32x4.mul(s2, inv));
    const i3 = roundI32(f32x4.mul(s3, inv));
    const i4 = roundI32(f32x4.mul(s4, inv));
    const i5 = roundI32(f32x4.mul(s5, inv));
    const i6 = roundI32(f32x4.mul(s6, inv));
    const i7 = roundI32(f32x4.mul(s7, inv));
    const o = tile + ST + (<usize>(g & 3) << 6);
    v128.store(o, i16x8.narrow_i32x4_s(i0, i1));
    v128.store(o, i16x8.narrow_i32x4_s(i2, i3), 16);
    v128.store(o, i16x8.narrow_i32x4_s(i4, i5), 32);
    v128.store(o, i16x8.narrow_i32x4_s(i6, i7), 48);
    // Pair p of row g goes to SI + (g >> 2) * 256 + p * 16 + (g & 3) * 4: one load holds a pair for four rows.
    if ((g & 3) == 3 || g == Gc - 1) transposeRows(tile + ST, tile + SI + (<usize>(g >> 2) << 8));
    if (Q4) {
      // Levels are read unsigned (0..15): sum si * (l - 8) = sum si * l - 8 * sum si; the dot starts from the second term.
      let s = i32x4.add(i32x4.add(i32x4.add(i0, i1), i32x4.add(i2, i3)), i32x4.add(i32x4.add(i4, i5), i32x4.add(i6, i7)));
      s = i32x4.add(s, i32x4.shuffle(s, s, 2, 3, 0, 1));
      s = i32x4.add(s, i32x4.shuffle(s, s, 1, 0, 3, 2));
      store<i32>(tile + CO + (<usize>g << 2), -8 * i32x4.extract_lane(s, 0));
    }
  }
}

/** a + dot(x, w): 8 multiply-adds into 4 i32 lanes. */
@inline function dotAdd(a: v128, x: v128, w: v128): v128 {
  return i32x4.add(a, i32x4.dot_i16x8_s(x, w));
}

/** acc[o..o+8) += f32(a | b) * scale (the sums are exact integers; one rounding each). */
@inline function flush(a: v128, b: v128, scale: v128, o: usize): void {
  v128.store(o, f32x4.add(v128.load(o), f32x4.mul(f32x4.convert_i32x4_s(a), scale)));
  v128.store(o, f32x4.add(v128.load(o, 16), f32x4.mul(f32x4.convert_i32x4_s(b), scale)), 16);
}

/** The end of a quarter for one row: q4_0 corrections (see quarter), then acc += sums * scale. */
@inline function finish(Q4: bool, q: i32, a: v128, b: v128, co: usize, hs: usize, sc: usize, o: usize): void {
  if (Q4 && q >= 2) {
    // 16 * sum si * level, kept for the whole-byte quarter; minus 16 * 8 * sum si, back to exact sums.
    v128.store(hs, a);
    v128.store(hs, b, 16);
    const c = i32x4.splat(load<i32>(co) << 4);
    a = i32x4.shr_s(i32x4.add(a, c), 4);
    b = i32x4.shr_s(i32x4.add(b, c), 4);
  } else if (Q4) {
    // Whole bytes gave sum si * (lo + 16 hi) - 8 * sum si; the high quarter's sums remove the 16 hi part.
    a = i32x4.sub(a, v128.load(hs));
    b = i32x4.sub(b, v128.load(hs, 16));
  }
  flush(a, b, v128.load32_splat(sc), o);
}

/**
 * Quarter q (8 channels, a constant) of one (sub-block, block) for R rows (1..4, a constant): token pairs stream
 * past 2R i32x4 accumulators. q8_0: bytes 8q..8q+7. q4_0: quarters 2, 3 are the high nibbles of bytes 0..7 / 8..15
 * (read as 16 * level: one and, no shift) and run first; quarters 0, 1 then read those bytes whole (no mask) and
 * subtract the high part at the end. Levels are unsigned (0..15); the -8 enters as -8 * sum si (co).
 * No i32 overflow: a lane sums 32 products |si| * |x| with |si| <= 32767 and |x| <= 128 (q8_0, -128 included):
 * 134,213,632; q4_0 whole bytes |x| <= 255 plus |co| <= 8 * 32 * 32767: 32 * 32767 * (255 + 8) = 275,763,072;
 * high quarters 16 * level <= 240: smaller. All < 2^31 = 2,147,483,648, so the sums are exact; the final q4_0
 * sums (|.| <= 8 * 32 * 32767 < 2^24) convert to f32 exactly, q8_0 ones with one rounding (2^-24 relative).
 */
@inline function quarter(Q4: bool, R: i32, q: i32, vb: usize, rb: usize, np: i32, si: usize, co: usize, sc: usize, hs: usize, o: usize, rowB: usize): void {
  const off: usize = Q4 ? 2 + (<usize>(q & 1) << 3) : 2 + (<usize>q << 3);
  const high = Q4 && q >= 2;
  const c0 = i32x4.splat(Q4 && !high ? load<i32>(co) : 0);
  let a0 = c0;
  let a1 = c0;
  let a2 = i32x4.splat(0);
  let a3 = i32x4.splat(0);
  let a4 = i32x4.splat(0);
  let a5 = i32x4.splat(0);
  let a6 = i32x4.splat(0);
  let a7 = i32x4.splat(0);
  if (R > 1) { a2 = i32x4.splat(Q4 && !high ? load<i32>(co, 4) : 0); a3 = a2; }
  if (R > 2) { a4 = i32x4.splat(Q4 && !high ? load<i32>(co, 8) : 0); a5 = a4; }
  if (R > 3) { a6 = i32x4.splat(Q4 && !high ? load<i32>(co, 12) : 0); a7 = a6; }
  let r = vb + off;
  let sp = si;
  const rb2 = rb << 1;
  for (let p = 0; p < np; p++) {
    let x = Q4 ? v128.load8x8_u(r) : v128.load8x8_s(r);
    let y = Q4 ? v128.load8x8_u(r + rb) : v128.load8x8_s(r + rb);
    if (high) {
      x = v128.and(x, i16x8.splat(0x00f0));
      y = v128.and(y, i16x8.splat(0x00f0));
    }
    // [x_t,c, x_t+1,c] i16 pairs: one dot against the splat (si_t, si_t+1) is 8 multiply-adds.
    const lo = i16x8.shuffle(x, y, 0, 8, 1, 9, 2, 10, 3, 11);
    const hi = i16x8.shuffle(x, y, 4, 12, 5, 13, 6, 14, 7, 15);
    if (R == 4) {
      // One load, then a lane splat per row: a pure op V8 schedules next to its use. Four load32_splat would all
      // be issued first, and 4 splats + 8 accumulators + lo, hi spill an accumulator (measured ~10% slower).
      const wv = v128.load(sp);
      let w = i32x4.shuffle(wv, wv, 0, 0, 0, 0);
      a0 = dotAdd(a0, lo, w);
      a1 = dotAdd(a1, hi, w);
      if (R > 1) { w = i32x4.shuffle(wv, wv, 1, 1, 1, 1); a2 = dotAdd(a2, lo, w); a3 = dotAdd(a3, hi, w); }
      if (R > 2) { w = i32x4.shuffle(wv, wv, 2, 2, 2, 2); a4 = dotAdd(a4, lo, w); a5 = dotAdd(a5, hi, w); }
      if (R > 3) { w = i32x4.shuffle(wv, wv, 3, 3, 3, 3); a6 = dotAdd(a6, lo, w); a7 = dotAdd(a7, hi, w); }
    } else {
      // R <= 3: registers to spare, and a broadcast load is cheaper than load + shuffle.
      let w = v128.load32_splat(sp);
      a0 = dotAdd(a0, lo, w);
      a1 = dotAdd(a1, hi, w);
      if (R > 1) { w = v128.load32_splat(sp, 4); a2 = dotAdd(a2, lo, w); a3 = dotAdd(a3, hi, w); }
      if (R > 2) { w = v128.load32_splat(sp, 8); a4 = dotAdd(a4, lo, w); a5 = dotAdd(a5, hi, w); }
      if (R > 3) { w = v128.load32_splat(sp, 12); a6 = dotAdd(a6, lo, w); a7 = dotAdd(a7, hi, w); }
    }
    r += rb2;
    sp += 16;
  }
  finish(Q4, q, a0, a1, co, hs, sc, o);
  if (R > 1) finish(Q4, q, a2, a3, co + 4, hs + 32, sc + 4, o + rowB);
  if (R > 2) finish(Q4, q, a4, a5, co + 8, hs + 64, sc + 8, o + 2 * rowB);
  if (R > 3) finish(Q4, q, a6, a7, co + 12, hs + 96, sc + 12, o + 3 * rowB);
}

/**
 * R rows (1..4, a constant after inlining) against one (sub-block, block), quarter by quarter. vb: block b of the
 * sub-block's first token, rows rb apart, readable (zero-padded) up to an even token count; ab: acc of row g at
 * block b's first channel.
 */
@inline function pass(Q4: bool, R: i32, vb: usize, rb: usize, n: i32, tile: usize, g: i32, ab: usize, rowB: usize): void {
  const sc = tile + SC + (<usize>g << 2);
  // Rows with amax == 0 (masked or zero weights, zero V scales) add nothing: skip when all R do.
  let live = load<u32>(sc);
  if (R > 1) live |= load<u32>(sc, 4);
  if (R > 2) live |= load<u32>(sc, 8);
  if (R > 3) live |= load<u32>(sc, 12);
  if (live == 0) return;
  const si = tile + SI + (<usize>(g >> 2) << 8);
  const co = tile + CO + (<usize>g << 2);
  const hs = tile + HS;
  const np = (n + 1) >> 1;
  if (Q4) {
    quarter(Q4, R, 2, vb, rb, np, si, co, sc, hs, ab + 64, rowB);
    quarter(Q4, R, 0, vb, rb, np, si, co, sc, hs, ab, rowB);
    quarter(Q4, R, 3, vb, rb, np, si, co, sc, hs, ab + 96, rowB);
    quarter(Q4, R, 1, vb, rb, np, si, co, sc, hs, ab + 32, rowB);
  } else {
    quarter(Q4, R, 0, vb, rb, np, si, co, sc, hs, ab, rowB);
    quarter(Q4, R, 1, vb, rb, np, si, co, sc, hs, ab + 32, rowB);
    quarter(Q4, R, 2, vb, rb, np, si, co, sc, hs, ab + 64, rowB);
    quarter(Q4, R, 3, vb, rb, np, si, co, sc, hs, ab + 96, rowB);
  }
}

/** A partial sub-block's block b (n tokens, rows rb apart) -> tile rows BB apart, zero rows up to a multiple of 4 tokens. */
@inline function copyPartial(Q4: bool, vb: usize, rb: usize, n: i32, dst: usize): void {
  const BB: usize = Q4 ? 18 : 34;
  const n4 = (n + 3) & ~3;
  for (let t = 0; t < n4; t++) {
    const o = dst + <usize>t * BB;
    if (t < n) {
      const p = vb + <usize>t * rb;
      v128.store(o, v128.load(p));
      if (!Q4) v128.store(o, v128.load(p, 16), 16);
      store<u16>(o + BB - 2, load<u16>(p + BB - 2));
    } else {
      v128.store(o, i32x4.splat(0));
      if (!Q4) v128.store(o, i32x4.splat(0), 16);
      store<u16>(o + BB - 2, 0);
    }
  }
}

@inline function accumW16(Q4: bool, w: usize, wStride: i32, G: i32, D: i32, v: usize, T: i32, acc: usize, tile: usize): void {
  const BB: usize = Q4 ? 18 : 34;
  const nb = D / QK;
  const rb = <usize>nb * BB;
  const rowB = <usize>D << 2;
  for (let g0 = 0; g0 < G; g0 += ROWS) {
    const Gc = min(ROWS, G - g0);
    const G4 = Gc & ~3;
    const rest = Gc - G4;
    const wc = w + ((<usize>g0 * wStride) << 2);
    const ac = acc + <usize>g0 * rowB;
    for (let t0 = 0; t0 < T; t0 += SUB) {
      const n = min(SUB, T - t0);
      const vs = v + <usize>t0 * rb;
      for (let ib = 0; ib < nb; ib++) {
        const vb = vs + <usize>ib * BB;
        gatherScales(vb, rb, n, tile + DS);
        prepRows(Q4, wc + (<usize>t0 << 2), wStride, Gc, n, tile);
        // Full sub-blocks are read in place; a partial one from a zero-padded copy (nothing past T is read).
        let x = vb;
        let xs = rb;
        if (n < SUB) {
          copyPartial(Q4, vb, rb, n, tile + VT);
          x = tile + VT;
          xs = BB;
        }
        const ab = ac + (<usize>ib << 7);
        for (let g = 0; g < G4; g += 4) pass(Q4, 4, x, xs, n, tile, g, ab + <usize>g * rowB, rowB);
        const ag = ab + <usize>G4 * rowB;
        if (rest == 3) pass(Q4, 3, x, xs, n, tile, G4, ag, rowB);
        else if (rest == 2) pass(Q4, 2, x, xs, n, tile, G4, ag, rowB);
        else if (rest == 1) pass(Q4, 1, x, xs, n, tile, G4, ag, rowB);
      }
    }
  }
}

/** q4_0 V: acc [G, D] f32 += w [G, wStride] f32 (first T columns) times T rows of q4_0 blocks at v; see the top. */
export function q4_0_accum_w16(w: usize, wStride: i32, G: i32, D: i32, v: usize, T: i32, acc: usize, tile: usize): void {
  accumW16(true, w, wStride, G, D, v, T, acc, tile);
}

/** q8_0 V: acc [G, D] f32 += w [G, wStride] f32 (first T columns) times T rows of q8_0 blocks at v; see the top. */
export function q8_0_accum_w16(w: usize, wStride: i32, G: i32, D: i32, v: usize, T: i32, acc: usize, tile: usize): void {
  accumW16(false, w, wStride, G, D, v, T, acc, tile);
}
