// q4_0 (ggml block_q4_0: f16 d + 16 bytes; byte j = element j | element j+16 << 4).
// Encode is float32 math, bit-exact to quantize_row_q4_0_ref.
import { axpyRows, dot4, floatToHalf, halfToFloat, hsum4, idot4, storeRows } from './common';
import { tileTokens } from './tile';

const QK = 32;
const BB: usize = 18;

@inline function encodeBlock(src: usize, dst: usize): void {
  // The value of largest magnitude, first one on ties (ggml's strict `<` scan).
  let m = f32x4.splat(0);
  for (let j: usize = 0; j < 128; j += 16) m = f32x4.max(m, f32x4.abs(v128.load(src + j)));
  const amax = max(max(f32x4.extract_lane(m, 0), f32x4.extract_lane(m, 1)), max(f32x4.extract_lane(m, 2), f32x4.extract_lane(m, 3)));
  let mx: f32 = 0;
  if (amax > 0) {
    for (let j: usize = 0; j < 128; j += 4) {
      const v = load<f32>(src + j);
      if (abs(v) == amax) { mx = v; break; }
    }
  }
  const d: f32 = mx / -8;
  const id: f32 = d != 0 ? <f32>1 / d : 0;
  store<u16>(dst, <u16>floatToHalf(d));
  const idv = f32x4.splat(id);
  const half = f32x4.splat(8.5);
  const top = i32x4.splat(15);
  // q = min(15, trunc(x*id + 8.5)), each step a float32 op as in C.
  const l0 = i32x4.min_s(i32x4.trunc_sat_f32x4_s(f32x4.add(f32x4.mul(v128.load(src), idv), half)), top);
  const l1 = i32x4.min_s(i32x4.trunc_sat_f32x4_s(f32x4.add(f32x4.mul(v128.load(src, 16), idv), half)), top);
  const l2 = i32x4.min_s(i32x4.trunc_sat_f32x4_s(f32x4.add(f32x4.mul(v128.load(src, 32), idv), half)), top);
  const l3 = i32x4.min_s(i32x4.trunc_sat_f32x4_s(f32x4.add(f32x4.mul(v128.load(src, 48), idv), half)), top);
  const h0 = i32x4.min_s(i32x4.trunc_sat_f32x4_s(f32x4.add(f32x4.mul(v128.load(src, 64), idv), half)), top);
  const h1 = i32x4.min_s(i32x4.trunc_sat_f32x4_s(f32x4.add(f32x4.mul(v128.load(src, 80), idv), half)), top);
  const h2 = i32x4.min_s(i32x4.trunc_sat_f32x4_s(f32x4.add(f32x4.mul(v128.load(src, 96), idv), half)), top);
  const h3 = i32x4.min_s(i32x4.trunc_sat_f32x4_s(f32x4.add(f32x4.mul(v128.load(src, 112), idv), half)), top);
  const lo = i8x16.narrow_i16x8_u(i16x8.narrow_i32x4_s(l0, l1), i16x8.narrow_i32x4_s(l2, l3));
  const hi = i8x16.narrow_i16x8_u(i16x8.narrow_i32x4_s(h0, h1), i16x8.narrow_i32x4_s(h2, h3));
  v128.store(dst + 2, v128.or(lo, i8x16.shl(hi, 4)));
}

/** T rows of D values (src row t at src + t*srcStride floats) -> T * (D/32) blocks; D % 32 == 0. */
export function q4_0_encode(src: usize, srcStride: i32, T: i32, D: i32, dst: usize): void {
  const nb = D / QK;
  for (let t = 0; t < T; t++) {
    const s = src + ((<usize>t * srcStride) << 2);
    const o = dst + <usize>t * nb * BB;
    for (let ib = 0; ib < nb; ib++) encodeBlock(s + <usize>ib * 128, o + <usize>ib * BB);
  }
}

@inline function i8ToF32x4Lo(v: v128): v128 {
  return f32x4.convert_i32x4_s(i32x4.extend_low_i16x8_s(v));
}
@inline function i8ToF32x4Hi(v: v128): v128 {
  return f32x4.convert_i32x4_s(i32x4.extend_high_i16x8_s(v));
}

/** 16 signed levels (bytes) -> four f32x4 at o, times d (exact: small integer times an f16 scale). */
@inline function store16(v: v128, d: v128, o: usize): void {
  const w0 = i16x8.extend_low_i8x16_s(v);
  const w1 = i16x8.extend_high_i8x16_s(v);
  v128.store(o, f32x4.mul(f32x4.convert_i32x4_s(i32x4.extend_low_i16x8_s(w0)), d));
  v128.store(o, f32x4.mul(f32x4.convert_i32x4_s(i32x4.extend_high_i16x8_s(w0)), d), 16);
  v128.store(o, f32x4.mul(f32x4.convert_i32x4_s(i32x4.extend_low_i16x8_s(w1)), d), 32);
  v128.store(o, f32x4.mul(f32x4.convert_i32x4_s(i32x4.extend_high_i16x8_s(w1)), d), 48);
}

/** nb consecutive blocks -> nb*32 f32: x = (q - 8) * d. */
@inline function decodeBlocks(src: usize, nb: i32, dst: usize): void {
  for (let ib = 0; ib < nb; ib++) {
    const p = src + <usize>ib * BB;
    const o = dst + (<usize>ib << 7);
    const d = f32x4.splat(halfToFloat(load<u16>(p)));
    const qs = v128.load(p + 2);
    const lo = i8x16.sub(v128.and(qs, i8x16.splat(0x0f)), i8x16.splat(8));
    const hi = i8x16.sub(i8x16.shr_u(qs, 4), i8x16.splat(8));
    store16(lo, d, o);
    store16(hi, d, o + 64);
  }
}

export function q4_0_decode(src: usize, T: i32, D: i32, dst: usize): void {
  decodeBlocks(src, T * (D / QK), dst);
}

/** One block's 16 levels (q - 8, signed bytes) -> four f32x4 times d: values 0..3, 4..7, 8..11, 12..15. */
@inline function widen(v: v128, d: v128, i: i32): v128 {
  const w = i < 2 ? i16x8.extend_low_i8x16_s(v) : i16x8.extend_high_i8x16_s(v);
  return f32x4.mul(f32x4.convert_i32x4_s((i & 1) == 0 ? i32x4.extend_low_i16x8_s(w) : i32x4.extend_high_i16x8_s(w)), d);
}

/**
 * Scores of R (1..4, a constant after inlining) query rows against one K row: each block is unpacked once
 * (sub 8, widen, convert) and dotted with every row's q before the next block is read.
 */
@inline function rowsF32(R: i32, q0: usize, qRow: usize, kr: usize, nb: i32, o: usize, os: usize): void {
  let a0 = f32x4.splat(0);
  let a1 = f32x4.splat(0);
  let a2 = f32x4.splat(0);
  let a3 = f32x4.splat(0);
  for (let ib = 0; ib < nb; ib++) {
    const p = kr + <usize>ib * BB;
    const d = f32x4.splat(halfToFloat(load<u16>(p)));
    const qs = v128.load(p + 2);
    // Half a block (16 values: low nibbles, then high) at a time: 4 values + R accumulators in registers.
    for (let h = 0; h < 2; h++) {
      const v = i8x16.sub(h == 0 ? v128.and(qs, i8x16.splat(0x0f)) : i8x16.shr_u(qs, 4), i8x16.splat(8));
      const x0 = widen(v, d, 0);
      const x1 = widen(v, d, 1);
      const x2 = widen(v, d, 2);
      const x3 = widen(v, d, 3);
      const qb = q0 + (<usize>ib << 7) + (<usize>h << 6);
      a0 = f32x4.add(a0, dot4(qb, x0, x1, x2, x3));
      if (R > 1) a1 = f32x4.add(a1, dot4(qb + qRow, x0, x1, x2, x3));
      if (R > 2) a2 = f32x4.add(a2, dot4(qb + 2 * qRow, x0, x1, x2, x3));
      if (R > 3) a3 = f32x4.add(a3, dot4(qb + 3 * qRow, x0, x1, x2, x3));
    }
  }
  storeRows(R, hsum4(a0, a1, a2, a3), o, os);
}

/** Scores for G query heads, four rows per pass and the 1-3 left over in one more: K blocks are unpacked once per pass. */
export function q4_0_scores(q: usize, G: i32, D: i32, k: usize, T: i32, out: usize, outStride: i32, tile: usize): void {
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

/** Integer-q rows (see rowsF32): per block, i32x4.dot_i16x8_s sums exact integer products, then one multiply by d_k * d_q. */
@inline function rowsInt(R: i32, q0: usize, d0: usize, qRow: usize, dRow: usize, kr: usize, nb: i32, o: usize, os: usize): void {
  let a0 = f32x4.splat(0);
  let a1 = f32x4.splat(0);
  let a2 = f32x4.splat(0);
  let a3 = f32x4.splat(0);
  for (let ib = 0; ib < nb; ib++) {
    const p = kr + <usize>ib * BB;
    const dk = f32x4.splat(halfToFloat(load<u16>(p)));
    const qs = v128.load(p + 2);
    const lo = i8x16.sub(v128.and(qs, i8x16.splat(0x0f)), i8x16.splat(8));
    const hi = i8x16.sub(i8x16.shr_u(qs, 4), i8x16.splat(8));
    const v0 = i16x8.extend_low_i8x16_s(lo);
    const v1 = i16x8.extend_high_i8x16_s(lo);
    const v2 = i16x8.extend_low_i8x16_s(hi);
    const v3 = i16x8.extend_high_i8x16_s(hi);
    const qb = q0 + (<usize>ib << 6);
    const db = d0 + (<usize>ib << 2);
    a0 = f32x4.add(a0, f32x4.mul(f32x4.convert_i32x4_s(idot4(qb, v0, v1, v2, v3)), f32x4.mul(dk, v128.load32_splat(db))));
    if (R > 1) a1 = f32x4.add(a1, f32x4.mul(f32x4.convert_i32x4_s(idot4(qb + qRow, v0, v1, v2, v3)), f32x4.mul(dk, v128.load32_splat(db + dRow))));
    if (R > 2) a2 = f32x4.add(a2, f32x4.mul(f32x4.convert_i32x4_s(idot4(qb + 2 * qRow, v0, v1, v2, v3)), f32x4.mul(dk, v128.load32_splat(db + 2 * dRow))));
    if (R > 3) a3 = f32x4.add(a3, f32x4.mul(f32x4.convert_i32x4_s(idot4(qb + 3 * qRow, v0, v1, v2, v3)), f32x4.mul(dk, v128.load32_splat(db + 3 * dRow))));
  }
  storeRows(R, hsum4(a0, a1, a2, a3), o, os);
}

/**
 * Integer-q scores (an explicit accuracy choice, see quantizeRows): qi [G, D] i16, qd [G, D/32] f32 scales.
 */
export function q4_0_scores_i(qi: usize, qd: usize, G: i32, D: i32, k: usize, T: i32, out: usize, outStride: i32): void {
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

export function q4_0_accum(w: usize, wStride: i32, G: i32, D: i32, v: usize, T: i32, acc: usize, tile: usize): void {
  const TT = tileTokens(D);
  const nb = D / QK;
  const rb = <usize>nb * BB;
  for (let t0 = 0; t0 < T; t0 += TT) {
    const n = min(TT, T - t0);
    decodeBlocks(v + <usize>t0 * rb, n * nb, tile);
    axpyRows(w + (<usize>t0 << 2), wStride, G, D, tile, n, <usize>D << 2, acc);
  }
}
