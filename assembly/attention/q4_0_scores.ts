// q4_0 float32 scores over 32-bit lanes of the packed bytes. Lane j of a block's 16 code bytes holds bytes
// 4j..4j+3; its nibble k (bits 4k..4k+3) is element e(j, k) = 4j + (k >> 1) + 16 (k & 1). After xor 0x8 per
// nibble, nibble k holds n - 8 as a 4-bit two's complement number; shifted to the top 4 bits and masked it is
// (n - 8) * 2^28 as an i32, which converts to f32 exactly, so a block unpacks without widening. The 2^28
// goes into d (exact), so every product is the same f32 product q * ((n - 8) d) as the reference's.
import { halfToFloat, hsum4, storeRows } from '../shared/common';

const BB: usize = 18;
/** Prepared q per (row, block): eight permuted f32x4, one per nibble k. */
const QB: usize = 128;
/** 2^-28: undoes the nibble's position (exact; d * 2^-28 stays normal for every f16 d). */
const TWO_M28: f32 = reinterpret<f32>((127 - 28) << 23);

/** Prepared q for R rows of D values (row r at q + r*qRow bytes) into dst: [R, D/32] x QB bytes. */
@inline function prepare(R: i32, q: usize, qRow: usize, nb: i32, dst: usize): void {
  for (let r = 0; r < R; r++) {
    for (let ib = 0; ib < nb; ib++) {
      const src = q + <usize>r * qRow + (<usize>ib << 7);
      const o = dst + <usize>(r * nb + ib) * QB;
      for (let k = 0; k < 8; k++) {
        const e = <usize>((k >> 1) + ((k & 1) << 4)) << 2;
        v128.store(o + (<usize>k << 4), f32x4(load<f32>(src + e), load<f32>(src + e, 16), load<f32>(src + e, 32), load<f32>(src + e, 48)));
      }
    }
  }
}

/** Nibble k of every lane of L (nibbles xor 8) as (n - 8) * 2^28, times d when scaled. */
@inline function nibble(L: v128, k: i32, d: v128, scaled: bool): v128 {
  const top = k == 7 ? L : i32x4.shl(L, 28 - 4 * k);
  const x = f32x4.convert_i32x4_s(v128.and(top, i32x4.splat(0xf0000000)));
  return scaled ? f32x4.mul(x, d) : x;
}

/** sum over four k of prepared q[k] * x_k (prepared q at p). */
@inline function dot4(p: usize, x0: v128, x1: v128, x2: v128, x3: v128): v128 {
  return f32x4.add(f32x4.add(f32x4.mul(v128.load(p), x0), f32x4.mul(v128.load(p, 16), x1)), f32x4.add(f32x4.mul(v128.load(p, 32), x2), f32x4.mul(v128.load(p, 48), x3)));
}

/**
 * Scores of R prepared rows (pq, pRow bytes apart) against K row kr, stored at o + r*os. The unpacked
 * values are scaled by d once for all rows, whatever R: a row's score has the same bits in a pass of one
 * row as of four (scaling each row's block sum instead saved multiplies for one or two rows but rounds
 * differently).
 */
@inline function rows(R: i32, pq: usize, pRow: usize, kr: usize, nb: i32, o: usize, os: usize): void {
  const scaled = true;
  let a0 = f32x4.splat(0);
  let a1 = f32x4.splat(0);
  let a2 = f32x4.splat(0);
  let a3 = f32x4.splat(0);
  for (let ib = 0; ib < nb; ib++) {
    const p = kr + <usize>ib * BB;
    const d = f32x4.splat(halfToFloat(load<u16>(p)) * TWO_M28);
    const L = v128.xor(v128.load(p + 2), i32x4.splat(0x88888888));
    const qb = pq + <usize>ib * QB;
    // Nibbles 0-3, then 4-7: four unpacked vectors and the R sums stay in registers. Unrolled by hand: as a
    // loop over the halves the shift counts stay runtime values and GQA 4 ran 10% slower.
    let b0 = f32x4.splat(0);
    let b1 = f32x4.splat(0);
    let x0 = nibble(L, 0, d, scaled);
    let x1 = nibble(L, 1, d, scaled);
    let x2 = nibble(L, 2, d, scaled);
    let x3 = nibble(L, 3, d, scaled);
    if (scaled) {
      a0 = f32x4.add(a0, dot4(qb, x0, x1, x2, x3));
      a1 = f32x4.add(a1, dot4(qb + pRow, x0, x1, x2, x3));
      if (R > 2) a2 = f32x4.add(a2, dot4(qb + 2 * pRow, x0, x1, x2, x3));
      if (R > 3) a3 = f32x4.add(a3, dot4(qb + 3 * pRow, x0, x1, x2, x3));
    } else {
      b0 = dot4(qb, x0, x1, x2, x3);
      if (R > 1) b1 = dot4(qb + pRow, x0, x1, x2, x3);
    }
    x0 = nibble(L, 4, d, scaled);
    x1 = nibble(L, 5, d, scaled);
    x2 = nibble(L, 6, d, scaled);
    x3 = nibble(L, 7, d, scaled);
    const qh = qb + 64;
    if (scaled) {
      a0 = f32x4.add(a0, dot4(qh, x0, x1, x2, x3));
      a1 = f32x4.add(a1, dot4(qh + pRow, x0, x1, x2, x3));
      if (R > 2) a2 = f32x4.add(a2, dot4(qh + 2 * pRow, x0, x1, x2, x3));
      if (R > 3) a3 = f32x4.add(a3, dot4(qh + 3 * pRow, x0, x1, x2, x3));
    } else {
      b0 = f32x4.add(b0, dot4(qh, x0, x1, x2, x3));
      if (R > 1) b1 = f32x4.add(b1, dot4(qh + pRow, x0, x1, x2, x3));
    }
    if (!scaled) {
      a0 = f32x4.add(a0, f32x4.mul(b0, d));
      if (R > 1) a1 = f32x4.add(a1, f32x4.mul(b1, d));
    }
  }
  storeRows(R, hsum4(a0, a1, a2, a3), o, os);
}

/** R rows starting at q: prepare them in the tile, then one pass over the T K rows. */
@inline function group(R: i32, q: usize, qRow: usize, nb: i32, k: usize, T: i32, o: usize, os: usize, tile: usize): void {
  prepare(R, q, qRow, nb, tile);
  const pRow = <usize>nb * QB;
  const rb = <usize>nb * BB;
  for (let t = 0; t < T; t++) rows(R, tile, pRow, k + <usize>t * rb, nb, o + (<usize>t << 2), os);
}

/** q4_0 f32 scores for G query heads, four per pass and the 1-3 left over in one more; tile >= 4 * 4 * D bytes. */
export function q4_0_scores(q: usize, G: i32, D: i32, k: usize, T: i32, out: usize, outStride: i32, tile: usize): void {
  const nb = D >> 5;
  const qRow = <usize>D << 2;
  const os = <usize>outStride << 2;
  const G4 = G & ~3;
  for (let g = 0; g < G4; g += 4) group(4, q + <usize>g * qRow, qRow, nb, k, T, out + <usize>g * os, os, tile);
  const rest = G - G4;
  const qg = q + <usize>G4 * qRow;
  const og = out + <usize>G4 * os;
  if (rest == 3) group(3, qg, qRow, nb, k, T, og, os, tile);
  else if (rest == 2) group(2, qg, qRow, nb, k, T, og, os, tile);
  else if (rest == 1) group(1, qg, qRow, nb, k, T, og, os, tile);
}
