// q4_K rows repacked at load four at a time (T_Q4_KX4; src/kernels/matmul/interleave.ts defines the layout):
// per 256-value block a group's 576 bytes hold the four rows' f16 d (8 B), their f16 dmin (8 B), their scale
// words A, B, C (16 B each: word w of rows 0..3), then 32 vectors, vector k holding qs bytes 4k..4k+3 of rows
// 0..3. As in vec_q4x4.ts, one relaxed dot against a 4-byte broadcast of x leaves each row in its own lane;
// the 6-bit scales and mins of four rows unpack in one pass of vector ops. Per block the integers I and M and
// the float steps after them are vec_qk_relaxed.ts rowQKRelaxed's, so the bits are q4_K's file layout's.
import { halfToFloat4Exact } from '../shared/common';
import { groupHalvesFinite, storeWordsByRow } from './group4';

/** Bytes of one block of a group: four rows of 144. */
const GROUP_BLOCK: usize = 576;
/** Where the qs vectors start in a group block. */
const QS: usize = 64;

/**
 * Repacks `rows` (% 4 == 0) q4_K rows at w (rowBytes = 144 * blocks apart) into q4_Kx4 in place, one group at
 * a time through tmp [4 * rowBytes].
 */
export function repackQ4Kx4(w: usize, rowBytes: i32, rows: i32, tmp: usize): void {
  const rb = <usize>rowBytes;
  const nb = rb / 144;
  for (let g = 0; g < rows; g += 4) {
    const gp = w + <usize>g * rb;
    memory.copy(tmp, gp, rb << 2);
    for (let b: usize = 0; b < nb; b++) {
      const o = gp + b * GROUP_BLOCK;
      const s0 = tmp + b * 144, s1 = s0 + rb, s2 = s1 + rb, s3 = s2 + rb;
      // Each row's first 16 bytes are the words (d | dmin), A, B, C: by row, then (d | dmin) split to d's, dmins.
      storeWordsByRow(v128.load(s0), v128.load(s1), v128.load(s2), v128.load(s3), o);
      const dd = v128.load(o);
      v128.store(o, i16x8.shuffle(dd, dd, 0, 2, 4, 6, 1, 3, 5, 7));
      for (let c: usize = 16; c < 144; c += 16) storeWordsByRow(v128.load(s0 + c), v128.load(s1 + c), v128.load(s2 + c), v128.load(s3 + c), o + QS + ((c - 16) << 2));
    }
  }
}

/** 1 when every f16 d and dmin in `bytes` of q4_Kx4 groups at w is finite (vec.ts vecScalesFinite for this layout). */
export function q4Kx4ScalesFinite(w: usize, bytes: usize): i32 {
  return groupHalvesFinite(w, bytes, GROUP_BLOCK, true);
}

/**
 * A quarter of a sub-block pair: the 2 x 16 qs bytes at q . x at xe (int8), the low nibbles against xe (sub-block
 * 2c) times its scales sa, the high against xe + 32 (2c + 1) times sb (scalePairs), each row's sum in its i32
 * lane. Each i16 lane sums 4 products of at most 15 * 127 before the scales widen it.
 */
@inline function quarterPair(q: usize, xe: usize, m: v128, sa: v128, sb: v128): v128 {
  if (!ASC_FEATURE_RELAXED_SIMD) return v128.splat<i32>(0);
  const v0 = v128.load(q), v1 = v128.load(q, 16);
  const lo = i16x8.add(i16x8.relaxed_dot_i8x16_i7x16_s(v128.load32_splat(xe), v128.and(v0, m)), i16x8.relaxed_dot_i8x16_i7x16_s(v128.load32_splat(xe, 4), v128.and(v1, m)));
  const hi = i16x8.add(
    i16x8.relaxed_dot_i8x16_i7x16_s(v128.load32_splat(xe, 32), v128.and(i16x8.shr_u(v0, 4), m)),
    i16x8.relaxed_dot_i8x16_i7x16_s(v128.load32_splat(xe, 36), v128.and(i16x8.shr_u(v1, 4), m)),
  );
  return i32x4.add(i32x4.dot_i16x8_s(lo, sa), i32x4.dot_i16x8_s(hi, sb));
}

/** Byte k of each row's word in s (values 0..63) as i16 pairs, row r's in lanes 2r and 2r + 1 (shifts only: V8 rebuilds a mask constant per use). */
@inline function scalePairs(s: v128, k: i32): v128 {
  const v = i32x4.shr_u(i32x4.shl(s, 24 - 8 * k), 24);
  return v128.or(v, i32x4.shl(v, 16));
}

/**
 * ik plus sub-block pair c's I terms (scales: bytes k, k + 1 of s), a quarter at a time. Each quarter's sum is
 * stored to yg, this group's output (overwritten at its end): the store keeps the next quarter's loads after this
 * quarter's arithmetic, where V8 issues all 24 loads of a pair first and spills ~60 vectors. bench/matmul-ab.ts,
 * one thread, n 1, [2048, 768] to [14336, 4096]: a store per half pair took 0.58-0.73x the time of none, then
 * pairs unrolled with scales by shifts 0.86-0.91x, a store per quarter 0.95-0.98x, quarters unrolled 0.85-0.90x;
 * the whole against q4_K's file layout 0.46-0.58x (17-18 GB/s warm and cold).
 */
@inline function pairStep(ik: v128, q: usize, xc: usize, m: v128, s: v128, k: i32, yg: usize): v128 {
  const sa = scalePairs(s, k), sb = scalePairs(s, k + 1);
  let t = i32x4.add(ik, quarterPair(q, xc, m, sa, sb));
  v128.store(yg, t);
  t = i32x4.add(t, quarterPair(q + 32, xc + 8, m, sa, sb));
  v128.store(yg, t);
  t = i32x4.add(t, quarterPair(q + 64, xc + 16, m, sa, sb));
  v128.store(yg, t);
  t = i32x4.add(t, quarterPair(q + 96, xc + 24, m, sa, sb));
  v128.store(yg, t);
  return t;
}

/**
 * y[r] = W[r] . x for `rows` (% 4 == 0) q4_Kx4 rows at w (rowBytes per row, 4 * rowBytes per group), x
 * packed by vec_qk_relaxed.ts packActQKRelaxed. Per block and row: acc += f32(I) * (d * dx) - f32(M) *
 * (dmin * dx), I = sum_j sc_j (q . x)_j, M = sum_j m_j sum(x)_j: rowQKRelaxed's steps. Relaxed-SIMD builds only.
 */
export function matmulVecQ4Kx4(w: usize, rowBytes: i32, rows: i32, cols: i32, xq: usize, xd: usize, xs: usize, y: usize): void {
  if (!ASC_FEATURE_RELAXED_SIMD) unreachable();
  const nb = <usize>(cols >> 8);
  const m = i8x16.splat(0x0f);
  for (let g = 0; g < rows; g += 4) {
    let p = w + <usize>g * <usize>rowBytes;
    const yg = y + (<usize>g << 2);
    let acc = f32x4.splat(0);
    for (let b: usize = 0; b < nb; b++) {
      // vec_qk_relaxed.ts scalesMins for four rows at once, word w of the rows in one vector (A, B, C at 16, 32, 48).
      const lo6 = i32x4.splat(0x3f3f3f3f), lo4 = i32x4.splat(0x0f0f0f0f), top2 = i32x4.splat(0x03030303);
      const A = v128.load(p, 16), C = v128.load(p, 48);
      const scLo = v128.and(A, lo6);
      const scHi = v128.or(v128.and(C, lo4), i32x4.shl(v128.and(i32x4.shr_u(A, 6), top2), 4));
      // I: sub-block pairs (0, 1), (2, 3) from scLo's bytes, (4, 5), (6, 7) from scHi's.
      const x = xq + (b << 8);
      const q = p + QS;
      let ik = pairStep(i32x4.splat(0), q, x, m, scLo, 0, yg);
      ik = pairStep(ik, q + 128, x + 64, m, scLo, 2, yg);
      ik = pairStep(ik, q + 256, x + 128, m, scHi, 0, yg);
      ik = pairStep(ik, q + 384, x + 192, m, scHi, 2, yg);
      // M: each row's mins (bytes of mLo, mHi) against the 8 sub-block sums of x; lanes [r0, r0, r1, r1] / [r2, r2, r3, r3].
      // B and C loaded again here (L1 hits) rather than held across the pairs, which would take two registers.
      const B = v128.load(p, 32), C2 = v128.load(p, 48);
      const mLo = v128.and(B, lo6);
      const mHi = v128.or(v128.and(i32x4.shr_u(C2, 4), lo4), i32x4.shl(v128.and(i32x4.shr_u(B, 6), top2), 4));
      const X = v128.load(xs + (b << 4));
      const Xlo = i16x8.shuffle(X, X, 0, 1, 2, 3, 0, 1, 2, 3), Xhi = i16x8.shuffle(X, X, 4, 5, 6, 7, 4, 5, 6, 7);
      const P = i32x4.add(i32x4.dot_i16x8_s(i16x8.extend_low_i8x16_u(mLo), Xlo), i32x4.dot_i16x8_s(i16x8.extend_low_i8x16_u(mHi), Xhi));
      const Q = i32x4.add(i32x4.dot_i16x8_s(i16x8.extend_high_i8x16_u(mLo), Xlo), i32x4.dot_i16x8_s(i16x8.extend_high_i8x16_u(mHi), Xhi));
      const mk = i32x4.add(i32x4.shuffle(P, Q, 0, 2, 4, 6), i32x4.shuffle(P, Q, 1, 3, 5, 7));
      const dx = v128.load32_splat(xd + (b << 2));
      const d = f32x4.mul(halfToFloat4Exact(i32x4.extend_low_i16x8_u(v128.load64_zero(p))), dx);
      const dmin = f32x4.mul(halfToFloat4Exact(i32x4.extend_low_i16x8_u(v128.load64_zero(p + 8))), dx);
      acc = f32x4.add(acc, f32x4.sub(f32x4.mul(f32x4.convert_i32x4_s(ik), d), f32x4.mul(f32x4.convert_i32x4_s(mk), dmin)));
      p += GROUP_BLOCK;
    }
    v128.store(yg, acc);
  }
}
