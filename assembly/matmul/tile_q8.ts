// Tiled matrix-matrix products of quantized weights and int8 activations (prefill): 4 weight rows x 8
// tokens per tile. Lanes hold tokens, not columns: activations are stored per quad of 4 tokens,
// column-interleaved, so one splatted int16 weight pair multiplies four tokens at once and no horizontal sum
// is needed. Each strip of 4 rows is decoded once per call (int16 in scratch) and reused by every token.
// Batch invariance: every output gets the float operations of the type's one-token kernel
// (vec.ts), in the same order, so a token's row has the same bits in a batch of any size: per
// 32-value block (per 256 for K-quants) an exact integer dot, then the same float multiplies and adds.
import { decodeRowI8, kScales, T_Q4_K, T_Q5_K, T_Q6_K } from './decode';
import { actInverse, actScale, round4 } from './act';

@inline function up16(n: usize): usize {
  return (n + 15) & ~(<usize>15);
}

/**
 * Strip scratch: W [4][cols] i16 | SC [4][cols/16] f32 (K-quants: i32 sub-block scales) | MN [4][cols/16] f32
 * (K-quants: i32 mins) | Q [cols] i8 | F [4][cols] f32 (tile_f32.ts) | DD [4][cols/256][2] f32 (K-quants: d, dmin).
 */
@inline function stW(s: usize): usize {
  return s;
}
@inline export function stSc(s: usize, cols: i32): usize {
  return s + up16(<usize>cols << 3);
}
@inline export function stMn(s: usize, cols: i32): usize {
  return stSc(s, cols) + up16(<usize>cols);
}
@inline export function stQ(s: usize, cols: i32): usize {
  return stMn(s, cols) + up16(<usize>cols);
}

@inline export function stF(s: usize, cols: i32): usize {
  return stQ(s, cols) + up16(<usize>cols);
}
@inline export function stDD(s: usize, cols: i32): usize {
  return stF(s, cols) + (<usize>cols << 4);
}

/** Bytes of one thread's scratch for the tiled kernels with rows of `cols` values. */
export function matmulTileScratchBytes(cols: i32): i32 {
  return <i32>(stDD(0, cols) + up16(<usize>cols >> 3));
}

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
  const nq = <usize>((n + 3) >> 2);
  if (n & 3) {
    memory.fill(xq + (nq - 1) * quadQ, 0, quadQ);
    memory.fill(xd + (nq - 1) * quadG, 0, quadG);
    memory.fill(xs + (nq - 1) * quadG, 0, quadG);
  }
  for (let t = 0; t < n; t++) {
    const xr = x + ((<usize>t * cols) << 2);
    const lane = <usize>(t & 3) << 2;
    const qr = xq + <usize>(t >> 2) * quadQ + lane;
    const dr = xd + <usize>(t >> 2) * quadG + lane;
    const sr = xs + <usize>(t >> 2) * quadG + lane;
    for (let b0: usize = 0; b0 < <usize>cols; b0 += <usize>qb) {
      const d = actScale(xr + (b0 << 2), <usize>qb);
      const id = actInverse(d);
      for (let i: usize = 0; i < <usize>qb; i += 16) {
        const p = xr + ((b0 + i) << 2);
        const i0 = round4(p, id);
        const i1 = round4(p + 16, id);
        const i2 = round4(p + 32, id);
        const i3 = round4(p + 48, id);
        const lo = i16x8.narrow_i32x4_s(i0, i1);
        const hi = i16x8.narrow_i32x4_s(i2, i3);
        // Column pair c/2 of this token sits at 16*(c/2) + 4*lane.
        const o = qr + ((b0 + i) << 3);
        store<i32>(o, i32x4.extract_lane(lo, 0));
        store<i32>(o, i32x4.extract_lane(lo, 1), 16);
        store<i32>(o, i32x4.extract_lane(lo, 2), 32);
        store<i32>(o, i32x4.extract_lane(lo, 3), 48);
        store<i32>(o, i32x4.extract_lane(hi, 0), 64);
        store<i32>(o, i32x4.extract_lane(hi, 1), 80);
        store<i32>(o, i32x4.extract_lane(hi, 2), 96);
        store<i32>(o, i32x4.extract_lane(hi, 3), 112);
        const g = (b0 + i) >> 4;
        store<f32>(dr + (g << 4), d);
        const s = i32x4.add(i32x4.add(i0, i1), i32x4.add(i2, i3));
        store<i32>(sr + (g << 4), i32x4.extract_lane(s, 0) + i32x4.extract_lane(s, 1) + i32x4.extract_lane(s, 2) + i32x4.extract_lane(s, 3));
      }
    }
  }
}

/** Stores lanes of acc (tokens 4q..4q+3) as y[token*yStride + row] for tokens < n. */
@inline export function storeLanes(acc: v128, y: usize, ys: usize, t0: i32, n: i32): void {
  const m = n - t0;
  store<f32>(y, f32x4.extract_lane(acc, 0));
  if (m > 1) store<f32>(y + ys, f32x4.extract_lane(acc, 1));
  if (m > 2) store<f32>(y + 2 * ys, f32x4.extract_lane(acc, 2));
  if (m > 3) store<f32>(y + 3 * ys, f32x4.extract_lane(acc, 3));
}

/** i8 row q [cols] -> i16 [cols] at dst. */
@inline function widenRow(q: usize, cols: i32, dst: usize): void {
  for (let i: usize = 0; i < <usize>cols; i += 16) {
    const v = v128.load(q + i);
    v128.store(dst + (i << 1), i16x8.extend_low_i8x16_s(v));
    v128.store(dst + (i << 1), i16x8.extend_high_i8x16_s(v), 16);
  }
}


/**
 * Quantized weights x int8 activations (packActQ8 with qb = 32, or 256 for K-quants): y[t*yStride + r]
 * = W[r] . x[t] for `rows` rows of packed ggml `type` at w, any n. Quantized weight types only.
 */
export function matmulQ8Tiled(type: i32, w: usize, rowBytes: i32, rows: i32, cols: i32, xq: usize, xd: usize, xs: usize, n: i32, y: usize, yStride: i32, scratch: usize): void {
  const kq = type == T_Q4_K || type == T_Q5_K || type == T_Q6_K;
  const ng = <usize>(cols >> 4);
  const W = stW(scratch);
  const SC = stSc(scratch, cols);
  const MN = stMn(scratch, cols);
  const Q = stQ(scratch, cols);
  const DD = stDD(scratch, cols);
  const wRow = <usize>cols << 1;
  const gRow = ng << 2;
  const dRow = <usize>(cols >> 8) << 3;
  const nq = (n + 3) >> 2;
  for (let r0 = 0; r0 < rows; r0 += 4) {
    const nr = min(4, rows - r0);
    let hasMin = false;
    for (let i = 0; i < 4; i++) {
      const wi = W + <usize>i * wRow;
      if (i < nr) {
        const wr = w + <usize>(r0 + i) * rowBytes;
        hasMin = decodeRowI8(type, wr, cols, Q, SC + <usize>i * gRow, MN + <usize>i * gRow);
        if (kq) {
          // K-quants: integer sub-block scales (into the weights) and mins over the float ones, d and dmin per 256.
          kScales(type, wr, cols, SC + <usize>i * gRow, MN + <usize>i * gRow, DD + <usize>i * dRow);
          widenScaled(type == T_Q6_K, Q, SC + <usize>i * gRow, cols, wi);
        } else widenRow(Q, cols, wi);
      } else {
        memory.fill(wi, 0, wRow);
        memory.fill(SC + <usize>i * gRow, 0, gRow);
        memory.fill(MN + <usize>i * gRow, 0, gRow);
        if (kq) memory.fill(DD + <usize>i * dRow, 0, dRow);
      }
    }
    const yr = y + (<usize>r0 << 2);
    let q = 0;
    if (type == T_Q6_K) {
      for (; q + 2 <= nq; q += 2) tileK(true, W, MN, DD, cols, xq, xd, xs, q, true, n, yr, yStride, nr);
      if (q < nq) tileK(true, W, MN, DD, cols, xq, xd, xs, q, false, n, yr, yStride, nr);
    } else if (kq) {
      for (; q + 2 <= nq; q += 2) tileK(false, W, MN, DD, cols, xq, xd, xs, q, true, n, yr, yStride, nr);
      if (q < nq) tileK(false, W, MN, DD, cols, xq, xd, xs, q, false, n, yr, yStride, nr);
    } else if (hasMin) {
      for (; q + 2 <= nq; q += 2) tile32(true, W, SC, MN, cols, xq, xd, xs, q, true, n, yr, yStride, nr);
      if (q < nq) tile32(true, W, SC, MN, cols, xq, xd, xs, q, false, n, yr, yStride, nr);
    } else {
      for (; q + 2 <= nq; q += 2) tile32(false, W, SC, MN, cols, xq, xd, xs, q, true, n, yr, yStride, nr);
      if (q < nq) tile32(false, W, SC, MN, cols, xq, xd, xs, q, false, n, yr, yStride, nr);
    }
  }
}

/**
 * One tile of a 32-value block type: 4 weight rows x token quads q (and q + 1 when `two`). Per block, as
 * vec.ts rowsQ: acc += (q . x) * (d * dx), then (types with a min) acc += m * (dx * sum x).
 */
@inline function tile32(mins: bool, W: usize, SC: usize, MN: usize, cols: i32, xq: usize, xd: usize, xs: usize, q: i32, two: bool, n: i32, y: usize, yStride: i32, nr: i32): void {
  const ng = <usize>(cols >> 4);
  const wRow = <usize>cols << 1;
  const gRow = ng << 2;
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
  for (let g: usize = 0; g < ng; g += 2) {
    let a0 = i32x4.splat(0), a1 = i32x4.splat(0), a2 = i32x4.splat(0), a3 = i32x4.splat(0);
    let b0 = i32x4.splat(0), b1 = i32x4.splat(0), b2 = i32x4.splat(0), b3 = i32x4.splat(0);
    const end = (g + 2) << 5;
    // p: byte offset of a column pair in W rows (4 B) and in x quads (16 B).
    for (let p: usize = g << 5; p < end; p += 4) {
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
    const go = g << 2;
    const dA = v128.load(da + (g << 4));
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
      dB = v128.load(db + (g << 4));
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
      const xA = f32x4.mul(dA, f32x4.convert_i32x4_s(i32x4.add(v128.load(sa + (g << 4)), v128.load(sa + (g << 4), 16))));
      f0 = f32x4.add(f0, f32x4.mul(m0, xA));
      f1 = f32x4.add(f1, f32x4.mul(m1, xA));
      f2 = f32x4.add(f2, f32x4.mul(m2, xA));
      f3 = f32x4.add(f3, f32x4.mul(m3, xA));
      if (two) {
        const xB = f32x4.mul(dB, f32x4.convert_i32x4_s(i32x4.add(v128.load(sb + (g << 4)), v128.load(sb + (g << 4), 16))));
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
 * One tile of a K-quant: 4 weight rows x token quads q (and q + 1 when `two`). Per 256 values, as
 * vec.ts rowQK / rowQ6K: the integer sums I = sum_j sc_j (q . x)_j and (q4_K, q5_K) M = sum_j m_j
 * sum(x)_j, then acc += I * (d * dx) - M * (dmin * dx) (q6_K: acc += I * (d * dx)). W holds sc_j * q (q6_K:
 * sc_g * (q - 32)) as int16 (widenScaled), so I is one run of integer dots; MN the integer mins per 32
 * values, DD d and dmin per 256 (kScales).
 */
@inline function tileK(six: bool, W: usize, MN: usize, DD: usize, cols: i32, xq: usize, xd: usize, xs: usize, q: i32, two: bool, n: i32, y: usize, yStride: i32, nr: i32): void {
  const ng = <usize>(cols >> 4);
  const nb = <usize>(cols >> 8);
  const wRow = <usize>cols << 1;
  const gRow = ng << 2;
  const dRow = nb << 3;
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
    const end = (b + 1) << 9;
    // p: byte offset of a column pair in W rows (4 B) and in x quads (16 B).
    for (let p: usize = b << 9; p < end; p += 4) {
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

/**
 * K-quant row q [cols] i8 (decodeRowI8: q4_K / q5_K values 0..31, q6_K q - 32) times its integer scales
 * isc (kScales: per 32 values, q6_K per 16) -> dst [cols] i16 (|sc q| <= 63 * 31 or 128 * 32: fits).
 */
@inline function widenScaled(six: bool, q: usize, isc: usize, cols: i32, dst: usize): void {
  for (let i: usize = 0; i < <usize>cols; i += 16) {
    const s = i16x8.splat(<i16>load<i32>(isc + ((six ? i >> 4 : i >> 5) << 2)));
    const v = v128.load(q + i);
    v128.store(dst + (i << 1), i16x8.mul(i16x8.extend_low_i8x16_s(v), s));
    v128.store(dst + (i << 1), i16x8.mul(i16x8.extend_high_i8x16_s(v), s), 16);
  }
}

/** Rows 0..nr-1 of a tile (one f32x4 of 4 tokens each) into y[t*yStride + r] for tokens t0.. < n. */
@inline export function storeTile(f0: v128, f1: v128, f2: v128, f3: v128, y: usize, yStride: i32, t0: i32, n: i32, nr: i32): void {
  const ys = <usize>yStride << 2;
  const yt = y + <usize>t0 * ys;
  storeLanes(f0, yt, ys, t0, n);
  if (nr > 1) storeLanes(f1, yt + 4, ys, t0, n);
  if (nr > 2) storeLanes(f2, yt + 8, ys, t0, n);
  if (nr > 3) storeLanes(f3, yt + 12, ys, t0, n);
}
