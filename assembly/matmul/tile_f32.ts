// The f32-activation matmul for any weight type and any number of tokens: y[t*yStride + r] = W[r] . x[t].
// Each strip of 4 rows is decoded to f32 once per call (f32 weights are read in place) and reused by every
// token. Batch invariance: every output is summed in one order whatever the batch,
// the order of the f16 / bf16 one-token kernel (vec_halves.ts): per 8 columns, lane k adds
// (w[k] x[k] + w[4+k] x[4+k]) to its accumulator, then (l0 + l2) + (l1 + l3), then the last cols % 8
// products summed in order. f16 / bf16 rows are decoded with their 8 values permuted to even then odd, the
// order packActHalves gives x, so their products are the one-token kernel's.
import { decodeRowI8At, halfRowToF32, halfToFloat4s, i8RowToF32, T_BF16, T_F16, T_F32 } from './decode';
import { hsum4 } from '../shared/common';
import { stF, stMn, stQ, stSc } from './tile_strip';

/**
 * f16 / bf16 row -> f [cols] f32, per 8 values the 4 even then the 4 odd; a last partial 8 in order. The
 * values are the one-token kernel's (both conversions are exact for finite halves; Inf/NaN f16 weights are
 * loaded as f32); f16 by the x 2^112 conversion, 1.5x faster here than the one-token kernel's.
 */
function halfRowPermuted(bf: bool, w: usize, cols: i32, f: usize): void {
  const c8 = <usize>(cols & ~7);
  let i: usize = 0;
  for (; i < c8; i += 8) {
    const v = v128.load(w + (i << 1));
    if (bf) {
      v128.store(f + (i << 2), i32x4.shl(v, 16));
      v128.store(f + (i << 2), v128.and(v, i32x4.splat(0xffff0000)), 16);
    } else {
      v128.store(f + (i << 2), halfToFloat4s(i32x4.shr_s(i32x4.shl(v, 16), 16)));
      v128.store(f + (i << 2), halfToFloat4s(i32x4.shr_s(v, 16)), 16);
    }
  }
  if (i < <usize>cols) halfRowToF32(bf ? T_BF16 : T_F16, w + (i << 1), cols - <i32>i, f + (i << 2));
}

/**
 * f32 activations x [n, cols] f32 (f16 / bf16 weights: packActHalves order per token, packActVecN
 * ORDER_HALVES), weights of any type; y[t*yStride + r].
 */
export function matmulF32Tiled(type: i32, w: usize, rowBytes: i32, rows: i32, cols: i32, x: usize, n: i32, y: usize, yStride: i32, scratch: usize): void {
  const F = stF(scratch, cols);
  const fRow = <usize>cols << 2;
  const xRow = <usize>cols << 2;
  for (let r0 = 0; r0 < rows; r0 += 4) {
    const nr = min(4, rows - r0);
    // Row pointers of the strip; missing rows repeat the first (their outputs are not stored).
    let p0: usize = 0, p1: usize = 0, p2: usize = 0, p3: usize = 0;
    for (let i = 0; i < nr; i++) {
      const fi = F + <usize>i * fRow;
      const wr = w + <usize>(r0 + i) * rowBytes;
      let p = fi;
      // f32 rows are read in place for a few tokens, copied next to each other for more (1.1-1.5x faster at 8-16 tokens: measured, cause not isolated).
      if (type == T_F32) {
        if (n < 4) p = wr;
        else memory.copy(fi, wr, <usize>cols << 2);
      }
      else if (type == T_F16) halfRowPermuted(false, wr, cols, fi);
      else if (type == T_BF16) halfRowPermuted(true, wr, cols, fi);
      else {
        const hasMin = decodeRowI8At(type, w, rowBytes, r0 + i, cols, stQ(scratch, cols), stSc(scratch, cols), stMn(scratch, cols));
        i8RowToF32(stQ(scratch, cols), stSc(scratch, cols), stMn(scratch, cols), hasMin, cols, fi);
      }
      if (i == 0) p0 = p1 = p2 = p3 = p;
      else if (i == 1) p1 = p;
      else if (i == 2) p2 = p;
      else p3 = p;
    }
    const yr = y + (<usize>r0 << 2);
    const ys = <usize>yStride << 2;
    let t = 0;
    for (; t + 2 <= n; t += 2) {
      const xt = x + <usize>t * xRow, yt = yr + <usize>t * ys;
      tile22(p0, p1, cols, xt, yt, ys, nr > 1 ? 2 : 1);
      if (nr > 2) tile22(p2, p3, cols, xt, yt + 8, ys, nr - 2);
    }
    for (; t < n; t++) tileF32(p0, p1, p2, p3, cols, x + <usize>t * xRow, yr + <usize>t * ys, nr);
  }
}

/** 8 values of row p against x (xv: even or first 4, xo: the other 4): the order's one step (u x + v xo). */
@inline function step8(acc: v128, p: usize, off: usize, xv: v128, xo: v128): v128 {
  return f32x4.add(acc, f32x4.add(f32x4.mul(v128.load(p + off), xv), f32x4.mul(v128.load(p + off + 16), xo)));
}

/**
 * Rows p0..p3 . token x into y[r] for r < nr. One token at a time: two (4 rows x 2 tokens) measured 1.1-1.2x
 * the time (in-process A/B), its 8 accumulators and 4 x vectors spilling. 16 values per iteration with
 * pointers advanced (loads take constant offsets).
 */
@inline function tileF32(p0: usize, p1: usize, p2: usize, p3: usize, cols: i32, x: usize, y: usize, nr: i32): void {
  const c8 = <usize>(cols & ~7);
  const end = x + (c8 << 2);
  const end16 = x + ((c8 & ~15) << 2);
  let f0 = f32x4.splat(0), f1 = f32x4.splat(0), f2 = f32x4.splat(0), f3 = f32x4.splat(0);
  let q0 = p0, q1 = p1, q2 = p2, q3 = p3;
  let xp = x;
  for (; xp < end16; xp += 64) {
    const xv = v128.load(xp), xo = v128.load(xp, 16);
    f0 = step8(f0, q0, 0, xv, xo);
    f1 = step8(f1, q1, 0, xv, xo);
    f2 = step8(f2, q2, 0, xv, xo);
    f3 = step8(f3, q3, 0, xv, xo);
    const xw = v128.load(xp, 32), xq = v128.load(xp, 48);
    f0 = step8(f0, q0, 32, xw, xq);
    f1 = step8(f1, q1, 32, xw, xq);
    f2 = step8(f2, q2, 32, xw, xq);
    f3 = step8(f3, q3, 32, xw, xq);
    q0 += 64; q1 += 64; q2 += 64; q3 += 64;
  }
  if (xp < end) {
    const xv = v128.load(xp), xo = v128.load(xp, 16);
    f0 = step8(f0, q0, 0, xv, xo);
    f1 = step8(f1, q1, 0, xv, xo);
    f2 = step8(f2, q2, 0, xv, xo);
    f3 = step8(f3, q3, 0, xv, xo);
  }
  storeRows(withTail(hsum4(f0, f1, f2, f3), p0, p1, p2, p3, cols, x), y, nr);
}

/** Rows p0, p1 . tokens x, x + cols into y[0..nr) and y + ys: 2 rows x 2 tokens, 4 accumulators (no spills). */
@inline function tile22(p0: usize, p1: usize, cols: i32, x: usize, y: usize, ys: usize, nr: i32): void {
  const c8 = <usize>(cols & ~7);
  const xb = x + (<usize>cols << 2);
  const end = x + (c8 << 2);
  let f0 = f32x4.splat(0), f1 = f32x4.splat(0), h0 = f32x4.splat(0), h1 = f32x4.splat(0);
  let q0 = p0, q1 = p1, xa = x, xc = xb;
  for (; xa < end; xa += 32) {
    const xv = v128.load(xa), xo = v128.load(xa, 16), xw = v128.load(xc), xp = v128.load(xc, 16);
    const u0 = v128.load(q0), v0 = v128.load(q0, 16), u1 = v128.load(q1), v1 = v128.load(q1, 16);
    f0 = f32x4.add(f0, f32x4.add(f32x4.mul(u0, xv), f32x4.mul(v0, xo)));
    f1 = f32x4.add(f1, f32x4.add(f32x4.mul(u1, xv), f32x4.mul(v1, xo)));
    h0 = f32x4.add(h0, f32x4.add(f32x4.mul(u0, xw), f32x4.mul(v0, xp)));
    h1 = f32x4.add(h1, f32x4.add(f32x4.mul(u1, xw), f32x4.mul(v1, xp)));
    q0 += 32; q1 += 32; xc += 32;
  }
  // Lanes: row 0 and row 1 of token 0, then of token 1.
  let a = hsum4(f0, f1, h0, h1);
  if (c8 < <usize>cols) a = f32x4.add(a, f32x4(tail(p0, c8, cols, x), tail(p1, c8, cols, x), tail(p0, c8, cols, xb), tail(p1, c8, cols, xb)));
  store<f32>(y, f32x4.extract_lane(a, 0));
  if (nr > 1) store<f32>(y, f32x4.extract_lane(a, 1), 4);
  store<f32>(y + ys, f32x4.extract_lane(a, 2));
  if (nr > 1) store<f32>(y + ys, f32x4.extract_lane(a, 3), 4);
}

/** s + the products of the last cols % 8 values of each row with x, summed in order (none: s itself). */
@inline function withTail(s: v128, p0: usize, p1: usize, p2: usize, p3: usize, cols: i32, x: usize): v128 {
  const c8 = <usize>(cols & ~7);
  if (c8 == <usize>cols) return s;
  return f32x4.add(s, f32x4(tail(p0, c8, cols, x), tail(p1, c8, cols, x), tail(p2, c8, cols, x), tail(p3, c8, cols, x)));
}

@inline function tail(p: usize, c8: usize, cols: i32, x: usize): f32 {
  let s: f32 = 0;
  for (let c = c8; c < <usize>cols; c++) s += load<f32>(p + (c << 2)) * load<f32>(x + (c << 2));
  return s;
}

/** Lanes 0..nr-1 of s to y[0..nr). */
@inline function storeRows(s: v128, y: usize, nr: i32): void {
  if (nr == 4) {
    v128.store(y, s);
    return;
  }
  store<f32>(y, f32x4.extract_lane(s, 0));
  if (nr > 1) store<f32>(y, f32x4.extract_lane(s, 1), 4);
  if (nr > 2) store<f32>(y, f32x4.extract_lane(s, 2), 8);
}
