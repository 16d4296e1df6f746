// q8_0 (ggml block_q8_0: f16 d + 32 x int8). Encode is float32 math, bit-exact to quantize_row_q8_0_ref.
import { axpyRows, dot4, floatToHalf, halfToFloat, hsum4, idot4, storeRows } from './common';
import { tileTokens } from './tile';

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

/** Values 4i..4i+3 of the block at p as f32 times d. */
@inline function widen(p: usize, d: v128, i: i32): v128 {
  const h = v128.load8x8_s(p + 2 + (<usize>(i >> 1) << 3));
  return f32x4.mul(f32x4.convert_i32x4_s((i & 1) == 0 ? i32x4.extend_low_i16x8_s(h) : i32x4.extend_high_i16x8_s(h)), d);
}

/** Scores of R (1..4, a constant after inlining) query rows against one K row: a block is widened once for all rows. */
@inline function rowsF32(R: i32, q0: usize, qRow: usize, kr: usize, nb: i32, o: usize, os: usize): void {
  let a0 = f32x4.splat(0);
  let a1 = f32x4.splat(0);
  let a2 = f32x4.splat(0);
  let a3 = f32x4.splat(0);
  for (let ib = 0; ib < nb; ib++) {
    const p = kr + <usize>ib * BB;
    const d = f32x4.splat(halfToFloat(load<u16>(p)));
    // Half a block (16 values) at a time: 4 values + R accumulators stay in registers.
    for (let h = 0; h < 2; h++) {
      const x0 = widen(p, d, 4 * h);
      const x1 = widen(p, d, 4 * h + 1);
      const x2 = widen(p, d, 4 * h + 2);
      const x3 = widen(p, d, 4 * h + 3);
      const qb = q0 + (<usize>ib << 7) + (<usize>h << 6);
      a0 = f32x4.add(a0, dot4(qb, x0, x1, x2, x3));
      if (R > 1) a1 = f32x4.add(a1, dot4(qb + qRow, x0, x1, x2, x3));
      if (R > 2) a2 = f32x4.add(a2, dot4(qb + 2 * qRow, x0, x1, x2, x3));
      if (R > 3) a3 = f32x4.add(a3, dot4(qb + 3 * qRow, x0, x1, x2, x3));
    }
  }
  storeRows(R, hsum4(a0, a1, a2, a3), o, os);
}

/** Fused scores for G query heads: four rows per pass and the 1-3 left over in one more. */
export function q8_0_scores(q: usize, G: i32, D: i32, k: usize, T: i32, out: usize, outStride: i32, tile: usize): void {
  const nb = D / QK;
  const rb = <usize>nb * BB;
  const qRow = <usize>D << 2;
  const os = <usize>outStride << 2;
  const G4 = G & ~3;
  const rest = G - G4;
  for (let t = 0; t < T; t++) {
    const kr = k + <usize>t * rb;
    const o = out + (<usize>t << 2);
    for (let g = 0; g < G4; g += 4) rowsF32(4, q + <usize>g * qRow, qRow, kr, nb, o + <usize>g * os, os);
    const qg = q + <usize>G4 * qRow;
    const og = o + <usize>G4 * os;
    if (rest == 3) rowsF32(3, qg, qRow, kr, nb, og, os);
    else if (rest == 2) rowsF32(2, qg, qRow, kr, nb, og, os);
    else if (rest == 1) rowsF32(1, qg, qRow, kr, nb, og, os);
  }
}

/** Integer-q rows: exact integer dot per block, one multiply by d_k * d_q. */
@inline function rowsInt(R: i32, q0: usize, d0: usize, qRow: usize, dRow: usize, kr: usize, nb: i32, o: usize, os: usize): void {
  let a0 = f32x4.splat(0);
  let a1 = f32x4.splat(0);
  let a2 = f32x4.splat(0);
  let a3 = f32x4.splat(0);
  for (let ib = 0; ib < nb; ib++) {
    const p = kr + <usize>ib * BB;
    const dk = f32x4.splat(halfToFloat(load<u16>(p)));
    const v0 = v128.load8x8_s(p + 2);
    const v1 = v128.load8x8_s(p + 10);
    const v2 = v128.load8x8_s(p + 18);
    const v3 = v128.load8x8_s(p + 26);
    const qb = q0 + (<usize>ib << 6);
    const db = d0 + (<usize>ib << 2);
    a0 = f32x4.add(a0, f32x4.mul(f32x4.convert_i32x4_s(idot4(qb, v0, v1, v2, v3)), f32x4.mul(dk, v128.load32_splat(db))));
    if (R > 1) a1 = f32x4.add(a1, f32x4.mul(f32x4.convert_i32x4_s(idot4(qb + qRow, v0, v1, v2, v3)), f32x4.mul(dk, v128.load32_splat(db + dRow))));
    if (R > 2) a2 = f32x4.add(a2, f32x4.mul(f32x4.convert_i32x4_s(idot4(qb + 2 * qRow, v0, v1, v2, v3)), f32x4.mul(dk, v128.load32_splat(db + 2 * dRow))));
    if (R > 3) a3 = f32x4.add(a3, f32x4.mul(f32x4.convert_i32x4_s(idot4(qb + 3 * qRow, v0, v1, v2, v3)), f32x4.mul(dk, v128.load32_splat(db + 3 * dRow))));
  }
  storeRows(R, hsum4(a0, a1, a2, a3), o, os);
}

/** Integer-q scores: qi [G, D] i16, qd [G, D/32] f32 (see quantizeRows); exact integer dot per block. */
export function q8_0_scores_i(qi: usize, qd: usize, G: i32, D: i32, k: usize, T: i32, out: usize, outStride: i32): void {
  const nb = D / QK;
  const rb = <usize>nb * BB;
  const qRow = <usize>D << 1;
  const dRow = <usize>nb << 2;
  const os = <usize>outStride << 2;
  const G4 = G & ~3;
  const rest = G - G4;
  for (let t = 0; t < T; t++) {
    const kr = k + <usize>t * rb;
    const o = out + (<usize>t << 2);
    for (let g = 0; g < G4; g += 4) rowsInt(4, qi + <usize>g * qRow, qd + <usize>g * dRow, qRow, dRow, kr, nb, o + <usize>g * os, os);
    const qg = qi + <usize>G4 * qRow;
    const dg = qd + <usize>G4 * dRow;
    const og = o + <usize>G4 * os;
    if (rest == 3) rowsInt(3, qg, dg, qRow, dRow, kr, nb, og, os);
    else if (rest == 2) rowsInt(2, qg, dg, qRow, dRow, kr, nb, og, os);
    else if (rest == 1) rowsInt(1, qg, dg, qRow, dRow, kr, nb, og, os);
  }
}

export function q8_0_accum(w: usize, wStride: i32, G: i32, D: i32, v: usize, T: i32, acc: usize, tile: usize): void {
  const TT = tileTokens(D);
  const nb = D / QK;
  const rb = <usize>nb * BB;
  for (let t0 = 0; t0 < T; t0 += TT) {
    const n = min(TT, T - t0);
    decodeBlocks(v + <usize>t0 * rb, n * nb, tile);
    axpyRows(w + (<usize>t0 << 2), wStride, G, D, tile, n, <usize>D << 2, acc);
  }
}
