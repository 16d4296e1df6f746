// Tiled matrix-matrix products for prefill: 4 weight rows x 8 tokens per tile. Lanes hold tokens, not
// columns: activations are stored per quad of 4 tokens, column-interleaved, so one splatted weight value (or
// int16 pair) multiplies four tokens at once and no horizontal sum is needed. Each strip of 4 rows is
// decoded once per call (int16 or f32 in scratch) and reused by every token; activations are laid out once
// per call by the packAct* kernels (and may be shared by several weights with the same input).
import { decodeRowI8, halfRowToF32, i8RowToF32, T_BF16, T_F16, T_F32, T_Q6_K } from './matmul_decode';

@inline function up16(n: usize): usize {
  return (n + 15) & ~(<usize>15);
}

/** Strip scratch: W [4][cols] i16 (or f32) | SC [4][cols/16] f32 | MN [4][cols/16] f32 | Q [cols] i8 | F [4][cols] f32. */
@inline function stW(s: usize): usize {
  return s;
}
@inline function stSc(s: usize, cols: i32): usize {
  return s + up16(<usize>cols << 3);
}
@inline function stMn(s: usize, cols: i32): usize {
  return stSc(s, cols) + up16(<usize>cols);
}
@inline function stQ(s: usize, cols: i32): usize {
  return stMn(s, cols) + up16(<usize>cols);
}
@inline function stF(s: usize, cols: i32): usize {
  return stQ(s, cols) + up16(<usize>cols);
}

/** Bytes of one thread's scratch for the tiled kernels with rows of `cols` values. */
export function matmulTileScratchBytes(cols: i32): i32 {
  return <i32>(stF(0, cols) + (<usize>cols << 4));
}

/**
 * x [n, cols] f32 -> int8 values widened to i16, per quad of 4 tokens: xq [nq][cols/2][4 tokens][2] i16
 * (16 bytes per column pair), with one scale amax/127 per qb values (32 or 256; cols % qb == 0) stored per
 * 16 values in xd [nq][cols/16][4] f32 and each 16 values' sum as quantized (d * sum q) in xs (same
 * layout): the min terms of q4_1 / q5_1 / K-quants then see the same x as the dots, so the error stays
 * within half an activation step per value times |w| (with exact sums it was times |d q|, which can
 * exceed |w|: the full matmul gate failed q4_1 / q5_1 by up to 1.8x). Tokens past n in the last quad are
 * zeros. nq = ceil(n / 4).
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
      let mx = f32x4.splat(0);
      for (let i: usize = 0; i < <usize>qb; i += 4) mx = f32x4.max(mx, f32x4.abs(v128.load(xr + ((b0 + i) << 2))));
      const amax = Mathf.max(Mathf.max(f32x4.extract_lane(mx, 0), f32x4.extract_lane(mx, 1)), Mathf.max(f32x4.extract_lane(mx, 2), f32x4.extract_lane(mx, 3)));
      const d: f32 = amax / 127;
      const id = f32x4.splat(d > 0 ? 1 / d : 0);
      for (let i: usize = 0; i < <usize>qb; i += 16) {
        const p = xr + ((b0 + i) << 2);
        const v0 = v128.load(p);
        const v1 = v128.load(p, 16);
        const v2 = v128.load(p, 32);
        const v3 = v128.load(p, 48);
        const i0 = i32x4.trunc_sat_f32x4_s(f32x4.nearest(f32x4.mul(v0, id)));
        const i1 = i32x4.trunc_sat_f32x4_s(f32x4.nearest(f32x4.mul(v1, id)));
        const i2 = i32x4.trunc_sat_f32x4_s(f32x4.nearest(f32x4.mul(v2, id)));
        const i3 = i32x4.trunc_sat_f32x4_s(f32x4.nearest(f32x4.mul(v3, id)));
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
        // The sum of the 16 values as quantized (d * sum q): the min term then sees the same x as the dots.
        const s = i32x4.add(i32x4.add(i0, i1), i32x4.add(i2, i3));
        store<f32>(sr + (g << 4), d * <f32>(i32x4.extract_lane(s, 0) + i32x4.extract_lane(s, 1) + i32x4.extract_lane(s, 2) + i32x4.extract_lane(s, 3)));
      }
    }
  }
}

/** x [n, cols] f32 -> xt [nq][cols][4 tokens] f32 (tokens past n are zeros). */
export function packActF32(x: usize, n: i32, cols: i32, xt: usize): void {
  const quad = <usize>cols << 4;
  const nq = <usize>((n + 3) >> 2);
  if (n & 3) memory.fill(xt + (nq - 1) * quad, 0, quad);
  for (let t = 0; t < n; t++) {
    const xr = x + ((<usize>t * cols) << 2);
    const o = xt + <usize>(t >> 2) * quad + (<usize>(t & 3) << 2);
    for (let c: usize = 0; c < <usize>cols; c++) store<f32>(o + (c << 4), load<f32>(xr + (c << 2)));
  }
}

/** Stores lanes of acc (tokens 4q..4q+3) as y[token*yStride + row] for tokens < n. */
@inline function storeLanes(acc: v128, y: usize, ys: usize, t0: i32, n: i32): void {
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
 * = W[r] . x[t] for `rows` rows of packed ggml `type` at w. Quantized weight types only.
 */
export function matmulQ8Tiled(type: i32, w: usize, rowBytes: i32, rows: i32, cols: i32, xq: usize, xd: usize, xs: usize, n: i32, y: usize, yStride: i32, scratch: usize): void {
  // Types whose 32 values share one scale (all but q6_K) run 16 column pairs per float step.
  const step: usize = type != T_Q6_K ? 2 : 1;
  const ng = <usize>(cols >> 4);
  const W = stW(scratch);
  const SC = stSc(scratch, cols);
  const MN = stMn(scratch, cols);
  const Q = stQ(scratch, cols);
  const wRow = <usize>cols << 1;
  const gRow = ng << 2;
  const nq = (n + 3) >> 2;
  for (let r0 = 0; r0 < rows; r0 += 4) {
    const nr = min(4, rows - r0);
    let hasMin = false;
    for (let i = 0; i < 4; i++) {
      const wi = W + <usize>i * wRow;
      if (i < nr) {
        hasMin = decodeRowI8(type, w + <usize>(r0 + i) * rowBytes, cols, Q, SC + <usize>i * gRow, MN + <usize>i * gRow);
        widenRow(Q, cols, wi);
      } else {
        memory.fill(wi, 0, wRow);
        memory.fill(SC + <usize>i * gRow, 0, gRow);
        memory.fill(MN + <usize>i * gRow, 0, gRow);
      }
    }
    let q = 0;
    for (; q + 2 <= nq; q += 2) tileQ8(W, SC, MN, hasMin, step, cols, xq, xd, xs, q, true, n, y + (<usize>r0 << 2), yStride, nr);
    if (q < nq) tileQ8(W, SC, MN, hasMin, step, cols, xq, xd, xs, q, false, n, y + (<usize>r0 << 2), yStride, nr);
  }
}

/** One tile: 4 weight rows x token quads q (and q + 1 when `two`). */
@inline function tileQ8(W: usize, SC: usize, MN: usize, hasMin: bool, step: usize, cols: i32, xq: usize, xd: usize, xs: usize, q: i32, two: bool, n: i32, y: usize, yStride: i32, nr: i32): void {
  const ng = <usize>(cols >> 4);
  const wRow = <usize>cols << 1;
  const gRow = ng << 2;
  const quadQ = <usize>cols << 3;
  const quadG = ng << 4;
  const xa = xq + <usize>q * quadQ;
  const xb = xa + quadQ;
  const da = xd + <usize>q * quadG;
  const db = da + quadG;
  const W1 = W + wRow;
  const W2 = W1 + wRow;
  const W3 = W2 + wRow;
  let f0 = f32x4.splat(0), f1 = f32x4.splat(0), f2 = f32x4.splat(0), f3 = f32x4.splat(0);
  let h0 = f32x4.splat(0), h1 = f32x4.splat(0), h2 = f32x4.splat(0), h3 = f32x4.splat(0);
  for (let g: usize = 0; g < ng; g += step) {
    let a0 = i32x4.splat(0), a1 = i32x4.splat(0), a2 = i32x4.splat(0), a3 = i32x4.splat(0);
    let b0 = i32x4.splat(0), b1 = i32x4.splat(0), b2 = i32x4.splat(0), b3 = i32x4.splat(0);
    const end = (g + step) << 5;
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
    if (two) {
      const dB = v128.load(db + (g << 4));
      h0 = f32x4.add(h0, f32x4.mul(f32x4.convert_i32x4_s(b0), f32x4.mul(s0, dB)));
      h1 = f32x4.add(h1, f32x4.mul(f32x4.convert_i32x4_s(b1), f32x4.mul(s1, dB)));
      h2 = f32x4.add(h2, f32x4.mul(f32x4.convert_i32x4_s(b2), f32x4.mul(s2, dB)));
      h3 = f32x4.add(h3, f32x4.mul(f32x4.convert_i32x4_s(b3), f32x4.mul(s3, dB)));
    }
  }
  if (hasMin) {
    // + sum over 16-groups of min[r][g] * (the token's 16 values' sum, as quantized).
    const sa = xs + <usize>q * quadG;
    const sb = sa + quadG;
    for (let g: usize = 0; g < ng; g++) {
      const go = g << 2;
      const m0 = v128.load32_splat(MN + go);
      const m1 = v128.load32_splat(MN + gRow + go);
      const m2 = v128.load32_splat(MN + 2 * gRow + go);
      const m3 = v128.load32_splat(MN + 3 * gRow + go);
      const xA = v128.load(sa + (g << 4));
      f0 = f32x4.add(f0, f32x4.mul(m0, xA));
      f1 = f32x4.add(f1, f32x4.mul(m1, xA));
      f2 = f32x4.add(f2, f32x4.mul(m2, xA));
      f3 = f32x4.add(f3, f32x4.mul(m3, xA));
      if (two) {
        const xB = v128.load(sb + (g << 4));
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

/** Rows 0..nr-1 of a tile (one f32x4 of 4 tokens each) into y[t*yStride + r] for tokens t0.. < n. */
@inline function storeTile(f0: v128, f1: v128, f2: v128, f3: v128, y: usize, yStride: i32, t0: i32, n: i32, nr: i32): void {
  const ys = <usize>yStride << 2;
  const yt = y + <usize>t0 * ys;
  storeLanes(f0, yt, ys, t0, n);
  if (nr > 1) storeLanes(f1, yt + 4, ys, t0, n);
  if (nr > 2) storeLanes(f2, yt + 8, ys, t0, n);
  if (nr > 3) storeLanes(f3, yt + 12, ys, t0, n);
}

/**
 * f32 activations (packActF32): y[t*yStride + r] = W[r] . x[t] for weights of any type; each strip of 4
 * rows is decoded to f32 once (f32 weights are read in place).
 */
export function matmulF32Tiled(type: i32, w: usize, rowBytes: i32, rows: i32, cols: i32, xt: usize, n: i32, y: usize, yStride: i32, scratch: usize): void {
  const F = stF(scratch, cols);
  const fRow = <usize>cols << 2;
  const nq = (n + 3) >> 2;
  for (let r0 = 0; r0 < rows; r0 += 4) {
    const nr = min(4, rows - r0);
    // Row pointers of the strip; missing rows point at a zeroed row.
    let p0: usize = 0, p1: usize = 0, p2: usize = 0, p3: usize = 0;
    for (let i = 0; i < 4; i++) {
      const fi = F + <usize>i * fRow;
      let p = fi;
      if (i >= nr) memory.fill(fi, 0, fRow);
      else {
        const wr = w + <usize>(r0 + i) * rowBytes;
        if (type == T_F32) p = wr;
        else if (type == T_F16 || type == T_BF16) halfRowToF32(type, wr, cols, fi);
        else {
          const hasMin = decodeRowI8(type, wr, cols, stQ(scratch, cols), stSc(scratch, cols), stMn(scratch, cols));
          i8RowToF32(stQ(scratch, cols), stSc(scratch, cols), stMn(scratch, cols), hasMin, cols, fi);
        }
      }
      if (i == 0) p0 = p;
      else if (i == 1) p1 = p;
      else if (i == 2) p2 = p;
      else p3 = p;
    }
    let q = 0;
    for (; q + 2 <= nq; q += 2) tileF32(p0, p1, p2, p3, cols, xt, q, true, n, y + (<usize>r0 << 2), yStride, nr);
    if (q < nq) tileF32(p0, p1, p2, p3, cols, xt, q, false, n, y + (<usize>r0 << 2), yStride, nr);
  }
}

@inline function tileF32(p0: usize, p1: usize, p2: usize, p3: usize, cols: i32, xt: usize, q: i32, two: bool, n: i32, y: usize, yStride: i32, nr: i32): void {
  const quad = <usize>cols << 4;
  const xa = xt + <usize>q * quad;
  const xb = xa + quad;
  let f0 = f32x4.splat(0), f1 = f32x4.splat(0), f2 = f32x4.splat(0), f3 = f32x4.splat(0);
  let h0 = f32x4.splat(0), h1 = f32x4.splat(0), h2 = f32x4.splat(0), h3 = f32x4.splat(0);
  const end = <usize>cols << 2;
  for (let c: usize = 0; c < end; c += 4) {
    const xv = v128.load(xa + (c << 2));
    const w0 = v128.load32_splat(p0 + c);
    const w1 = v128.load32_splat(p1 + c);
    const w2 = v128.load32_splat(p2 + c);
    const w3 = v128.load32_splat(p3 + c);
    f0 = f32x4.add(f0, f32x4.mul(w0, xv));
    f1 = f32x4.add(f1, f32x4.mul(w1, xv));
    f2 = f32x4.add(f2, f32x4.mul(w2, xv));
    f3 = f32x4.add(f3, f32x4.mul(w3, xv));
    if (two) {
      const xw = v128.load(xb + (c << 2));
      h0 = f32x4.add(h0, f32x4.mul(w0, xw));
      h1 = f32x4.add(h1, f32x4.mul(w1, xw));
      h2 = f32x4.add(h2, f32x4.mul(w2, xw));
      h3 = f32x4.add(h3, f32x4.mul(w3, xw));
    }
  }
  storeTile(f0, f1, f2, f3, y, yStride, q << 2, n, nr);
  if (two) storeTile(h0, h1, h2, h3, y, yStride, (q + 1) << 2, n, nr);
}
