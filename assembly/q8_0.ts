// q8_0 (ggml block_q8_0: f16 d + 32 x int8). Encode is float32 math, bit-exact to quantize_row_q8_0_ref.
import { axpyRows, dot4, dot8, floatToHalf, halfToFloat, hsum4, hsum, idot4 } from './common';
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

/** Values 4i..4i+3 of the block at p as f32 (the scale d is applied by the caller). */
@inline function unpack(p: usize, i: i32): v128 {
  const h = v128.load8x8_s(p + 2 + (<usize>(i >> 1) << 3));
  return f32x4.convert_i32x4_s((i & 1) == 0 ? i32x4.extend_low_i16x8_s(h) : i32x4.extend_high_i16x8_s(h));
}

/** Fused scores: a block is widened once into registers for four heads; d scales the block's partial sums. */
export function q8_0_scores(q: usize, G: i32, D: i32, k: usize, T: i32, out: usize, outStride: i32, tile: usize): void {
  const nb = D / QK;
  const rb = <usize>nb * BB;
  const qRow = <usize>D << 2;
  const os = <usize>outStride << 2;
  for (let t = 0; t < T; t++) {
    const kr = k + <usize>t * rb;
    const o = out + (<usize>t << 2);
    let g = 0;
    for (; g + 4 <= G; g += 4) {
      const q0 = q + <usize>g * qRow;
      let a0 = f32x4.splat(0);
      let a1 = f32x4.splat(0);
      let a2 = f32x4.splat(0);
      let a3 = f32x4.splat(0);
      for (let ib = 0; ib < nb; ib++) {
        const p = kr + <usize>ib * BB;
        const d = f32x4.splat(halfToFloat(load<u16>(p)));
        const qb = q0 + (<usize>ib << 7);
        // Half a block (16 values) at a time: 4 values + 4 accumulators stay in registers.
        let x0 = f32x4.mul(unpack(p, 0), d);
        let x1 = f32x4.mul(unpack(p, 1), d);
        let x2 = f32x4.mul(unpack(p, 2), d);
        let x3 = f32x4.mul(unpack(p, 3), d);
        a0 = f32x4.add(a0, dot4(qb, x0, x1, x2, x3));
        a1 = f32x4.add(a1, dot4(qb + qRow, x0, x1, x2, x3));
        a2 = f32x4.add(a2, dot4(qb + 2 * qRow, x0, x1, x2, x3));
        a3 = f32x4.add(a3, dot4(qb + 3 * qRow, x0, x1, x2, x3));
        x0 = f32x4.mul(unpack(p, 4), d);
        x1 = f32x4.mul(unpack(p, 5), d);
        x2 = f32x4.mul(unpack(p, 6), d);
        x3 = f32x4.mul(unpack(p, 7), d);
        const qh = qb + 64;
        a0 = f32x4.add(a0, dot4(qh, x0, x1, x2, x3));
        a1 = f32x4.add(a1, dot4(qh + qRow, x0, x1, x2, x3));
        a2 = f32x4.add(a2, dot4(qh + 2 * qRow, x0, x1, x2, x3));
        a3 = f32x4.add(a3, dot4(qh + 3 * qRow, x0, x1, x2, x3));
      }
      const s = hsum4(a0, a1, a2, a3);
      const og = o + <usize>g * os;
      store<f32>(og, f32x4.extract_lane(s, 0));
      store<f32>(og + os, f32x4.extract_lane(s, 1));
      store<f32>(og + 2 * os, f32x4.extract_lane(s, 2));
      store<f32>(og + 3 * os, f32x4.extract_lane(s, 3));
    }
    for (; g < G; g++) {
      const qg = q + <usize>g * qRow;
      let a0 = f32x4.splat(0);
      for (let ib = 0; ib < nb; ib++) {
        const p = kr + <usize>ib * BB;
        const d = f32x4.splat(halfToFloat(load<u16>(p)));
        a0 = f32x4.add(a0, f32x4.mul(dot8(qg + (<usize>ib << 7), unpack(p, 0), unpack(p, 1), unpack(p, 2), unpack(p, 3), unpack(p, 4), unpack(p, 5), unpack(p, 6), unpack(p, 7)), d));
      }
      store<f32>(o + <usize>g * os, hsum(a0));
    }
  }
}

/** Integer-q scores: qi [G, D] i16, qd [G, D/32] f32 (see quantizeRows); exact integer dot per block. */
export function q8_0_scores_i(qi: usize, qd: usize, G: i32, D: i32, k: usize, T: i32, out: usize, outStride: i32): void {
  const nb = D / QK;
  const rb = <usize>nb * BB;
  const qRow = <usize>D << 1;
  const dRow = <usize>nb << 2;
  const os = <usize>outStride << 2;
  for (let t = 0; t < T; t++) {
    const kr = k + <usize>t * rb;
    const o = out + (<usize>t << 2);
    let g = 0;
    for (; g + 4 <= G; g += 4) {
      let a0 = f32x4.splat(0);
      let a1 = f32x4.splat(0);
      let a2 = f32x4.splat(0);
      let a3 = f32x4.splat(0);
      const q0 = qi + <usize>g * qRow;
      const d0 = qd + <usize>g * dRow;
      for (let ib = 0; ib < nb; ib++) {
        const p = kr + <usize>ib * BB;
        const dk = f32x4.splat(halfToFloat(load<u16>(p)));
        const v0 = v128.load8x8_s(p + 2); const v1 = v128.load8x8_s(p + 10); const v2 = v128.load8x8_s(p + 18); const v3 = v128.load8x8_s(p + 26);
        const qb = q0 + (<usize>ib << 6);
        const db = d0 + (<usize>ib << 2);
        a0 = f32x4.add(a0, f32x4.mul(f32x4.convert_i32x4_s(idot4(qb, v0, v1, v2, v3)), f32x4.mul(dk, v128.load32_splat(db))));
        a1 = f32x4.add(a1, f32x4.mul(f32x4.convert_i32x4_s(idot4(qb + qRow, v0, v1, v2, v3)), f32x4.mul(dk, v128.load32_splat(db + dRow))));
        a2 = f32x4.add(a2, f32x4.mul(f32x4.convert_i32x4_s(idot4(qb + 2 * qRow, v0, v1, v2, v3)), f32x4.mul(dk, v128.load32_splat(db + 2 * dRow))));
        a3 = f32x4.add(a3, f32x4.mul(f32x4.convert_i32x4_s(idot4(qb + 3 * qRow, v0, v1, v2, v3)), f32x4.mul(dk, v128.load32_splat(db + 3 * dRow))));
      }
      const s = hsum4(a0, a1, a2, a3);
      const og = o + <usize>g * os;
      store<f32>(og, f32x4.extract_lane(s, 0));
      store<f32>(og + os, f32x4.extract_lane(s, 1));
      store<f32>(og + 2 * os, f32x4.extract_lane(s, 2));
      store<f32>(og + 3 * os, f32x4.extract_lane(s, 3));
    }
    for (; g < G; g++) {
      let a0 = f32x4.splat(0);
      const qg = qi + <usize>g * qRow;
      const dg = qd + <usize>g * dRow;
      for (let ib = 0; ib < nb; ib++) {
        const p = kr + <usize>ib * BB;
        const dk = f32x4.splat(halfToFloat(load<u16>(p)));
        const s = idot4(qg + (<usize>ib << 6), v128.load8x8_s(p + 2), v128.load8x8_s(p + 10), v128.load8x8_s(p + 18), v128.load8x8_s(p + 26));
        a0 = f32x4.add(a0, f32x4.mul(f32x4.convert_i32x4_s(s), f32x4.mul(dk, v128.load32_splat(dg + (<usize>ib << 2)))));
      }
      store<f32>(o + <usize>g * os, hsum(a0));
    }
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
