// Tiled matrix-matrix products of quantized weights and int8 activations (prefill): 4 weight rows x 8
// tokens per tile. Lanes hold tokens, not columns: activations are stored per quad of 4 tokens,
// column-interleaved, so one splatted int16 weight pair multiplies four tokens at once and no horizontal sum
// is needed. Each strip of 4 rows is decoded once per call (int16 in scratch) and reused by every token.
// Batch invariance: every output gets the float operations of the type's one-token kernel
// (vec.ts), in the same order, so a token's row has the same bits in a batch of any size: per
// 32-value block (per 256 for K-quants) an exact integer dot, then the same float multiplies and adds.
import { T_Q6_K } from './decode';
import { decodeStrip, isKQuant, stDD, stMn, stSc, storeTile } from './tile_strip';
import { actInverse, actScale, round4 } from './act';
import { hsum4i } from '../shared/common';

/**
 * x [n, cols] f32 -> int8 values widened to i16, per quad of 4 tokens: xq [nq][cols/2][4 tokens][2] i16
 * (16 bytes per column pair), with one scale amax/127 per qb values (32 or 256; cols % qb == 0) stored per
 * 16 values in xd [nq][cols/16][4] f32 and each 16 quantized values' integer sum in xs [nq][cols/16][4] i32:
 * the min terms of q4_1 / q5_1 / K-quants then see the same x as the dots (with the sums of the exact x the
 * full matmul gate failed q4_1 / q5_1 by up to 1.8x of the bound), in the one-token kernels' integers.
 * Same rounding as packActVec (vec.ts). Tokens past n in the last quad are zeros. nq = ceil(n / 4).
 */
export function packActQ8(x: usize, n: i32, cols: i32, qb: i32, xq: usize, xd: usize, xs: usize): void {
  const ng = <usize>(cols >> 4);
  const quadQ = <usize>cols << 3;
  const quadG = ng << 4;
  const rowB = <usize>cols << 2;
  const nq = (n + 3) >> 2;
  const z = i32x4.splat(0);
  // A quad's 4 tokens at once, so each column pair's 4 tokens go out as one vector (a 4x4 transpose).
  for (let q = 0; q < nq; q++) {
    const m = n - (q << 2);
    const x0 = x + <usize>(q << 2) * rowB;
    const x1 = x0 + rowB;
    const x2 = x1 + rowB;
    const x3 = x2 + rowB;
    const qr = xq + <usize>q * quadQ;
    const dr = xd + <usize>q * quadG;
    const sr = xs + <usize>q * quadG;
    for (let b0: usize = 0; b0 < <usize>cols; b0 += <usize>qb) {
      // Tokens past n: scale 0, values 0.
      const d0 = actScale(x0 + (b0 << 2), <usize>qb);
      const d1: f32 = m > 1 ? actScale(x1 + (b0 << 2), <usize>qb) : 0;
      const d2: f32 = m > 2 ? actScale(x2 + (b0 << 2), <usize>qb) : 0;
      const d3: f32 = m > 3 ? actScale(x3 + (b0 << 2), <usize>qb) : 0;
      const id0 = actInverse(d0), id1 = actInverse(d1), id2 = actInverse(d2), id3 = actInverse(d3);
      const dv = f32x4(d0, d1, d2, d3);
      for (let c = b0; c < b0 + <usize>qb; c += 16) {
        const o = c << 2;
        // Per token the 16 values as int16: lo pairs 0..3, hi pairs 4..7.
        const l0 = q16(x0 + o, id0), h0 = q16(x0 + o + 32, id0);
        const l1 = m > 1 ? q16(x1 + o, id1) : z, h1 = m > 1 ? q16(x1 + o + 32, id1) : z;
        const l2 = m > 2 ? q16(x2 + o, id2) : z, h2 = m > 2 ? q16(x2 + o + 32, id2) : z;
        const l3 = m > 3 ? q16(x3 + o, id3) : z, h3 = m > 3 ? q16(x3 + o + 32, id3) : z;
        // Column pair c/2 + k of token t sits at 16*(c/2 + k) + 4*t.
        const qo = qr + (c << 3);
        transposeStore(l0, l1, l2, l3, qo);
        transposeStore(h0, h1, h2, h3, qo + 64);
        const g = c >> 4;
        v128.store(dr + (g << 4), dv);
        v128.store(sr + (g << 4), hsum4i(sum16(l0, h0), sum16(l1, h1), sum16(l2, h2), sum16(l3, h3)));
      }
    }
  }
}

/** 8 f32 values at p times id, rounded to nearest even, as int16 lanes (the packActVec rounding). */
@inline function q16(p: usize, id: v128): v128 {
  return i16x8.narrow_i32x4_s(round4(p, id), round4(p + 16, id));
}

/** The 16 int16 values of lo and hi summed per 4 lanes (i32; hsum4i adds the rest). */
@inline function sum16(lo: v128, hi: v128): v128 {
  return i32x4.add(i32x4.extadd_pairwise_i16x8_s(lo), i32x4.extadd_pairwise_i16x8_s(hi));
}

/** Four tokens' 4 column pairs (i32 lanes of a..d) -> at dst + 16k the 4 tokens' pair k. */
@inline function transposeStore(a: v128, b: v128, c: v128, d: v128, dst: usize): void {
  const t0 = i32x4.shuffle(a, b, 0, 4, 1, 5);
  const t1 = i32x4.shuffle(a, b, 2, 6, 3, 7);
  const t2 = i32x4.shuffle(c, d, 0, 4, 1, 5);
  const t3 = i32x4.shuffle(c, d, 2, 6, 3, 7);
  v128.store(dst, i32x4.shuffle(t0, t2, 0, 1, 4, 5));
  v128.store(dst, i32x4.shuffle(t0, t2, 2, 3, 6, 7), 16);
  v128.store(dst, i32x4.shuffle(t1, t3, 0, 1, 4, 5), 32);
  v128.store(dst, i32x4.shuffle(t1, t3, 2, 3, 6, 7), 48);
}

/**
 * Quantized weights x int8 activations (packActQ8 with qb = 32, or 256 for K-quants): y[t*yStride + r]
 * = W[r] . x[t] for `rows` rows of packed ggml `type` at w, any n. Quantized weight types only.
 */
export function matmulQ8Tiled(type: i32, w: usize, rowBytes: i32, rows: i32, cols: i32, xq: usize, xd: usize, xs: usize, n: i32, y: usize, yStride: i32, scratch: usize): void {
  for (let r0 = 0; r0 < rows; r0 += 4) {
    const nr = min(4, rows - r0);
    const hasMin = decodeStrip(false, 0, type, w, rowBytes, r0, nr, cols, scratch);
    const yr = y + (<usize>r0 << 2);
    // One instance per (kind, mins) so each inlines its branches away.
    if (type == T_Q6_K) tiles(true, true, false, scratch, cols, xq, xd, xs, n, yr, yStride, nr);
    else if (isKQuant(type)) tiles(true, false, false, scratch, cols, xq, xd, xs, n, yr, yStride, nr);
    else if (hasMin) tiles(false, false, true, scratch, cols, xq, xd, xs, n, yr, yStride, nr);
    else tiles(false, false, false, scratch, cols, xq, xd, xs, n, yr, yStride, nr);
  }
}

/** Every token quad of one decoded strip: two quads per tile, a last odd quad alone. */
@inline function tiles(kq: bool, six: bool, mins: bool, scratch: usize, cols: i32, xq: usize, xd: usize, xs: usize, n: i32, y: usize, yStride: i32, nr: i32): void {
  const nq = (n + 3) >> 2;
  let q = 0;
  for (; q + 2 <= nq; q += 2) tile(kq, six, mins, scratch, cols, xq, xd, xs, q, true, n, y, yStride, nr);
  if (q < nq) tile(kq, six, mins, scratch, cols, xq, xd, xs, q, false, n, y, yStride, nr);
}

/**
 * One tile: 4 weight rows x token quads q (and q + 1 when `two`), one exact integer dot per block of 32
 * values (kq: 256), then that block's float step. 32-value block types, as vec.ts rowsQ: acc += (q . x) *
 * (d * dx), then (types with a min) acc += m * (dx * sum x). K-quants, as vec.ts rowQK / rowQ6K: the
 * integer sums I = sum_j sc_j (q . x)_j and (q4_K, q5_K) M = sum_j m_j sum(x)_j, then acc += I * (d * dx)
 * - M * (dmin * dx) (q6_K: acc += I * (d * dx)). K-quant strips hold sc_j * q (q6_K: sc_g * (q - 32)) as
 * int16, so I is one run of integer dots; MN the integer mins per 32 values, DD d and dmin per 256.
 */
@inline function tile(kq: bool, six: bool, mins: bool, W: usize, cols: i32, xq: usize, xd: usize, xs: usize, q: i32, two: bool, n: i32, y: usize, yStride: i32, nr: i32): void {
  const SC = stSc(W, cols);
  const MN = stMn(W, cols);
  const DD = stDD(W, cols);
  const ng = <usize>(cols >> 4);
  // Bytes of one block in a W row (i16 values) and its 16-value groups in the scales.
  const blockW: usize = kq ? 512 : 64;
  const nb = <usize>cols / (blockW >> 1);
  const wRow = <usize>cols << 1;
  const gRow = ng << 2;
  const dRow = <usize>(cols >> 8) << 3;
  const quadQ = <usize>cols << 3;
  const quadG = ng << 4;
  const xa = xq + <usize>q * quadQ;
  const xb = xa + quadQ;
  const da = xd + <usize>q * quadG;
  const db = da + quadG;
  const sa = xs + <usize>q * quadG;
  const sb = sa + quadG;
  const W1 = W + wRow;
  const W2 = W1 + wRow;
  const W3 = W2 + wRow;
  let f0 = f32x4.splat(0), f1 = f32x4.splat(0), f2 = f32x4.splat(0), f3 = f32x4.splat(0);
  let h0 = f32x4.splat(0), h1 = f32x4.splat(0), h2 = f32x4.splat(0), h3 = f32x4.splat(0);
  for (let b: usize = 0; b < nb; b++) {
    let a0 = i32x4.splat(0), a1 = i32x4.splat(0), a2 = i32x4.splat(0), a3 = i32x4.splat(0);
    let b0 = i32x4.splat(0), b1 = i32x4.splat(0), b2 = i32x4.splat(0), b3 = i32x4.splat(0);
    const end = (b + 1) * blockW;
    // p: byte offset of a column pair in W rows (4 B) and in x quads (16 B).
    for (let p: usize = b * blockW; p < end; p += 4) {
      const xv = v128.load(xa + (p << 2));
      const w0 = v128.load32_splat(W + p);
      const w1 = v128.load32_splat(W1 + p);
      const w2 = v128.load32_splat(W2 + p);
      const w3 = v128.load32_splat(W3 + p);
      a0 = i32x4.add(a0, i32x4.dot_i16x8_s(w0, xv));
      a1 = i32x4.add(a1, i32x4.dot_i16x8_s(w1, xv));
      a2 = i32x4.add(a2, i32x4.dot_i16x8_s(w2, xv));
      a3 = i32x4.add(a3, i32x4.dot_i16x8_s(w3, xv));
      if (two) {
        const xw = v128.load(xb + (p << 2));
        b0 = i32x4.add(b0, i32x4.dot_i16x8_s(w0, xw));
        b1 = i32x4.add(b1, i32x4.dot_i16x8_s(w1, xw));
        b2 = i32x4.add(b2, i32x4.dot_i16x8_s(w2, xw));
        b3 = i32x4.add(b3, i32x4.dot_i16x8_s(w3, xw));
      }
    }
    if (kq) {
      const bo = b << 3;
      const dA = v128.load(da + (b << 8));
      f0 = kStep(six, f0, a0, kMins(six, MN, b, sa), DD + bo, dA);
      f1 = kStep(six, f1, a1, kMins(six, MN + gRow, b, sa), DD + dRow + bo, dA);
      f2 = kStep(six, f2, a2, kMins(six, MN + 2 * gRow, b, sa), DD + 2 * dRow + bo, dA);
      f3 = kStep(six, f3, a3, kMins(six, MN + 3 * gRow, b, sa), DD + 3 * dRow + bo, dA);
      if (two) {
        const dB = v128.load(db + (b << 8));
        h0 = kStep(six, h0, b0, kMins(six, MN, b, sb), DD + bo, dB);
        h1 = kStep(six, h1, b1, kMins(six, MN + gRow, b, sb), DD + dRow + bo, dB);
        h2 = kStep(six, h2, b2, kMins(six, MN + 2 * gRow, b, sb), DD + 2 * dRow + bo, dB);
        h3 = kStep(six, h3, b3, kMins(six, MN + 3 * gRow, b, sb), DD + 3 * dRow + bo, dB);
      }
      continue;
    }
    // 32-value block b: its scales sit at 16-value group 2b.
    const go = b << 3;
    const dA = v128.load(da + (b << 5));
    const s0 = v128.load32_splat(SC + go);
    const s1 = v128.load32_splat(SC + gRow + go);
    const s2 = v128.load32_splat(SC + 2 * gRow + go);
    const s3 = v128.load32_splat(SC + 3 * gRow + go);
    f0 = f32x4.add(f0, f32x4.mul(f32x4.convert_i32x4_s(a0), f32x4.mul(s0, dA)));
    f1 = f32x4.add(f1, f32x4.mul(f32x4.convert_i32x4_s(a1), f32x4.mul(s1, dA)));
    f2 = f32x4.add(f2, f32x4.mul(f32x4.convert_i32x4_s(a2), f32x4.mul(s2, dA)));
    f3 = f32x4.add(f3, f32x4.mul(f32x4.convert_i32x4_s(a3), f32x4.mul(s3, dA)));
    let dB = dA;
    if (two) {
      dB = v128.load(db + (b << 5));
      h0 = f32x4.add(h0, f32x4.mul(f32x4.convert_i32x4_s(b0), f32x4.mul(s0, dB)));
      h1 = f32x4.add(h1, f32x4.mul(f32x4.convert_i32x4_s(b1), f32x4.mul(s1, dB)));
      h2 = f32x4.add(h2, f32x4.mul(f32x4.convert_i32x4_s(b2), f32x4.mul(s2, dB)));
      h3 = f32x4.add(h3, f32x4.mul(f32x4.convert_i32x4_s(b3), f32x4.mul(s3, dB)));
    }
    if (mins) {
      // + m * (dx * sum of the block's 32 quantized x), as the one-token kernel.
      const m0 = v128.load32_splat(MN + go);
      const m1 = v128.load32_splat(MN + gRow + go);
      const m2 = v128.load32_splat(MN + 2 * gRow + go);
      const m3 = v128.load32_splat(MN + 3 * gRow + go);
      const xA = f32x4.mul(dA, f32x4.convert_i32x4_s(i32x4.add(v128.load(sa + (b << 5)), v128.load(sa + (b << 5), 16))));
      f0 = f32x4.add(f0, f32x4.mul(m0, xA));
      f1 = f32x4.add(f1, f32x4.mul(m1, xA));
      f2 = f32x4.add(f2, f32x4.mul(m2, xA));
      f3 = f32x4.add(f3, f32x4.mul(m3, xA));
      if (two) {
        const xB = f32x4.mul(dB, f32x4.convert_i32x4_s(i32x4.add(v128.load(sb + (b << 5)), v128.load(sb + (b << 5), 16))));
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

/** M = sum_j m_j sum(x)_j over block b's 8 sub-blocks of one row (mn: its mins), token lanes of a quad's sums s; q6_K: none. */
@inline export function kMins(six: bool, mn: usize, b: usize, s: usize): v128 {
  if (six) return i32x4.splat(0);
  let m = i32x4.splat(0);
  for (let j: usize = 0; j < 8; j++) {
    const g = (b << 4) + (j << 1);
    m = i32x4.add(m, i32x4.mul(v128.load32_splat(mn + (((b << 3) + j) << 2)), i32x4.add(v128.load(s + (g << 4)), v128.load(s + (g << 4), 16))));
  }
  return m;
}

/** acc + I * (d * dx) - M * (dmin * dx) for one row's 256 values (q6_K: acc + I * (d * dx)); dd: the row's d, dmin. */
@inline export function kStep(six: bool, acc: v128, I: v128, M: v128, dd: usize, dx: v128): v128 {
  const main = f32x4.mul(f32x4.convert_i32x4_s(I), f32x4.mul(v128.load32_splat(dd), dx));
  if (six) return f32x4.add(acc, main);
  return f32x4.add(acc, f32x4.sub(main, f32x4.mul(f32x4.convert_i32x4_s(M), f32x4.mul(v128.load32_splat(dd, 4), dx))));
}
