// What the int8 tiles (tile_q8.ts, relaxed_tile.ts) and the f32 tile (tile_f32.ts) share: the per-thread
// scratch layout, a strip of 4 weight rows decoded once per call into it, and the stores of a tile's outputs.
import { decodeRowI8At, kScalesAt, T_Q4_K, T_Q4_KX4, T_Q5_K, T_Q6_K } from './decode';

@inline function up16(n: usize): usize {
  return (n + 15) & ~(<usize>15);
}

/**
 * Strip scratch: W [4][cols] i16 (relaxed: u8 at the same stride) | SC [4][cols/16] f32 (K-quants: i32
 * sub-block scales) | MN [4][cols/16] f32 (K-quants: i32 mins) | Q [cols] i8 | F [4][cols] f32 (tile_f32.ts)
 * | DD [4][cols/256][2] f32 (K-quants: d, dmin).
 */
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

/** Whether a type's tiles take K-quant strips (integer sub-block scales, d and dmin per 256). */
@inline export function isKQuant(type: i32): bool {
  return type == T_Q4_K || type == T_Q4_KX4 || type == T_Q5_K || type == T_Q6_K;
}

/**
 * Weight rows r0..r0+nr-1 (nr <= 4) of `type` at w into the strip at scratch: decodeRowI8's scales and mins
 * (K-quants: kScales' integer ones, d and dmin), and the values as int16 (K-quants: times their integer
 * sub-block scale, widenScaled) or, with `bytes` (the relaxed tiles), as bytes q + off. Rows past nr are
 * zeros (their outputs are never stored). Returns whether the type has mins.
 */
@inline export function decodeStrip(bytes: bool, off: i32, type: i32, w: usize, rowBytes: i32, r0: i32, nr: i32, cols: i32, scratch: usize): bool {
  const kq = isKQuant(type);
  const SC = stSc(scratch, cols);
  const MN = stMn(scratch, cols);
  const Q = stQ(scratch, cols);
  const DD = stDD(scratch, cols);
  const wRow = <usize>cols << 1;
  const gRow = <usize>(cols >> 4) << 2;
  const dRow = <usize>(cols >> 8) << 3;
  let hasMin = false;
  for (let i = 0; i < 4; i++) {
    const wi = scratch + <usize>i * wRow;
    if (i < nr) {
      hasMin = decodeRowI8At(type, w, rowBytes, r0 + i, cols, Q, SC + <usize>i * gRow, MN + <usize>i * gRow);
      if (kq) kScalesAt(type, w, rowBytes, r0 + i, cols, SC + <usize>i * gRow, MN + <usize>i * gRow, DD + <usize>i * dRow);
      if (bytes) offsetRow(Q, cols, off, wi);
      else if (kq) widenScaled(type == T_Q6_K, Q, SC + <usize>i * gRow, cols, wi);
      else widenRow(Q, cols, wi);
    } else {
      if (bytes) memory.fill(wi, <u8>off, cols);
      else memory.fill(wi, 0, wRow);
      memory.fill(SC + <usize>i * gRow, 0, gRow);
      memory.fill(MN + <usize>i * gRow, 0, gRow);
      if (kq) memory.fill(DD + <usize>i * dRow, 0, dRow);
    }
  }
  return hasMin;
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

/** i8 row q [cols] + off -> bytes at dst (the relaxed tiles' narrow types: 0..15 or 0..31). */
@inline function offsetRow(q: usize, cols: i32, off: i32, dst: usize): void {
  const o = i8x16.splat(<i8>off);
  for (let i: usize = 0; i < <usize>cols; i += 16) v128.store(dst + i, i8x16.add(v128.load(q + i), o));
}

/** Stores lanes of acc (tokens t0..t0+3) as y[token*yStride + row] for tokens < n. */
@inline function storeLanes(acc: v128, y: usize, ys: usize, t0: i32, n: i32): void {
  const m = n - t0;
  store<f32>(y, f32x4.extract_lane(acc, 0));
  if (m > 1) store<f32>(y + ys, f32x4.extract_lane(acc, 1));
  if (m > 2) store<f32>(y + 2 * ys, f32x4.extract_lane(acc, 2));
  if (m > 3) store<f32>(y + 3 * ys, f32x4.extract_lane(acc, 3));
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
