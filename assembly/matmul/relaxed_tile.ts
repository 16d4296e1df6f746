// Relaxed-SIMD prefill tiles (built only with --enable relaxed-simd; ASC_FEATURE_RELAXED_SIMD): the integer
// block dots of tile_q8.ts tile32 by i16x8.relaxed_dot_i8x16_i7x16_s, 16 multiply-adds per instruction
// against 8 for i32x4.dot_i16x8_s. One operand must lie in 0..127, so weights enter as small unsigned
// values b = q + off: the dot of 8 such 4-column groups stays in i16 (|x| <= 127, b <= 15: 8 * 2 * 15 * 127
// = 30480 < 2^15; b <= 31 keeps 4) and one extadd widens it per block; q . x = b . x - off * sum x, with
// the activation sums packActQ8 already keeps. q4_K / q5_K: per 32-value sub-block the same dots times its
// integer scale, I = sum_j sc_j (q . x)_j as tileK forms it. The float steps are tile32's / tileK's, in their
// order, so outputs are bit-identical to the baseline tiles and to the one-token kernels (batch invariance).
// 8-bit weights (q8_0, iq4_nl) have none: splitting q = 16 * hi + lo into two such dots measured 1.43-1.70x
// the baseline tiles' time (bench/relaxed-ab.ts, [2048, 768], n 64-128; Node 20's V8 lowers the dots to
// pmaddubsw, no VNNI), and the i32 form (i32x4.relaxed_dot_i8x16_i7x16_add_s) ran 0.38 ns per 16
// multiply-adds against 0.15 ns per 8 for dot_i16x8_s + add: no faster per multiply-add.
import { fileTypeOf, T_Q4_0, T_Q4_0X4, T_Q4_1, T_Q4_K, T_Q4_KX4, T_Q5_0, T_Q5_1, T_Q5_K } from './decode';
import { kMins, kStep } from './tile_q8';
import { decodeStrip, stDD, stMn, stSc, storeTile } from './tile_strip';

/** The weight offset that puts a type's decoded values in 0..15 (q4*) or 0..31 (q5*, wide32); -1: no relaxed tile for the type. */
@inline function offsetOf(layout: i32): i32 {
  const type = fileTypeOf(layout);
  if (type == T_Q4_0 || type == T_Q4_0X4) return 8;
  if (type == T_Q5_0) return 16;
  if (type == T_Q4_1 || type == T_Q5_1 || type == T_Q4_K || type == T_Q4_KX4 || type == T_Q5_K) return 0;
  return -1;
}

/** Whether matmulQ8Relaxed takes this type (the table's relaxed rows; the matmul gate checks they agree). */
export function relaxedTileType(type: i32): i32 {
  if (!ASC_FEATURE_RELAXED_SIMD) return 0;
  return offsetOf(type) >= 0 ? 1 : 0;
}

/**
 * Activations of packActQ8 (int16 quads, qb = 32) -> int8 per quad and 4 columns: xb [nq][cols/4][4 tokens][4]
 * i8 (16 bytes per 4-column group; the values are int8 already, so this only narrows and reorders).
 */
export function narrowActQ8(xq: usize, n: i32, cols: i32, xb: usize): void {
  const nq = <usize>((n + 3) >> 2);
  const quads = nq * (<usize>cols >> 2);
  for (let i: usize = 0; i < quads; i++) {
    // Pairs (c, c+1) and (c+2, c+3) of tokens 0..3 -> token 0's c..c+3, token 1's, ...
    const v = i8x16.narrow_i16x8_s(v128.load(xq + (i << 5)), v128.load(xq + (i << 5), 16));
    v128.store(xb + (i << 4), i8x16.shuffle(v, v, 0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15));
  }
}

/**
 * matmulQ8Tiled (tile_q8.ts) for the types relaxedTileType takes, with activations of packActQ8 (qb 32)
 * narrowed by narrowActQ8 into xb; xd, xs as packActQ8 left them. Same outputs, bit for bit.
 */
export function matmulQ8Relaxed(type: i32, w: usize, rowBytes: i32, rows: i32, cols: i32, xb: usize, xd: usize, xs: usize, n: i32, y: usize, yStride: i32, scratch: usize): void {
  if (!ASC_FEATURE_RELAXED_SIMD) unreachable();
  const off = offsetOf(type);
  for (let r0 = 0; r0 < rows; r0 += 4) {
    const nr = min(4, rows - r0);
    const hasMin = decodeStrip(true, off, type, w, rowBytes, r0, nr, cols, scratch);
    const yr = y + (<usize>r0 << 2);
    // One instance per (kind, width, mins) so each inlines its branches away.
    if (type == T_Q5_K) tiles(true, true, false, 0, scratch, cols, xb, xd, xs, n, yr, yStride, nr);
    else if (type == T_Q4_K || type == T_Q4_KX4) tiles(true, false, false, 0, scratch, cols, xb, xd, xs, n, yr, yStride, nr);
    else if (fileTypeOf(type) == T_Q5_0 || fileTypeOf(type) == T_Q5_1) tiles(false, true, hasMin, off, scratch, cols, xb, xd, xs, n, yr, yStride, nr);
    else tiles(false, false, hasMin, off, scratch, cols, xb, xd, xs, n, yr, yStride, nr);
  }
}

/** Every token quad of one decoded strip: two quads per tile, a last odd quad alone. */
@inline function tiles(kq: bool, wide32: bool, mins: bool, off: i32, B: usize, cols: i32, xb: usize, xd: usize, xs: usize, n: i32, y: usize, yStride: i32, nr: i32): void {
  const nq = (n + 3) >> 2;
  let q = 0;
  for (; q + 2 <= nq; q += 2) tileRelaxed(kq, wide32, mins, off, B, cols, xb, xd, xs, q, true, n, y, yStride, nr);
  if (q < nq) tileRelaxed(kq, wide32, mins, off, B, cols, xb, xd, xs, q, false, n, y, yStride, nr);
}

/** b . x over 4 columns at c of one row (splatted) and one quad's tokens, added to an i16 accumulator. */
@inline function dot4(acc: v128, x: v128, brow: usize, c: usize): v128 {
  // A baseline build compiles no relaxed instruction (and never runs these kernels: relaxedTileType is 0).
  if (ASC_FEATURE_RELAXED_SIMD) return i16x8.add(acc, i16x8.relaxed_dot_i8x16_i7x16_s(x, v128.load32_splat(brow + c)));
  return acc;
}

/** log2 of a nonzero offset (8 or 16), 0 for none. */
@inline function offShift(off: i32): i32 {
  return off == 16 ? 4 : off == 8 ? 3 : 0;
}

/** The integer block dot q . x per token lane: the i16 sums widened (wide32: both halves), minus os = off * sum x. */
@inline function blockDot(wide32: bool, lo: v128, hi: v128, off: i32, os: v128): v128 {
  const e = i32x4.extadd_pairwise_i16x8_s(lo);
  const d = wide32 ? i32x4.add(e, i32x4.extadd_pairwise_i16x8_s(hi)) : e;
  return off ? i32x4.sub(d, os) : d;
}

/**
 * One tile: 4 rows x token quads q (and q + 1 when `two`). Per 32 values the i16 dots of its first 16
 * columns, then of its second 16 (wide32, values up to 31: each half widened on its own); then 32-value block
 * types: tile32's float step (q . x = b . x - off * sum x; mins: + m * dx * sum x), q4_K / q5_K (kq): the
 * integer I += sc_j (q . x)_j per 32, and tileK's kMins / kStep per 256.
 */
@inline function tileRelaxed(kq: bool, wide32: bool, mins: bool, off: i32, B: usize, cols: i32, xb: usize, xd: usize, xs: usize, q: i32, two: bool, n: i32, y: usize, yStride: i32, nr: i32): void {
  const SC = stSc(B, cols);
  const MN = stMn(B, cols);
  const DD = stDD(B, cols);
  const ng = <usize>(cols >> 4);
  const bRow = <usize>cols << 1;
  const gRow = ng << 2;
  const dRow = <usize>(cols >> 8) << 3;
  const quadB = <usize>cols << 2;
  const quadG = ng << 4;
  const xa = xb + <usize>q * quadB;
  const xc = xa + quadB;
  const da = xd + <usize>q * quadG;
  const db = da + quadG;
  const sa = xs + <usize>q * quadG;
  const sb = sa + quadG;
  const B1 = B + bRow;
  const B2 = B1 + bRow;
  const B3 = B2 + bRow;
  let f0 = f32x4.splat(0), f1 = f32x4.splat(0), f2 = f32x4.splat(0), f3 = f32x4.splat(0);
  let h0 = f32x4.splat(0), h1 = f32x4.splat(0), h2 = f32x4.splat(0), h3 = f32x4.splat(0);
  // kq: the integer sums I (quad q) and J (quad q + 1) of the current 256 values.
  let I0 = i32x4.splat(0), I1 = i32x4.splat(0), I2 = i32x4.splat(0), I3 = i32x4.splat(0);
  let J0 = i32x4.splat(0), J1 = i32x4.splat(0), J2 = i32x4.splat(0), J3 = i32x4.splat(0);
  for (let g: usize = 0; g < ng; g += 2) {
    let a0 = i16x8.splat(0), a1 = i16x8.splat(0), a2 = i16x8.splat(0), a3 = i16x8.splat(0);
    let b0 = i16x8.splat(0), b1 = i16x8.splat(0), b2 = i16x8.splat(0), b3 = i16x8.splat(0);
    let A0 = i16x8.splat(0), A1 = i16x8.splat(0), A2 = i16x8.splat(0), A3 = i16x8.splat(0);
    let C0 = i16x8.splat(0), C1 = i16x8.splat(0), C2 = i16x8.splat(0), C3 = i16x8.splat(0);
    const c0 = g << 4;
    // Two copies of the 16-column loop on purpose: one loop over both halves with the wide32 hand-over
    // between them measured 1.04-1.13x this time for q5_0 / q5_K (bench/relaxed-ab.ts, [2048, 768], n 128).
    for (let c = c0; c < c0 + 16; c += 4) {
      const xv = v128.load(xa + (c << 2));
      a0 = dot4(a0, xv, B, c);
      a1 = dot4(a1, xv, B1, c);
      a2 = dot4(a2, xv, B2, c);
      a3 = dot4(a3, xv, B3, c);
      if (two) {
        const xw = v128.load(xc + (c << 2));
        b0 = dot4(b0, xw, B, c);
        b1 = dot4(b1, xw, B1, c);
        b2 = dot4(b2, xw, B2, c);
        b3 = dot4(b3, xw, B3, c);
      }
    }
    if (wide32) {
      A0 = a0;
      A1 = a1;
      A2 = a2;
      A3 = a3;
      a0 = a1 = a2 = a3 = i16x8.splat(0);
      C0 = b0;
      C1 = b1;
      C2 = b2;
      C3 = b3;
      b0 = b1 = b2 = b3 = i16x8.splat(0);
    }
    for (let c = c0 + 16; c < c0 + 32; c += 4) {
      const xv = v128.load(xa + (c << 2));
      a0 = dot4(a0, xv, B, c);
      a1 = dot4(a1, xv, B1, c);
      a2 = dot4(a2, xv, B2, c);
      a3 = dot4(a3, xv, B3, c);
      if (two) {
        const xw = v128.load(xc + (c << 2));
        b0 = dot4(b0, xw, B, c);
        b1 = dot4(b1, xw, B1, c);
        b2 = dot4(b2, xw, B2, c);
        b3 = dot4(b3, xw, B3, c);
      }
    }
    if (kq) {
      // Sub-block j = (g / 2) % 8 of 256-value block g / 16: its integer scale, then per 256 the float step.
      const so = g << 1;
      const s0 = i32x4.splat(load<i32>(SC + so));
      const s1 = i32x4.splat(load<i32>(SC + gRow + so));
      const s2 = i32x4.splat(load<i32>(SC + 2 * gRow + so));
      const s3 = i32x4.splat(load<i32>(SC + 3 * gRow + so));
      I0 = i32x4.add(I0, i32x4.mul(blockDot(wide32, a0, A0, 0, I0), s0));
      I1 = i32x4.add(I1, i32x4.mul(blockDot(wide32, a1, A1, 0, I1), s1));
      I2 = i32x4.add(I2, i32x4.mul(blockDot(wide32, a2, A2, 0, I2), s2));
      I3 = i32x4.add(I3, i32x4.mul(blockDot(wide32, a3, A3, 0, I3), s3));
      if (two) {
        J0 = i32x4.add(J0, i32x4.mul(blockDot(wide32, b0, C0, 0, J0), s0));
        J1 = i32x4.add(J1, i32x4.mul(blockDot(wide32, b1, C1, 0, J1), s1));
        J2 = i32x4.add(J2, i32x4.mul(blockDot(wide32, b2, C2, 0, J2), s2));
        J3 = i32x4.add(J3, i32x4.mul(blockDot(wide32, b3, C3, 0, J3), s3));
      }
      if ((g & 15) == 14) {
        const kb = g >> 4;
        const bo = kb << 3;
        const dA = v128.load(da + (kb << 8));
        f0 = kStep(false, f0, I0, kMins(false, MN, kb, sa), DD + bo, dA);
        f1 = kStep(false, f1, I1, kMins(false, MN + gRow, kb, sa), DD + dRow + bo, dA);
        f2 = kStep(false, f2, I2, kMins(false, MN + 2 * gRow, kb, sa), DD + 2 * dRow + bo, dA);
        f3 = kStep(false, f3, I3, kMins(false, MN + 3 * gRow, kb, sa), DD + 3 * dRow + bo, dA);
        I0 = I1 = I2 = I3 = i32x4.splat(0);
        if (two) {
          const dB = v128.load(db + (kb << 8));
          h0 = kStep(false, h0, J0, kMins(false, MN, kb, sb), DD + bo, dB);
          h1 = kStep(false, h1, J1, kMins(false, MN + gRow, kb, sb), DD + dRow + bo, dB);
          h2 = kStep(false, h2, J2, kMins(false, MN + 2 * gRow, kb, sb), DD + 2 * dRow + bo, dB);
          h3 = kStep(false, h3, J3, kMins(false, MN + 3 * gRow, kb, sb), DD + 3 * dRow + bo, dB);
          J0 = J1 = J2 = J3 = i32x4.splat(0);
        }
      }
      continue;
    }
    const go = g << 2;
    const dA = v128.load(da + (g << 4));
    const SA = i32x4.add(v128.load(sa + (g << 4)), v128.load(sa + (g << 4), 16));
    const OA = i32x4.shl(SA, offShift(off));
    const s0 = v128.load32_splat(SC + go);
    const s1 = v128.load32_splat(SC + gRow + go);
    const s2 = v128.load32_splat(SC + 2 * gRow + go);
    const s3 = v128.load32_splat(SC + 3 * gRow + go);
    f0 = f32x4.add(f0, f32x4.mul(f32x4.convert_i32x4_s(blockDot(wide32, a0, A0, off, OA)), f32x4.mul(s0, dA)));
    f1 = f32x4.add(f1, f32x4.mul(f32x4.convert_i32x4_s(blockDot(wide32, a1, A1, off, OA)), f32x4.mul(s1, dA)));
    f2 = f32x4.add(f2, f32x4.mul(f32x4.convert_i32x4_s(blockDot(wide32, a2, A2, off, OA)), f32x4.mul(s2, dA)));
    f3 = f32x4.add(f3, f32x4.mul(f32x4.convert_i32x4_s(blockDot(wide32, a3, A3, off, OA)), f32x4.mul(s3, dA)));
    let dB = dA;
    let SB = SA;
    let OB = OA;
    if (two) {
      dB = v128.load(db + (g << 4));
      SB = i32x4.add(v128.load(sb + (g << 4)), v128.load(sb + (g << 4), 16));
      OB = i32x4.shl(SB, offShift(off));
      h0 = f32x4.add(h0, f32x4.mul(f32x4.convert_i32x4_s(blockDot(wide32, b0, C0, off, OB)), f32x4.mul(s0, dB)));
      h1 = f32x4.add(h1, f32x4.mul(f32x4.convert_i32x4_s(blockDot(wide32, b1, C1, off, OB)), f32x4.mul(s1, dB)));
      h2 = f32x4.add(h2, f32x4.mul(f32x4.convert_i32x4_s(blockDot(wide32, b2, C2, off, OB)), f32x4.mul(s2, dB)));
      h3 = f32x4.add(h3, f32x4.mul(f32x4.convert_i32x4_s(blockDot(wide32, b3, C3, off, OB)), f32x4.mul(s3, dB)));
    }
    if (mins) {
      // + m * (dx * sum of the block's 32 quantized x), as tile32.
      const m0 = v128.load32_splat(MN + go);
      const m1 = v128.load32_splat(MN + gRow + go);
      const m2 = v128.load32_splat(MN + 2 * gRow + go);
      const m3 = v128.load32_splat(MN + 3 * gRow + go);
      const xA = f32x4.mul(dA, f32x4.convert_i32x4_s(SA));
      f0 = f32x4.add(f0, f32x4.mul(m0, xA));
      f1 = f32x4.add(f1, f32x4.mul(m1, xA));
      f2 = f32x4.add(f2, f32x4.mul(m2, xA));
      f3 = f32x4.add(f3, f32x4.mul(m3, xA));
      if (two) {
        const xB = f32x4.mul(dB, f32x4.convert_i32x4_s(SB));
        h0 = f32x4.add(h0, f32x4.mul(m0, xB));
        h1 = f32x4.add(h1, f32x4.mul(m1, xB));
        h2 = f32x4.add(h2, f32x4.mul(m2, xB));
        h3 = f32x4.add(h3, f32x4.mul(m3, xB));
      }
    }
  }
  storeTile(f0, f1, f2, f3, y, yStride, q << 2, n, nr);
  if (two) storeTile(h0, h1, h2, h3, y, yStride, (q + 1) << 2, n, nr);
}

/**
 * The load-time self-test's instruction check, for n pairs of 16-byte vectors a (i8) and b (0..127) at a and
 * b, into out [n][3] v128: the running sum over j <= i of i16x8.relaxed_dot_i8x16_i7x16_s(a_j, b_j) (as the
 * kernels accumulate, wrapping), the running i32x4.relaxed_dot_i8x16_i7x16_add_s(a_j, b_j, acc) from acc =
 * splat(n), and the i32 dot of pair i alone (acc zero: the form V8 11.3's Liftoff doubles). The caller
 * compares them with exact integers.
 */
export function relaxedDotCheck(a: usize, b: usize, n: i32, out: usize): void {
  if (ASC_FEATURE_RELAXED_SIMD) {
    let s16 = i16x8.splat(0);
    let s32 = i32x4.splat(n);
    for (let i: usize = 0; i < <usize>n; i++) {
      const o = out + i * 48;
      s16 = i16x8.add(s16, i16x8.relaxed_dot_i8x16_i7x16_s(v128.load(a + (i << 4)), v128.load(b + (i << 4))));
      s32 = i32x4.relaxed_dot_i8x16_i7x16_add_s(v128.load(a + (i << 4)), v128.load(b + (i << 4)), s32);
      v128.store(o, s16);
      v128.store(o, s32, 16);
      v128.store(o, i32x4.relaxed_dot_i8x16_i7x16_add_s(v128.load(a + (i << 4)), v128.load(b + (i << 4)), i32x4.splat(0)), 32);
    }
  } else unreachable();
}
