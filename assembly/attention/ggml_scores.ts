// Score kernels over ggml's q4_0 and q8_0 K blocks (f16 d, then 16 packed nibbles or 32 int8 levels): the
// integer-q kernels of both and the f32 kernel of q8_0 (q4_0's is q4_0_scores.ts). R (1..4) query rows per
// pass against each K row, the block unpacked once for all of them. FMT and R are constants after inlining,
// so binaryen folds every `if (FMT == ...)` / `if (R > ...)` away.
import { dot4, halfToFloat, hsum4, idot4, storeRows } from '../shared/common';

export const FMT_Q4: i32 = 0;
export const FMT_Q8: i32 = 1;

@inline function blockBytes(FMT: i32): usize {
  return FMT == FMT_Q4 ? 18 : 34;
}

/** q8_0 values 8i..8i+7 (i < 4) of the block at p, times d, as two f32x4 (load8x8_s widens while loading). */
@inline function q8Values(p: usize, d: v128, i: i32, hi: bool): v128 {
  const w = v128.load8x8_s(p + 2 + (<usize>i << 3));
  return f32x4.mul(f32x4.convert_i32x4_s(hi ? i32x4.extend_high_i16x8_s(w) : i32x4.extend_low_i16x8_s(w)), d);
}

/** q4_0: the block's 16 packed bytes, loaded once for both halves (q8_0 loads each half itself). */
@inline function packedBytes(FMT: i32, p: usize): v128 {
  return FMT == FMT_Q4 ? v128.load(p + 2) : i32x4.splat(0);
}

/** Half h (values 16h..16h+15) of q4_0's packed bytes qs as signed levels (nibbles minus 8). */
@inline function q4Half(qs: v128, h: i32): v128 {
  return i8x16.sub(h == 0 ? v128.and(qs, i8x16.splat(0x0f)) : i8x16.shr_u(qs, 4), i8x16.splat(8));
}

/** q8_0 float32 scores of R rows of q (f32, qRow bytes apart) against K row kr (nb blocks), stored at o + r*os. */
@inline function rowsF32(R: i32, q0: usize, qRow: usize, kr: usize, nb: i32, o: usize, os: usize): void {
  let a0 = f32x4.splat(0);
  let a1 = f32x4.splat(0);
  let a2 = f32x4.splat(0);
  let a3 = f32x4.splat(0);
  for (let ib = 0; ib < nb; ib++) {
    const p = kr + <usize>ib * blockBytes(FMT_Q8);
    const d = f32x4.splat(halfToFloat(load<u16>(p)));
    // Half a block (16 values) at a time: 4 values + R accumulators stay in registers.
    for (let h = 0; h < 2; h++) {
      const x0 = q8Values(p, d, 2 * h, false);
      const x1 = q8Values(p, d, 2 * h, true);
      const x2 = q8Values(p, d, 2 * h + 1, false);
      const x3 = q8Values(p, d, 2 * h + 1, true);
      const qb = q0 + (<usize>ib << 7) + (<usize>h << 6);
      a0 = f32x4.add(a0, dot4(qb, x0, x1, x2, x3));
      if (R > 1) a1 = f32x4.add(a1, dot4(qb + qRow, x0, x1, x2, x3));
      if (R > 2) a2 = f32x4.add(a2, dot4(qb + 2 * qRow, x0, x1, x2, x3));
      if (R > 3) a3 = f32x4.add(a3, dot4(qb + 3 * qRow, x0, x1, x2, x3));
    }
  }
  storeRows(R, hsum4(a0, a1, a2, a3), o, os);
}

/** Integer-q scores of R rows (qi i16, qd per-block scales): exact integer dots per block, one multiply by d_k * d_q. */
@inline function rowsInt(FMT: i32, R: i32, q0: usize, d0: usize, qRow: usize, dRow: usize, kr: usize, nb: i32, o: usize, os: usize): void {
  let a0 = f32x4.splat(0);
  let a1 = f32x4.splat(0);
  let a2 = f32x4.splat(0);
  let a3 = f32x4.splat(0);
  for (let ib = 0; ib < nb; ib++) {
    const p = kr + <usize>ib * blockBytes(FMT);
    const dk = f32x4.splat(halfToFloat(load<u16>(p)));
    const qs = packedBytes(FMT, p);
    const lo = FMT == FMT_Q4 ? q4Half(qs, 0) : qs;
    const hi = FMT == FMT_Q4 ? q4Half(qs, 1) : qs;
    // q8_0 widens while loading (load8x8_s); q4_0 widens its unpacked levels.
    const v0 = FMT == FMT_Q8 ? v128.load8x8_s(p + 2) : i16x8.extend_low_i8x16_s(lo);
    const v1 = FMT == FMT_Q8 ? v128.load8x8_s(p + 10) : i16x8.extend_high_i8x16_s(lo);
    const v2 = FMT == FMT_Q8 ? v128.load8x8_s(p + 18) : i16x8.extend_low_i8x16_s(hi);
    const v3 = FMT == FMT_Q8 ? v128.load8x8_s(p + 26) : i16x8.extend_high_i8x16_s(hi);
    const qb = q0 + (<usize>ib << 6);
    const db = d0 + (<usize>ib << 2);
    a0 = f32x4.add(a0, f32x4.mul(f32x4.convert_i32x4_s(idot4(qb, v0, v1, v2, v3)), f32x4.mul(dk, v128.load32_splat(db))));
    if (R > 1) a1 = f32x4.add(a1, f32x4.mul(f32x4.convert_i32x4_s(idot4(qb + qRow, v0, v1, v2, v3)), f32x4.mul(dk, v128.load32_splat(db + dRow))));
    if (R > 2) a2 = f32x4.add(a2, f32x4.mul(f32x4.convert_i32x4_s(idot4(qb + 2 * qRow, v0, v1, v2, v3)), f32x4.mul(dk, v128.load32_splat(db + 2 * dRow))));
    if (R > 3) a3 = f32x4.add(a3, f32x4.mul(f32x4.convert_i32x4_s(idot4(qb + 3 * qRow, v0, v1, v2, v3)), f32x4.mul(dk, v128.load32_splat(db + 3 * dRow))));
  }
  storeRows(R, hsum4(a0, a1, a2, a3), o, os);
}

/** q8_0 float32 scores for G query heads: four rows per pass and the 1-3 left over in one more. */
@inline export function scoresF32Q8(q: usize, G: i32, D: i32, k: usize, T: i32, out: usize, outStride: i32): void {
  const nb = D >> 5;
  const rb = <usize>nb * blockBytes(FMT_Q8);
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

/** Integer-q scores for G query heads (qi [G, D] i16, qd [G, D/32] f32, see quantizeRows). */
@inline export function scoresInt(FMT: i32, qi: usize, qd: usize, G: i32, D: i32, k: usize, T: i32, out: usize, outStride: i32): void {
  const nb = D >> 5;
  const rb = <usize>nb * blockBytes(FMT);
  const qRow = <usize>D << 1;
  const dRow = <usize>nb << 2;
  const os = <usize>outStride << 2;
  const G4 = G & ~3;
  const rest = G - G4;
  for (let t = 0; t < T; t++) {
    const kr = k + <usize>t * rb;
    const o = out + (<usize>t << 2);
    for (let g = 0; g < G4; g += 4) rowsInt(FMT, 4, qi + <usize>g * qRow, qd + <usize>g * dRow, qRow, dRow, kr, nb, o + <usize>g * os, os);
    const qg = qi + <usize>G4 * qRow;
    const dg = qd + <usize>G4 * dRow;
    const og = o + <usize>G4 * os;
    if (rest == 3) rowsInt(FMT, 3, qg, dg, qRow, dRow, kr, nb, og, os);
    else if (rest == 2) rowsInt(FMT, 2, qg, dg, qRow, dRow, kr, nb, og, os);
    else if (rest == 1) rowsInt(FMT, 1, qg, dg, qRow, dRow, kr, nb, og, os);
  }
}
