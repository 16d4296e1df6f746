// q4_0 V accumulation straight from the packed bytes: acc[r, c] += w[r, t] * (n - 8) * d_t, no decoded tile.
// Lane j of a block's 16 code bytes (as i32x4, nibbles xor 8) holds elements e(j, k) = 4j + (k >> 1) + 16 (k & 1)
// at nibble k (q4_0_scores.ts); a pass takes nibbles k = 2m, 2m+1 (8 channels) of one block for R rows, so
// each unpacked vector feeds R rows, and keeps their accumulators in that permuted order in registers.
import { halfToFloat, madd } from '../shared/common';

const QK = 32;
const BB: usize = 18;
/** Floats of block scales staged in the tile per run of tokens (16 KiB: every caller reserves tileBytes(D) >= that). */
const SCALES: i32 = 4096;

/** Nibble k of every lane of L (nibbles xor 8) as the f32 value n - 8, times d: the reference's exact (n - 8) * d. */
@inline function level(L: v128, k: i32, d: v128): v128 {
  const top = k == 7 ? L : i32x4.shl(L, 28 - 4 * k);
  return f32x4.mul(f32x4.convert_i32x4_s(i32x4.shr_s(top, 28)), d);
}

/** acc lanes e(0..3, k) of a block at ab (natural channel order in memory). */
@inline function loadLanes(ab: usize, k: i32): v128 {
  const p = ab + (<usize>((k >> 1) + ((k & 1) << 4)) << 2);
  return f32x4(load<f32>(p), load<f32>(p, 16), load<f32>(p, 32), load<f32>(p, 48));
}

@inline function storeLanes(ab: usize, k: i32, v: v128): void {
  const p = ab + (<usize>((k >> 1) + ((k & 1) << 4)) << 2);
  store<f32>(p, f32x4.extract_lane(v, 0));
  store<f32>(p, f32x4.extract_lane(v, 1), 16);
  store<f32>(p, f32x4.extract_lane(v, 2), 32);
  store<f32>(p, f32x4.extract_lane(v, 3), 48);
}

/**
 * Nibbles 2m, 2m+1 of block ib over tokens [0, n) for R rows (1..4, a constant after inlining): each row adds
 * w * x token by token in position order (what axpyRows did over the decoded tile), whatever R is.
 */
@inline function pass(R: i32, m: i32, w: usize, ws: usize, ib: i32, nb: i32, v: usize, rb: usize, n: i32, scales: usize, acc: usize, rowB: usize): void {
  const ab = acc + (<usize>ib << 7);
  let a0 = loadLanes(ab, 2 * m);
  let b0 = loadLanes(ab, 2 * m + 1);
  let a1 = f32x4.splat(0);
  let b1 = f32x4.splat(0);
  let a2 = f32x4.splat(0);
  let b2 = f32x4.splat(0);
  let a3 = f32x4.splat(0);
  let b3 = f32x4.splat(0);
  if (R > 1) { a1 = loadLanes(ab + rowB, 2 * m); b1 = loadLanes(ab + rowB, 2 * m + 1); }
  if (R > 2) { a2 = loadLanes(ab + 2 * rowB, 2 * m); b2 = loadLanes(ab + 2 * rowB, 2 * m + 1); }
  if (R > 3) { a3 = loadLanes(ab + 3 * rowB, 2 * m); b3 = loadLanes(ab + 3 * rowB, 2 * m + 1); }
  let p = v + <usize>ib * BB;
  let s = scales + (<usize>ib << 2);
  const sb = <usize>nb << 2;
  let wt = w;
  for (let t = 0; t < n; t++) {
    const L = v128.xor(v128.load(p + 2), i32x4.splat(0x88888888));
    const d = v128.load32_splat(s);
    const x0 = level(L, 2 * m, d);
    const x1 = level(L, 2 * m + 1, d);
    const w0 = v128.load32_splat(wt);
    a0 = madd(w0, x0, a0);
    b0 = madd(w0, x1, b0);
    if (R > 1) {
      const w1 = v128.load32_splat(wt + ws);
      a1 = madd(w1, x0, a1);
      b1 = madd(w1, x1, b1);
    }
    if (R > 2) {
      const w2 = v128.load32_splat(wt + 2 * ws);
      a2 = madd(w2, x0, a2);
      b2 = madd(w2, x1, b2);
    }
    if (R > 3) {
      const w3 = v128.load32_splat(wt + 3 * ws);
      a3 = madd(w3, x0, a3);
      b3 = madd(w3, x1, b3);
    }
    p += rb;
    s += sb;
    wt += 4;
  }
  storeLanes(ab, 2 * m, a0);
  storeLanes(ab, 2 * m + 1, b0);
  if (R > 1) { storeLanes(ab + rowB, 2 * m, a1); storeLanes(ab + rowB, 2 * m + 1, b1); }
  if (R > 2) { storeLanes(ab + 2 * rowB, 2 * m, a2); storeLanes(ab + 2 * rowB, 2 * m + 1, b2); }
  if (R > 3) { storeLanes(ab + 3 * rowB, 2 * m, a3); storeLanes(ab + 3 * rowB, 2 * m + 1, b3); }
}

/** The four passes of block ib (shift counts constant in each). */
@inline function block(R: i32, w: usize, ws: usize, ib: i32, nb: i32, v: usize, rb: usize, n: i32, scales: usize, acc: usize, rowB: usize): void {
  pass(R, 0, w, ws, ib, nb, v, rb, n, scales, acc, rowB);
  pass(R, 1, w, ws, ib, nb, v, rb, n, scales, acc, rowB);
  pass(R, 2, w, ws, ib, nb, v, rb, n, scales, acc, rowB);
  pass(R, 3, w, ws, ib, nb, v, rb, n, scales, acc, rowB);
}

/** acc [G, D] += w [G, wStride] x V rows [T, D] q4_0; tile: scratch for the block scales of a run of tokens. */
export function q4_0_accum(w: usize, wStride: i32, G: i32, D: i32, v: usize, T: i32, acc: usize, tile: usize): void {
  const nb = D / QK;
  const rb = <usize>nb * BB;
  const rowB = <usize>D << 2;
  const ws = <usize>wStride << 2;
  const TT = max(1, SCALES / nb);
  const G4 = G & ~3;
  const rest = G - G4;
  for (let t0 = 0; t0 < T; t0 += TT) {
    const n = min(TT, T - t0);
    const vt = v + <usize>t0 * rb;
    // Block scales as f32 once per token, for every pass and row.
    for (let t = 0; t < n; t++) {
      for (let ib = 0; ib < nb; ib++) store<f32>(tile + (<usize>(t * nb + ib) << 2), halfToFloat(load<u16>(vt + <usize>t * rb + <usize>ib * BB)));
    }
    const wt = w + (<usize>t0 << 2);
    for (let ib = 0; ib < nb; ib++) {
      for (let r = 0; r < G4; r += 4) block(4, wt + <usize>r * ws, ws, ib, nb, vt, rb, n, tile, acc + <usize>r * rowB, rowB);
      const wr = wt + <usize>G4 * ws;
      const ar = acc + <usize>G4 * rowB;
      if (rest == 3) block(3, wr, ws, ib, nb, vt, rb, n, tile, ar, rowB);
      else if (rest == 2) block(2, wr, ws, ib, nb, vt, rb, n, tile, ar, rowB);
      else if (rest == 1) block(1, wr, ws, ib, nb, vt, rb, n, tile, ar, rowB);
    }
  }
}
