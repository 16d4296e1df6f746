// Exact formats: f32, f16, bf16. Encode (bit-exact to src/formats), scores and weighted sums for G heads.
import { dotRows, axpyRows, halfToFloat4, hsum4, hsumPairs, madd, storeRows } from '../shared/common';
import { tileTokens } from './tile';
import { halfBits4 } from '../shared/half_bits';

// ---- f32: rows are already f32, kernels read the packed bytes in place.

export function f32_encode(src: usize, srcStride: i32, T: i32, D: i32, dst: usize): void {
  const rb = <usize>D << 2;
  for (let t = 0; t < T; t++) memory.copy(dst + <usize>t * rb, src + ((<usize>t * srcStride) << 2), rb);
}

export function f32_decode(src: usize, T: i32, D: i32, dst: usize): void {
  memory.copy(dst, src, (<usize>T * D) << 2);
}

export function f32_scores(q: usize, G: i32, D: i32, k: usize, T: i32, out: usize, outStride: i32, tile: usize): void {
  dotRows(q, G, D, k, T, <usize>D << 2, out, outStride);
}

export function f32_accum(w: usize, wStride: i32, G: i32, D: i32, v: usize, T: i32, acc: usize, tile: usize): void {
  const TT = tileTokens(D);
  const rb = <usize>D << 2;
  // Tiles of TT rows, each first touched line by line in address order: independent loads that pull the
  // tile in at full memory parallelism (axpyRows walks it column by column, a strided pattern the
  // prefetchers serve badly past L3); then every head reads it from L1.
  for (let t0 = 0; t0 < T; t0 += TT) {
    const n = min(TT, T - t0);
    const src = v + <usize>t0 * rb;
    const end = src + <usize>n * rb;
    let touch: i32 = 0;
    for (let p = src; p < end; p += 64) touch |= load<i32>(p);
    store<i32>(tile, touch);
    axpyRows(w + (<usize>t0 << 2), wStride, G, D, src, n, rb, acc);
  }
}

// ---- f16: 8 halves per 16-byte load. Scores and weighted sums read the halves in place: a half's bits
// moved into f32 position are its value x 2^-112 (exact), and q and the softmax weights carry the 2^112, so
// every product is the reference's own. Inf/NaN read as large finite values.

export function f16_encode(src: usize, srcStride: i32, T: i32, D: i32, dst: usize): void {
  // D % 16 == 0 (wasm-ops checks it): 8 values per step.
  for (let t = 0; t < T; t++) {
    const s = src + ((<usize>t * srcStride) << 2);
    const d = dst + ((<usize>t * D) << 1);
    for (let c = 0; c < D; c += 8) {
      const p = s + (<usize>c << 2);
      v128.store(d + (<usize>c << 1), i16x8.narrow_i32x4_u(halfBits4(v128.load(p)), halfBits4(v128.load(p, 16))));
    }
  }
}

@inline function f16Decode(src: usize, T: i32, D: i32, dst: usize): void {
  const n = <usize>T * D;
  for (let i: usize = 0; i < n; i += 8) {
    const h = v128.load(src + (i << 1));
    v128.store(dst + (i << 2), halfToFloat4(i32x4.extend_low_i16x8_u(h)));
    v128.store(dst + (i << 2), halfToFloat4(i32x4.extend_high_i16x8_u(h)), 16);
  }
}

export function f16_decode(src: usize, T: i32, D: i32, dst: usize): void {
  f16Decode(src, T, D, dst);
}

/** Largest |q| or |w| the scaled path takes: x * 2^112 stays finite below 2^16. */
const SCALED_MAX: f32 = 65536;
/** 2^112 (exact): q and the softmax weights carry it, so a product with a half read as 2^-112 x its value is exact. */
const UP: f32 = reinterpret<f32>(0x77800000);

/**
 * Four halves (the low / high four of eight u16 lanes) as f32 with value half x 2^-112: sign-extended, the
 * bits shifted into f32 position and the three copies of the sign above the exponent cleared. Exact for
 * normals and subnormals; Inf/NaN read as 65536 x 2^-112 and up, as halfToFloat4's large finite values.
 */
@inline function halfLow(h: v128): v128 {
  return v128.and(i32x4.shl(i32x4.extend_low_i16x8_s(h), 13), i32x4.splat(0x8fffe000));
}
@inline function halfHigh(h: v128): v128 {
  return v128.and(i32x4.shl(i32x4.extend_high_i16x8_s(h), 13), i32x4.splat(0x8fffe000));
}

/** max |x| over n f32 values at p (NaN ignored: it stays NaN whichever path reads it). */
@inline function maxAbs(p: usize, n: i32, stride: usize, rows: i32): f32 {
  let m = f32x4.splat(0);
  for (let r = 0; r < rows; r++) {
    const row = p + <usize>r * stride;
    let i = 0;
    for (; i + 4 <= n; i += 4) m = f32x4.pmax(m, f32x4.abs(v128.load(row + (<usize>i << 2))));
    for (; i < n; i++) m = f32x4.pmax(m, f32x4.splat(abs<f32>(load<f32>(row + (<usize>i << 2)))));
  }
  return max(max(f32x4.extract_lane(m, 0), f32x4.extract_lane(m, 1)), max(f32x4.extract_lane(m, 2), f32x4.extract_lane(m, 3)));
}

/** Halves as f32: x 2^-112 when scaled (the fast path), exact otherwise (for q or weights of 2^16 and up). */
@inline function halvesLow(h: v128, scaled: bool): v128 {
  return scaled ? halfLow(h) : halfToFloat4(i32x4.extend_low_i16x8_u(h));
}
@inline function halvesHigh(h: v128, scaled: bool): v128 {
  return scaled ? halfHigh(h) : halfToFloat4(i32x4.extend_high_i16x8_u(h));
}

/**
 * Scores of R rows (1..4, a constant after inlining) of q at qs (rows rowB apart; x 2^112 when scaled)
 * against half row k. Both forms make the same products in the same order, so a row's score has the same bits.
 */
@inline function dotHalfRow(R: i32, scaled: bool, qs: usize, rowB: usize, k: usize, D: i32, out: usize, os: usize): void {
  let a0 = f32x4.splat(0);
  let a1 = f32x4.splat(0);
  let a2 = f32x4.splat(0);
  let a3 = f32x4.splat(0);
  const kb = <usize>D << 1;
  for (let i: usize = 0; i < kb; i += 16) {
    const h = v128.load(k + i);
    const lo = halvesLow(h, scaled);
    const hi = halvesHigh(h, scaled);
    const o = qs + (i << 1);
    // Each row's lanes in dotRows' order: channels c..c+3, then c+4..c+7.
    a0 = madd(v128.load(o), lo, a0);
    a0 = madd(v128.load(o, 16), hi, a0);
    if (R > 1) { a1 = madd(v128.load(o + rowB), lo, a1); a1 = madd(v128.load(o + rowB, 16), hi, a1); }
    if (R > 2) { a2 = madd(v128.load(o + 2 * rowB), lo, a2); a2 = madd(v128.load(o + 2 * rowB, 16), hi, a2); }
    if (R > 3) { a3 = madd(v128.load(o + 3 * rowB), lo, a3); a3 = madd(v128.load(o + 3 * rowB, 16), hi, a3); }
  }
  storeRows(R, hsum4(a0, a1, a2, a3), out, os);
}

/**
 * dotHalfRow for two half rows at once (k and k + kb, scores at out and out + 4): each (row, token) keeps its
 * own chain in dotHalfRow's order, so the bits are the same. One chain a row took two dependent multiply-adds
 * a pass and ran at their latency; two tokens share each q load and double the chains in flight.
 */
@inline function dotHalfRow2(R: i32, scaled: bool, qs: usize, rowB: usize, k: usize, D: i32, out: usize, os: usize): void {
  // R is 1-3 (the rows a four-row pass leaves).
  let a0 = f32x4.splat(0);
  let a1 = f32x4.splat(0);
  let a2 = f32x4.splat(0);
  let b0 = f32x4.splat(0);
  let b1 = f32x4.splat(0);
  let b2 = f32x4.splat(0);
  const kb = <usize>D << 1;
  for (let i: usize = 0; i < kb; i += 16) {
    const h = v128.load(k + i);
    const g = v128.load(k + kb + i);
    const lo = halvesLow(h, scaled);
    const hi = halvesHigh(h, scaled);
    const lo2 = halvesLow(g, scaled);
    const hi2 = halvesHigh(g, scaled);
    const o = qs + (i << 1);
    let x = v128.load(o);
    a0 = madd(x, lo, a0);
    b0 = madd(x, lo2, b0);
    x = v128.load(o, 16);
    a0 = madd(x, hi, a0);
    b0 = madd(x, hi2, b0);
    if (R > 1) { x = v128.load(o + rowB); a1 = madd(x, lo, a1); b1 = madd(x, lo2, b1); x = v128.load(o + rowB, 16); a1 = madd(x, hi, a1); b1 = madd(x, hi2, b1); }
    if (R > 2) { x = v128.load(o + 2 * rowB); a2 = madd(x, lo, a2); b2 = madd(x, lo2, b2); x = v128.load(o + 2 * rowB, 16); a2 = madd(x, hi, a2); b2 = madd(x, hi2, b2); }
  }
  const z = f32x4.splat(0);
  storeRows(R, hsum4(a0, a1, a2, z), out, os);
  storeRows(R, hsum4(b0, b1, b2, z), out + 4, os);
}

/** Scores of rows [0, nr) of q at qs (rows rowB apart) against T half rows at k. */
@inline function dotHalfRows(scaled: bool, qs: usize, nr: i32, rowB: usize, k: usize, T: i32, D: i32, out: usize, os: usize): void {
  const kb = <usize>D << 1;
  const nr4 = nr & ~3;
  const rest = nr - nr4;
  for (let t = 0; t < T; t++) {
    const kt = k + <usize>t * kb;
    const ot = out + (<usize>t << 2);
    for (let r = 0; r < nr4; r += 4) dotHalfRow(4, scaled, qs + <usize>r * rowB, rowB, kt, D, ot + <usize>r * os, os);
  }
  if (rest == 0) return;
  // The last 1-3 rows two tokens a pass (four rows a pass hold 8 chains already: two tokens of them spilled, 1.03-1.07x).
  const qr = qs + <usize>nr4 * rowB;
  const or = out + <usize>nr4 * os;
  let t = 0;
  for (; t + 2 <= T; t += 2) {
    const kt = k + <usize>t * kb;
    const ot = or + (<usize>t << 2);
    if (rest == 3) dotHalfRow2(3, scaled, qr, rowB, kt, D, ot, os);
    else if (rest == 2) dotHalfRow2(2, scaled, qr, rowB, kt, D, ot, os);
    else dotHalfRow2(1, scaled, qr, rowB, kt, D, ot, os);
  }
  if (t < T) {
    const kt = k + <usize>t * kb;
    const ot = or + (<usize>t << 2);
    if (rest == 3) dotHalfRow(3, scaled, qr, rowB, kt, D, ot, os);
    else if (rest == 2) dotHalfRow(2, scaled, qr, rowB, kt, D, ot, os);
    else dotHalfRow(1, scaled, qr, rowB, kt, D, ot, os);
  }
}

/**
 * R (1 or 2) rows of q at q (rows rowB apart) x four f32 K rows at kt (rowB apart): scores at out (row 2 at
 * out + os), four tokens in one store. Each (row, token) keeps one chain over 4-channel steps in dotHalfRow's
 * order, and hsum4 reduces its lanes as there: the fused kernel's bits.
 */
@inline function tileRowsPass(R: i32, q: usize, rowB: usize, kt: usize, out: usize, os: usize): void {
  let a0 = f32x4.splat(0);
  let a1 = f32x4.splat(0);
  let a2 = f32x4.splat(0);
  let a3 = f32x4.splat(0);
  let b0 = f32x4.splat(0);
  let b1 = f32x4.splat(0);
  let b2 = f32x4.splat(0);
  let b3 = f32x4.splat(0);
  // (Two 4-channel steps a pass, written out, ran 1.0-1.3x the time: V8 hoisted the loads and spilled.)
  for (let i: usize = 0; i < rowB; i += 16) {
    const x = v128.load(q + i);
    const y = R > 1 ? v128.load(q + rowB + i) : x;
    let v = v128.load(kt + i);
    a0 = madd(x, v, a0);
    if (R > 1) b0 = madd(y, v, b0);
    v = v128.load(kt + rowB + i);
    a1 = madd(x, v, a1);
    if (R > 1) b1 = madd(y, v, b1);
    v = v128.load(kt + 2 * rowB + i);
    a2 = madd(x, v, a2);
    if (R > 1) b2 = madd(y, v, b2);
    v = v128.load(kt + 3 * rowB + i);
    a3 = madd(x, v, a3);
    if (R > 1) b3 = madd(y, v, b3);
  }
  v128.store(out, hsum4(a0, a1, a2, a3));
  if (R > 1) v128.store(out + os, hsum4(b0, b1, b2, b3));
}

/** One row of q x one f32 K row: tileRowsPass's chain and lane sum for a single token. */
@inline function tileRow1(q: usize, rowB: usize, kt: usize, out: usize): void {
  let a = f32x4.splat(0);
  for (let i: usize = 0; i < rowB; i += 16) a = madd(v128.load(q + i), v128.load(kt + i), a);
  store<f32>(out, hsumPairs(a));
}

/**
 * Rows from which f16_scores decodes K into the tile (prefill units, ~64 rows) rather than reading the halves in
 * place (decode, G rows): the tiled form took 0.62-0.77x the time at 63-64 rows, 0.88x at 32, 1.06x at 16, 1.5x at 8.
 */
const TILED_ROWS = 32;

/**
 * Scores of G rows (q as it is) against T half rows: tileTokens(D) K rows at a time decoded to their exact f32
 * values in the tile, then two rows by four tokens a pass (8 chains in flight; the fused loop holds 4, each
 * two dependent multiply-adds a pass). The products are the fused kernel's (its scaled q x scaled halves is the
 * same real product), so are the bits.
 */
function f16ScoresTiled(q: usize, G: i32, D: i32, k: usize, T: i32, out: usize, os: usize, tile: usize): void {
  const rowB = <usize>D << 2;
  const kb = <usize>D << 1;
  const TT = tileTokens(D);
  for (let t0 = 0; t0 < T; t0 += TT) {
    const n = min(TT, T - t0);
    f16Decode(k + <usize>t0 * kb, n, D, tile);
    const n4 = n & ~3;
    const ot = out + (<usize>t0 << 2);
    let r = 0;
    for (; r + 2 <= G; r += 2) {
      const qr = q + <usize>r * rowB;
      const orow = ot + <usize>r * os;
      for (let t = 0; t < n4; t += 4) tileRowsPass(2, qr, rowB, tile + <usize>t * rowB, orow + (<usize>t << 2), os);
      for (let t = n4; t < n; t++) {
        tileRow1(qr, rowB, tile + <usize>t * rowB, orow + (<usize>t << 2));
        tileRow1(qr + rowB, rowB, tile + <usize>t * rowB, orow + os + (<usize>t << 2));
      }
    }
    if (r < G) {
      const qr = q + <usize>r * rowB;
      const orow = ot + <usize>r * os;
      for (let t = 0; t < n4; t += 4) tileRowsPass(1, qr, rowB, tile + <usize>t * rowB, orow + (<usize>t << 2), os);
      for (let t = n4; t < n; t++) tileRow1(qr, rowB, tile + <usize>t * rowB, orow + (<usize>t << 2));
    }
  }
}

export function f16_scores(q: usize, G: i32, D: i32, k: usize, T: i32, out: usize, outStride: i32, tile: usize): void {
  const rowB = <usize>D << 2;
  const os = <usize>outStride << 2;
  if (G >= TILED_ROWS) return f16ScoresTiled(q, G, D, k, T, out, os, tile);
  // |q| >= 2^16 somewhere (never from a model's attention): exact halves, q as it is.
  if (!(maxAbs(q, D, rowB, G) < SCALED_MAX)) return dotHalfRows(false, q, G, rowB, k, T, D, out, os);
  // Rows in chunks whose scaled q fills the tile (16 KiB); every K row is read straight from its halves.
  const TT = tileTokens(D);
  for (let g0 = 0; g0 < G; g0 += TT) {
    const nr = min(TT, G - g0);
    const src = q + <usize>g0 * rowB;
    for (let i: usize = 0; i < <usize>nr * rowB; i += 16) v128.store(tile + i, f32x4.mul(v128.load(src + i), f32x4.splat(UP)));
    dotHalfRows(true, tile, nr, rowB, k, T, D, out + <usize>g0 * os, os);
  }
}

/**
 * Channels c..c+7 of R rows (1..4, constant after inlining) over n tokens: acc += w' x v', w' the scaled
 * weights (rows wsB apart), v' the halves at v (rows kb apart), token by token in position order.
 */
@inline function accHalfPass(R: i32, scaled: bool, w: usize, wsB: usize, v: usize, kb: usize, n: i32, acc: usize, rowB: usize): void {
  let a0 = v128.load(acc);
  let b0 = v128.load(acc, 16);
  let a1 = f32x4.splat(0);
  let b1 = f32x4.splat(0);
  let a2 = f32x4.splat(0);
  let b2 = f32x4.splat(0);
  let a3 = f32x4.splat(0);
  let b3 = f32x4.splat(0);
  if (R > 1) { a1 = v128.load(acc + rowB); b1 = v128.load(acc + rowB, 16); }
  if (R > 2) { a2 = v128.load(acc + 2 * rowB); b2 = v128.load(acc + 2 * rowB, 16); }
  if (R > 3) { a3 = v128.load(acc + 3 * rowB); b3 = v128.load(acc + 3 * rowB, 16); }
  let p = v;
  let wt = w;
  for (let t = 0; t < n; t++) {
    const h = v128.load(p);
    const x0 = halvesLow(h, scaled);
    const x1 = halvesHigh(h, scaled);
    const w0 = v128.load32_splat(wt);
    a0 = madd(w0, x0, a0);
    b0 = madd(w0, x1, b0);
    if (R > 1) { const w1 = v128.load32_splat(wt + wsB); a1 = madd(w1, x0, a1); b1 = madd(w1, x1, b1); }
    if (R > 2) { const w2 = v128.load32_splat(wt + 2 * wsB); a2 = madd(w2, x0, a2); b2 = madd(w2, x1, b2); }
    if (R > 3) { const w3 = v128.load32_splat(wt + 3 * wsB); a3 = madd(w3, x0, a3); b3 = madd(w3, x1, b3); }
    p += kb;
    wt += 4;
  }
  v128.store(acc, a0);
  v128.store(acc, b0, 16);
  if (R > 1) { v128.store(acc + rowB, a1); v128.store(acc + rowB, b1, 16); }
  if (R > 2) { v128.store(acc + 2 * rowB, a2); v128.store(acc + 2 * rowB, b2, 16); }
  if (R > 3) { v128.store(acc + 3 * rowB, a3); v128.store(acc + 3 * rowB, b3, 16); }
}

/** Rows [0, G) of weights w (rows wsB apart) over n half rows at v, pass by pass. */
@inline function accHalfRows(scaled: bool, w: usize, wsB: usize, G: i32, v: usize, n: i32, D: i32, acc: usize): void {
  const rowB = <usize>D << 2;
  const kb = <usize>D << 1;
  const G4 = G & ~3;
  const rest = G - G4;
  for (let c: usize = 0; c < <usize>D; c += 8) {
    const vc = v + (c << 1);
    const ac = acc + (c << 2);
    for (let r = 0; r < G4; r += 4) accHalfPass(4, scaled, w + <usize>r * wsB, wsB, vc, kb, n, ac + <usize>r * rowB, rowB);
    const wr = w + <usize>G4 * wsB;
    const ar = ac + <usize>G4 * rowB;
    if (rest == 3) accHalfPass(3, scaled, wr, wsB, vc, kb, n, ar, rowB);
    else if (rest == 2) accHalfPass(2, scaled, wr, wsB, vc, kb, n, ar, rowB);
    else if (rest == 1) accHalfPass(1, scaled, wr, wsB, vc, kb, n, ar, rowB);
  }
}

export function f16_accum(w: usize, wStride: i32, G: i32, D: i32, v: usize, T: i32, acc: usize, tile: usize): void {
  if (G <= 0 || T <= 0) return;
  const kb = <usize>D << 1;
  const wsB = <usize>wStride << 2;
  // A weight of 2^16 or more (softmax weights are <= 1: never from attend): exact halves, weights as they are.
  if (!(maxAbs(w, T, wsB, G) < SCALED_MAX)) return accHalfRows(false, w, wsB, G, v, T, D, acc);
  // Runs of TT tokens: their scaled weights [G, TT] fill the tile, and their V rows (TT x D halves) stay in
  // L1 across the D/8 passes.
  const TT = max(1, min((tileTokens(D) * D) / G, 8192 / D));
  for (let t0 = 0; t0 < T; t0 += TT) {
    const n = min(TT, T - t0);
    for (let g = 0; g < G; g++) {
      const src = w + <usize>g * wsB + (<usize>t0 << 2);
      const dst = tile + <usize>(g * TT) * 4;
      for (let t = 0; t < n; t++) store<f32>(dst + (<usize>t << 2), load<f32>(src + (<usize>t << 2)) * UP);
    }
    accHalfRows(true, tile, <usize>TT << 2, G, v + <usize>t0 * kb, n, D, acc);
  }
}

// ---- bf16: the top 16 bits of an f32.

/** Four f32 lanes -> bf16 bits in i32 lanes, as numeric/half.ts fp32ToBf16: nearest even, NaN -> quiet NaN keeping the sign. */
@inline function bf16Bits4(x: v128): v128 {
  const hi = i32x4.shr_u(x, 16);
  const rounded = i32x4.shr_u(i32x4.add(x, i32x4.add(i32x4.splat(0x7fff), v128.and(hi, i32x4.splat(1)))), 16);
  const nan = i32x4.gt_s(v128.and(x, i32x4.splat(0x7fffffff)), i32x4.splat(0x7f800000));
  return v128.bitselect(v128.or(hi, i32x4.splat(64)), rounded, nan);
}

export function bf16_encode(src: usize, srcStride: i32, T: i32, D: i32, dst: usize): void {
  for (let t = 0; t < T; t++) {
    const s = src + ((<usize>t * srcStride) << 2);
    const d = dst + ((<usize>t * D) << 1);
    for (let c = 0; c < D; c += 8) {
      const p = s + (<usize>c << 2);
      v128.store(d + (<usize>c << 1), i16x8.narrow_i32x4_u(bf16Bits4(v128.load(p)), bf16Bits4(v128.load(p, 16))));
    }
  }
}

@inline function bf16Decode(src: usize, T: i32, D: i32, dst: usize): void {
  const n = <usize>T * D;
  for (let i: usize = 0; i < n; i += 8) {
    const h = v128.load(src + (i << 1));
    v128.store(dst + (i << 2), i32x4.shl(i32x4.extend_low_i16x8_u(h), 16));
    v128.store(dst + (i << 2), i32x4.shl(i32x4.extend_high_i16x8_u(h), 16), 16);
  }
}

export function bf16_decode(src: usize, T: i32, D: i32, dst: usize): void {
  bf16Decode(src, T, D, dst);
}

export function bf16_scores(q: usize, G: i32, D: i32, k: usize, T: i32, out: usize, outStride: i32, tile: usize): void {
  const TT = tileTokens(D);
  for (let t0 = 0; t0 < T; t0 += TT) {
    const n = min(TT, T - t0);
    bf16Decode(k + ((<usize>t0 * D) << 1), n, D, tile);
    dotRows(q, G, D, tile, n, <usize>D << 2, out + (<usize>t0 << 2), outStride);
  }
}

export function bf16_accum(w: usize, wStride: i32, G: i32, D: i32, v: usize, T: i32, acc: usize, tile: usize): void {
  const TT = tileTokens(D);
  for (let t0 = 0; t0 < T; t0 += TT) {
    const n = min(TT, T - t0);
    bf16Decode(v + ((<usize>t0 * D) << 1), n, D, tile);
    axpyRows(w + (<usize>t0 << 2), wStride, G, D, tile, n, <usize>D << 2, acc);
  }
}
