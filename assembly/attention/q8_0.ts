// q8_0 (ggml block_q8_0: f16 d + 32 x int8). Encode is float32 math, bit-exact to quantize_row_q8_0_ref.
import { floatToHalf, halfToFloat, madd } from '../shared/common';
import { FMT_Q8, scoresF32Q8, scoresInt } from './ggml_scores';

const QK = 32;
const BB: usize = 34;

/** C roundf on four lanes: truncate, then step away from zero when the dropped part is >= 0.5 (exact). */
@inline export function roundf4(y: v128): v128 {
  const t = f32x4.trunc(y);
  const away = v128.or(f32x4.splat(1.0), v128.and(y, i32x4.splat(0x80000000)));
  const up = f32x4.ge(f32x4.abs(f32x4.sub(y, t)), f32x4.splat(0.5));
  return f32x4.add(t, v128.and(up, away));
}

@inline function encodeBlock(src: usize, dst: usize): void {
  let m = f32x4.splat(0);
  for (let j: usize = 0; j < 128; j += 16) m = f32x4.max(m, f32x4.abs(v128.load(src + j)));
  const amax = max(max(f32x4.extract_lane(m, 0), f32x4.extract_lane(m, 1)), max(f32x4.extract_lane(m, 2), f32x4.extract_lane(m, 3)));
  const d: f32 = amax / 127;
  const id: f32 = d != 0 ? <f32>1 / d : 0;
  store<u16>(dst, <u16>floatToHalf(d));
  const idv = f32x4.splat(id);
  for (let j: usize = 0; j < 128; j += 64) {
    const r0 = i32x4.trunc_sat_f32x4_s(roundf4(f32x4.mul(v128.load(src + j), idv)));
    const r1 = i32x4.trunc_sat_f32x4_s(roundf4(f32x4.mul(v128.load(src + j, 16), idv)));
    const r2 = i32x4.trunc_sat_f32x4_s(roundf4(f32x4.mul(v128.load(src + j, 32), idv)));
    const r3 = i32x4.trunc_sat_f32x4_s(roundf4(f32x4.mul(v128.load(src + j, 48), idv)));
    const b = i8x16.narrow_i16x8_s(i16x8.narrow_i32x4_s(r0, r1), i16x8.narrow_i32x4_s(r2, r3));
    v128.store(dst + 2 + (j >> 2), b);
  }
}

/** T rows of D values (src row t at src + t*srcStride floats) -> T * (D/32) blocks; D % 32 == 0. */
export function q8_0_encode(src: usize, srcStride: i32, T: i32, D: i32, dst: usize): void {
  const nb = D / QK;
  for (let t = 0; t < T; t++) {
    const s = src + ((<usize>t * srcStride) << 2);
    const o = dst + <usize>t * nb * BB;
    for (let ib = 0; ib < nb; ib++) encodeBlock(s + <usize>ib * 128, o + <usize>ib * BB);
  }
}

/** T*D/32 consecutive blocks -> T*D f32 (x = q * d, the same products as dequantize_row_q8_0). */
@inline function decodeBlocks(src: usize, nb: i32, dst: usize): void {
  for (let ib = 0; ib < nb; ib++) {
    const p = src + <usize>ib * BB;
    const o = dst + (<usize>ib << 7);
    const d = f32x4.splat(halfToFloat(load<u16>(p)));
    for (let j: usize = 0; j < 32; j += 8) {
      const h = v128.load8x8_s(p + 2 + j);
      v128.store(o + (j << 2), f32x4.mul(f32x4.convert_i32x4_s(i32x4.extend_low_i16x8_s(h)), d));
      v128.store(o + (j << 2), f32x4.mul(f32x4.convert_i32x4_s(i32x4.extend_high_i16x8_s(h)), d), 16);
    }
  }
}

export function q8_0_decode(src: usize, T: i32, D: i32, dst: usize): void {
  decodeBlocks(src, T * (D / QK), dst);
}

/** Fused scores: each K block is unpacked once for up to four query heads (attention/ggml_scores.ts). */
export function q8_0_scores(q: usize, G: i32, D: i32, k: usize, T: i32, out: usize, outStride: i32, tile: usize): void {
  scoresF32Q8(q, G, D, k, T, out, outStride);
}

/** Integer-q scores (an explicit accuracy choice, see quantizeRows): qi [G, D] i16, qd [G, D/32] f32 scales. */
export function q8_0_scores_i(qi: usize, qd: usize, G: i32, D: i32, k: usize, T: i32, out: usize, outStride: i32): void {
  scoresInt(FMT_Q8, qi, qd, G, D, k, T, out, outStride);
}

/**
 * Channels c..c+7 (within block ib) of R rows (1..4, constant after inlining) over n tokens: acc += w * x,
 * x = q * d the reference's product, token by token in position order. v: the tokens' first block; scales:
 * the staged d of token t, block ib at scales + (t*nb + ib)*4.
 */
@inline function accPass(R: i32, w: usize, ws: usize, v: usize, rb: usize, n: i32, scales: usize, nb: i32, acc: usize, rowB: usize): void {
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
  let s = scales;
  const sb = <usize>nb << 2;
  let wt = w;
  for (let t = 0; t < n; t++) {
    const h = v128.load8x8_s(p);
    const d = v128.load32_splat(s);
    const x0 = f32x4.mul(f32x4.convert_i32x4_s(i32x4.extend_low_i16x8_s(h)), d);
    const x1 = f32x4.mul(f32x4.convert_i32x4_s(i32x4.extend_high_i16x8_s(h)), d);
    const w0 = v128.load32_splat(wt);
    a0 = madd(w0, x0, a0);
    b0 = madd(w0, x1, b0);
    if (R > 1) { const w1 = v128.load32_splat(wt + ws); a1 = madd(w1, x0, a1); b1 = madd(w1, x1, b1); }
    if (R > 2) { const w2 = v128.load32_splat(wt + 2 * ws); a2 = madd(w2, x0, a2); b2 = madd(w2, x1, b2); }
    if (R > 3) { const w3 = v128.load32_splat(wt + 3 * ws); a3 = madd(w3, x0, a3); b3 = madd(w3, x1, b3); }
    p += rb;
    s += sb;
    wt += 4;
  }
  v128.store(acc, a0);
  v128.store(acc, b0, 16);
  if (R > 1) { v128.store(acc + rowB, a1); v128.store(acc + rowB, b1, 16); }
  if (R > 2) { v128.store(acc + 2 * rowB, a2); v128.store(acc + 2 * rowB, b2, 16); }
  if (R > 3) { v128.store(acc + 3 * rowB, a3); v128.store(acc + 3 * rowB, b3, 16); }
}

/**
 * acc [G, D] += w [G, wStride] x V rows [T, D] q8_0, straight from the blocks: each unpacked vector feeds up to
 * four rows (no decoded tile). tile: the block scales of a run of tokens as f32, staged once per token.
 */
export function q8_0_accum(w: usize, wStride: i32, G: i32, D: i32, v: usize, T: i32, acc: usize, tile: usize): void {
  const nb = D / QK;
  const rb = <usize>nb * BB;
  const rowB = <usize>D << 2;
  const ws = <usize>wStride << 2;
  // Runs of TT tokens: their scales fill at most the tile's 4096 floats, their rows (TT x rb bytes) stay in L1.
  const TT = max(1, min(4096 / nb, 8192 / D));
  const G4 = G & ~3;
  const rest = G - G4;
  for (let t0 = 0; t0 < T; t0 += TT) {
    const n = min(TT, T - t0);
    const vt = v + <usize>t0 * rb;
    for (let t = 0; t < n; t++) {
      for (let ib = 0; ib < nb; ib++) store<f32>(tile + (<usize>(t * nb + ib) << 2), halfToFloat(load<u16>(vt + <usize>t * rb + <usize>ib * BB)));
    }
    const wt = w + (<usize>t0 << 2);
    for (let c = 0; c < D; c += 8) {
      const ib = c / QK;
      const vc = vt + <usize>ib * BB + 2 + <usize>(c - ib * QK);
      const sc = tile + (<usize>ib << 2);
      const ac = acc + (<usize>c << 2);
      for (let r = 0; r < G4; r += 4) accPass(4, wt + <usize>r * ws, ws, vc, rb, n, sc, nb, ac + <usize>r * rowB, rowB);
      const wr = wt + <usize>G4 * ws;
      const ar = ac + <usize>G4 * rowB;
      if (rest == 3) accPass(3, wr, ws, vc, rb, n, sc, nb, ar, rowB);
      else if (rest == 2) accPass(2, wr, ws, vc, rb, n, sc, nb, ar, rowB);
      else if (rest == 1) accPass(1, wr, ws, vc, rb, n, sc, nb, ar, rowB);
    }
  }
}
