// Matrix-vector (decode) and small-batch products y[t*yStride + r] = W[r, :] . x[t, :] over weights kept in
// their packed ggml bytes, one row at a time (batches of a few tokens and more run matmul_tile.ts). Each row
// is decoded once per call into an L1-sized scratch and reused by every token of the call. Two activation paths:
//  - matmulF32Act: f32 activations (the row as f32; the accurate path);
//  - matmulQ8Act: activations quantized per block to int8 (q8_0-like per 32 values, q8_K-like per 256
//    for K-quants, as llama.cpp does), integer dots on int16 lanes, one float multiply per 32 (or 16) values.
import { decodeRowI8, halfRowToF32, halfToFloat4s, i8RowToF32, T_BF16, T_F16, T_F32, T_Q6_K } from './matmul_decode';
import { halfToFloat, hsum4 } from './common';

@inline function up16(n: usize): usize {
  return (n + 15) & ~(<usize>15);
}

/** Scratch layout for rows of `cols` values: q [cols] i8 | sc [cols/16] f32 | mn [cols/16] f32 | f [cols] f32. */
@inline function scQ(s: usize): usize {
  return s;
}
@inline function scSc(s: usize, cols: i32): usize {
  return s + up16(<usize>cols);
}
@inline function scMn(s: usize, cols: i32): usize {
  return scSc(s, cols) + up16(<usize>cols >> 2);
}
@inline function scF(s: usize, cols: i32): usize {
  return scMn(s, cols) + up16(<usize>cols >> 2);
}

/** Bytes each thread's `scratch` needs for rows of `cols` values. */
export function matmulScratchBytes(cols: i32): i32 {
  return <i32>(scF(0, cols) + up16(<usize>cols << 2));
}

@inline function hsum(a: v128): f32 {
  return f32x4.extract_lane(a, 0) + f32x4.extract_lane(a, 1) + f32x4.extract_lane(a, 2) + f32x4.extract_lane(a, 3);
}

/** y[t*yStride] = f . x_t for n tokens x_t = x + t*cols floats; four tokens share each row load. */
function dotTokens(f: usize, cols: i32, x: usize, n: i32, y: usize, yStride: i32): void {
  const rb = <usize>cols << 2;
  const c4 = <usize>(cols & ~3) << 2;
  const c16 = <usize>(cols & ~15) << 2;
  const ys = <usize>yStride << 2;
  const n4 = n & ~3;
  let t = 0;
  for (; t < n4; t += 4) {
    const x0 = x + <usize>t * rb;
    const x1 = x0 + rb;
    const x2 = x1 + rb;
    const x3 = x2 + rb;
    let a0 = f32x4.splat(0);
    let a1 = f32x4.splat(0);
    let a2 = f32x4.splat(0);
    let a3 = f32x4.splat(0);
    let i: usize = 0;
    for (; i < c4; i += 16) {
      const w = v128.load(f + i);
      a0 = f32x4.add(a0, f32x4.mul(w, v128.load(x0 + i)));
      a1 = f32x4.add(a1, f32x4.mul(w, v128.load(x1 + i)));
      a2 = f32x4.add(a2, f32x4.mul(w, v128.load(x2 + i)));
      a3 = f32x4.add(a3, f32x4.mul(w, v128.load(x3 + i)));
    }
    let s = hsum4(a0, a1, a2, a3);
    for (; i < rb; i += 4) {
      const w = load<f32>(f + i);
      s = f32x4.add(s, f32x4.mul(f32x4.splat(w), f32x4(load<f32>(x0 + i), load<f32>(x1 + i), load<f32>(x2 + i), load<f32>(x3 + i))));
    }
    const o = y + <usize>t * ys;
    store<f32>(o, f32x4.extract_lane(s, 0));
    store<f32>(o + ys, f32x4.extract_lane(s, 1));
    store<f32>(o + 2 * ys, f32x4.extract_lane(s, 2));
    store<f32>(o + 3 * ys, f32x4.extract_lane(s, 3));
  }
  for (; t < n; t++) {
    // One token: four accumulators break the add chain.
    const x0 = x + <usize>t * rb;
    let a0 = f32x4.splat(0);
    let a1 = f32x4.splat(0);
    let a2 = f32x4.splat(0);
    let a3 = f32x4.splat(0);
    let i: usize = 0;
    for (; i < c16; i += 64) {
      a0 = f32x4.add(a0, f32x4.mul(v128.load(f + i), v128.load(x0 + i)));
      a1 = f32x4.add(a1, f32x4.mul(v128.load(f + i, 16), v128.load(x0 + i, 16)));
      a2 = f32x4.add(a2, f32x4.mul(v128.load(f + i, 32), v128.load(x0 + i, 32)));
      a3 = f32x4.add(a3, f32x4.mul(v128.load(f + i, 48), v128.load(x0 + i, 48)));
    }
    for (; i < c4; i += 16) a0 = f32x4.add(a0, f32x4.mul(v128.load(f + i), v128.load(x0 + i)));
    let s = hsum(f32x4.add(f32x4.add(a0, a1), f32x4.add(a2, a3)));
    for (; i < rb; i += 4) s += load<f32>(f + i) * load<f32>(x0 + i);
    store<f32>(y + <usize>t * ys, s);
  }
}

/**
 * f32 activations. w: rows x rowBytes packed bytes of ggml `type`; x: [n, cols] f32; y[t*yStride + r].
 * Float types accept any cols; quantized types need whole blocks.
 */
export function matmulF32Act(type: i32, w: usize, rowBytes: i32, rows: i32, cols: i32, x: usize, n: i32, y: usize, yStride: i32, scratch: usize): void {
  if (type == T_F16 && n == 1) {
    // Decode: convert in registers, no scratch round trip.
    for (let r = 0; r < rows; r++) store<f32>(y + (<usize>r << 2), f16Dot(w + <usize>r * rowBytes, cols, x));
    return;
  }
  const f = scF(scratch, cols);
  for (let r = 0; r < rows; r++) {
    const wr = w + <usize>r * rowBytes;
    let row = f;
    if (type == T_F32) row = wr;
    else if (type == T_F16 || type == T_BF16) halfRowToF32(type, wr, cols, f);
    else {
      const hasMin = decodeRowI8(type, wr, cols, scQ(scratch), scSc(scratch, cols), scMn(scratch, cols));
      i8RowToF32(scQ(scratch), scSc(scratch, cols), scMn(scratch, cols), hasMin, cols, f);
    }
    dotTokens(row, cols, x, n, y + (<usize>r << 2), yStride);
  }
}

/** fp16 row h [cols] . f32 x [cols]: 16 values per step into four accumulators. */
function f16Dot(h: usize, cols: i32, x: usize): f32 {
  let a0 = f32x4.splat(0);
  let a1 = f32x4.splat(0);
  let a2 = f32x4.splat(0);
  let a3 = f32x4.splat(0);
  const c16 = <usize>(cols & ~15);
  let i: usize = 0;
  for (; i < c16; i += 16) {
    const v0 = v128.load(h + (i << 1));
    const v1 = v128.load(h + (i << 1), 16);
    const xp = x + (i << 2);
    a0 = f32x4.add(a0, f32x4.mul(halfToFloat4s(i32x4.extend_low_i16x8_s(v0)), v128.load(xp)));
    a1 = f32x4.add(a1, f32x4.mul(halfToFloat4s(i32x4.extend_high_i16x8_s(v0)), v128.load(xp, 16)));
    a2 = f32x4.add(a2, f32x4.mul(halfToFloat4s(i32x4.extend_low_i16x8_s(v1)), v128.load(xp, 32)));
    a3 = f32x4.add(a3, f32x4.mul(halfToFloat4s(i32x4.extend_high_i16x8_s(v1)), v128.load(xp, 48)));
  }
  let s = hsum(f32x4.add(f32x4.add(a0, a1), f32x4.add(a2, a3)));
  for (; i < <usize>cols; i++) s += halfToFloat(<u32>load<u16>(h + (i << 1))) * load<f32>(x + (i << 2));
  return s;
}

/** 16 int8 weights (widened halves wl, wh) . 16 int8 activations -> four i32 partial sums. */
@inline function idot16(wl: v128, wh: v128, xv: v128): v128 {
  return i32x4.add(i32x4.dot_i16x8_s(wl, i16x8.extend_low_i8x16_s(xv)), i32x4.dot_i16x8_s(wh, i16x8.extend_high_i8x16_s(xv)));
}

/** sum over 16-groups g of mn[g] * xs[g] (the min term of q4_1 / q5_1 / q4_K / q5_K). */
@inline function minTerm(mn: usize, xs: usize, ng: usize): f32 {
  let a = f32x4.splat(0);
  let g: usize = 0;
  for (; g + 4 <= ng; g += 4) a = f32x4.add(a, f32x4.mul(v128.load(mn + (g << 2)), v128.load(xs + (g << 2))));
  let s = hsum(a);
  for (; g < ng; g++) s += load<f32>(mn + (g << 2)) * load<f32>(xs + (g << 2));
  return s;
}

/**
 * One decoded row (q, sc, mn) against n quantized tokens: xq [n, cols] i8, xd / xs [n, cols/16] f32 (scale,
 * sum of x as quantized). `pairs`: both 16-groups of each 32 share scales, so one float multiply per 32 values.
 */
function intTokens(q: usize, sc: usize, mn: usize, hasMin: bool, pairs: bool, cols: i32, xq: usize, xd: usize, xs: usize, n: i32, y: usize, yStride: i32): void {
  const ng = <usize>(cols >> 4);
  const qb = <usize>cols;
  const gb = ng << 2;
  const ys = <usize>yStride << 2;
  const n4 = n & ~3;
  const step: usize = pairs ? 2 : 1;
  let t = 0;
  for (; t < n4; t += 4) {
    const q0 = xq + <usize>t * qb;
    const d0 = xd + <usize>t * gb;
    let a0 = f32x4.splat(0);
    let a1 = f32x4.splat(0);
    let a2 = f32x4.splat(0);
    let a3 = f32x4.splat(0);
    for (let g: usize = 0; g < ng; g += step) {
      const o = g << 4;
      const w0 = v128.load(q + o);
      const l0 = i16x8.extend_low_i8x16_s(w0);
      const h0 = i16x8.extend_high_i8x16_s(w0);
      let p0 = idot16(l0, h0, v128.load(q0 + o));
      let p1 = idot16(l0, h0, v128.load(q0 + qb + o));
      let p2 = idot16(l0, h0, v128.load(q0 + 2 * qb + o));
      let p3 = idot16(l0, h0, v128.load(q0 + 3 * qb + o));
      if (pairs) {
        const w1 = v128.load(q + o, 16);
        const l1 = i16x8.extend_low_i8x16_s(w1);
        const h1 = i16x8.extend_high_i8x16_s(w1);
        p0 = i32x4.add(p0, idot16(l1, h1, v128.load(q0 + o, 16)));
        p1 = i32x4.add(p1, idot16(l1, h1, v128.load(q0 + qb + o, 16)));
        p2 = i32x4.add(p2, idot16(l1, h1, v128.load(q0 + 2 * qb + o, 16)));
        p3 = i32x4.add(p3, idot16(l1, h1, v128.load(q0 + 3 * qb + o, 16)));
      }
      const s = load<f32>(sc + (g << 2));
      const dg = d0 + (g << 2);
      a0 = f32x4.add(a0, f32x4.mul(f32x4.convert_i32x4_s(p0), f32x4.splat(s * load<f32>(dg))));
      a1 = f32x4.add(a1, f32x4.mul(f32x4.convert_i32x4_s(p1), f32x4.splat(s * load<f32>(dg + gb))));
      a2 = f32x4.add(a2, f32x4.mul(f32x4.convert_i32x4_s(p2), f32x4.splat(s * load<f32>(dg + 2 * gb))));
      a3 = f32x4.add(a3, f32x4.mul(f32x4.convert_i32x4_s(p3), f32x4.splat(s * load<f32>(dg + 3 * gb))));
    }
    let r = hsum4(a0, a1, a2, a3);
    if (hasMin) {
      const s0 = xs + <usize>t * gb;
      r = f32x4.add(r, f32x4(minTerm(mn, s0, ng), minTerm(mn, s0 + gb, ng), minTerm(mn, s0 + 2 * gb, ng), minTerm(mn, s0 + 3 * gb, ng)));
    }
    const yo = y + <usize>t * ys;
    store<f32>(yo, f32x4.extract_lane(r, 0));
    store<f32>(yo + ys, f32x4.extract_lane(r, 1));
    store<f32>(yo + 2 * ys, f32x4.extract_lane(r, 2));
    store<f32>(yo + 3 * ys, f32x4.extract_lane(r, 3));
  }
  for (; t < n; t++) {
    const q0 = xq + <usize>t * qb;
    const d0 = xd + <usize>t * gb;
    let a0 = f32x4.splat(0);
    let a1 = f32x4.splat(0);
    for (let g: usize = 0; g < ng; g += step) {
      const o = g << 4;
      const w0 = v128.load(q + o);
      let p = idot16(i16x8.extend_low_i8x16_s(w0), i16x8.extend_high_i8x16_s(w0), v128.load(q0 + o));
      if (pairs) {
        const w1 = v128.load(q + o, 16);
        p = i32x4.add(p, idot16(i16x8.extend_low_i8x16_s(w1), i16x8.extend_high_i8x16_s(w1), v128.load(q0 + o, 16)));
      }
      const m = f32x4.mul(f32x4.convert_i32x4_s(p), f32x4.splat(load<f32>(sc + (g << 2)) * load<f32>(d0 + (g << 2))));
      // Alternate accumulators so consecutive groups do not wait on one add chain.
      if (g & 2) a1 = f32x4.add(a1, m);
      else a0 = f32x4.add(a0, m);
    }
    let r = hsum(f32x4.add(a0, a1));
    if (hasMin) r += minTerm(mn, xs + <usize>t * gb, ng);
    store<f32>(y + <usize>t * ys, r);
  }
}

/**
 * Quantized activations (from quantizeActs with the block size actsBlock(type)). w as matmulF32Act;
 * xq [n, cols] i8, xd / xs [n, cols/16] f32; y[t*yStride + r]. Quantized weight types only.
 */
export function matmulQ8Act(type: i32, w: usize, rowBytes: i32, rows: i32, cols: i32, xq: usize, xd: usize, xs: usize, n: i32, y: usize, yStride: i32, scratch: usize): void {
  const pairs = type != T_Q6_K;
  const q = scQ(scratch);
  const sc = scSc(scratch, cols);
  const mn = scMn(scratch, cols);
  for (let r = 0; r < rows; r++) {
    const hasMin = decodeRowI8(type, w + <usize>r * rowBytes, cols, q, sc, mn);
    intTokens(q, sc, mn, hasMin, pairs, cols, xq, xd, xs, n, y + (<usize>r << 2), yStride);
  }
}

/**
 * x [n, cols] f32 -> xq [n, cols] i8 with one scale amax/127 per qb values (32 or 256; cols % qb == 0),
 * stored per 16 values in xd [n, cols/16]; xs [n, cols/16] gets each 16 values' sum as quantized (d * sum q).
 */
export function quantizeActs(x: usize, n: i32, cols: i32, qb: i32, xq: usize, xd: usize, xs: usize): void {
  const ng = <usize>(cols >> 4);
  for (let t = 0; t < n; t++) {
    const xr = x + ((<usize>t * cols) << 2);
    const qr = xq + <usize>t * cols;
    const dr = xd + ((<usize>t * ng) << 2);
    const sr = xs + ((<usize>t * ng) << 2);
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
        v128.store(qr + b0 + i, i8x16.narrow_i16x8_s(i16x8.narrow_i32x4_s(i0, i1), i16x8.narrow_i32x4_s(i2, i3)));
        const g = (b0 + i) >> 4;
        store<f32>(dr + (g << 2), d);
        // The sum as quantized (d * sum q), as packActQ8 (matmul_tile.ts) says why.
        const si = i32x4.add(i32x4.add(i0, i1), i32x4.add(i2, i3));
        store<f32>(sr + (g << 2), d * <f32>(i32x4.extract_lane(si, 0) + i32x4.extract_lane(si, 1) + i32x4.extract_lane(si, 2) + i32x4.extract_lane(si, 3)));
      }
    }
  }
}
