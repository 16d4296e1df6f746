// q4_0 (ggml block_q4_0: f16 d + 16 bytes; byte j = element j | element j+16 << 4).
// Encode is float32 math, bit-exact to quantize_row_q4_0_ref.
import { axpyRows, dot4, dot8, floatToHalf, halfToFloat, hsum4, hsum, idot4 } from './common';
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

/** One block's 32 values as (q - 8) in f32 (the scale d is applied by the caller): x0..x7 = elements 4i..4i+3. */
@inline function unpack(p: usize, i: i32): v128 {
  const qs = v128.load(p + 2);
  const v = i8x16.sub(i < 4 ? v128.and(qs, i8x16.splat(0x0f)) : i8x16.shr_u(qs, 4), i8x16.splat(8));
  const h = (i & 2) == 0 ? i16x8.extend_low_i8x16_s(v) : i16x8.extend_high_i8x16_s(v);
  return f32x4.convert_i32x4_s((i & 1) == 0 ? i32x4.extend_low_i16x8_s(h) : i32x4.extend_high_i16x8_s(h));
}

/**
 * Fused scores: each block is unpacked once into registers (sub 8, widen, convert: cheaper here than the
 * byte-plane swizzle build) and dotted with four heads' q before the next block is read; x = (q - 8) * d.
 */
export function q4_0_scores(q: usize, G: i32, D: i32, k: usize, T: i32, out: usize, outStride: i32, tile: usize): void {
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
        // Half a block (16 values: low nibbles, then high) at a time: 4 values + 4 accumulators in registers.
        const qs = v128.load(p + 2);
        const lo = i8x16.sub(v128.and(qs, i8x16.splat(0x0f)), i8x16.splat(8));
        const hi = i8x16.sub(i8x16.shr_u(qs, 4), i8x16.splat(8));
        let w0 = i16x8.extend_low_i8x16_s(lo);
        let w1 = i16x8.extend_high_i8x16_s(lo);
        let x0 = f32x4.mul(f32x4.convert_i32x4_s(i32x4.extend_low_i16x8_s(w0)), d);
        let x1 = f32x4.mul(f32x4.convert_i32x4_s(i32x4.extend_high_i16x8_s(w0)), d);
        let x2 = f32x4.mul(f32x4.convert_i32x4_s(i32x4.extend_low_i16x8_s(w1)), d);
        let x3 = f32x4.mul(f32x4.convert_i32x4_s(i32x4.extend_high_i16x8_s(w1)), d);
        a0 = f32x4.add(a0, dot4(qb, x0, x1, x2, x3));
        a1 = f32x4.add(a1, dot4(qb + qRow, x0, x1, x2, x3));
        a2 = f32x4.add(a2, dot4(qb + 2 * qRow, x0, x1, x2, x3));
        a3 = f32x4.add(a3, dot4(qb + 3 * qRow, x0, x1, x2, x3));
        w0 = i16x8.extend_low_i8x16_s(hi);
        w1 = i16x8.extend_high_i8x16_s(hi);
        x0 = f32x4.mul(f32x4.convert_i32x4_s(i32x4.extend_low_i16x8_s(w0)), d);
        x1 = f32x4.mul(f32x4.convert_i32x4_s(i32x4.extend_high_i16x8_s(w0)), d);
        x2 = f32x4.mul(f32x4.convert_i32x4_s(i32x4.extend_low_i16x8_s(w1)), d);
        x3 = f32x4.mul(f32x4.convert_i32x4_s(i32x4.extend_high_i16x8_s(w1)), d);
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

/** One block's 32 values as (q - 8) in i16: v0 = elements 0..7, v1 = 8..15, v2 = 16..23, v3 = 24..31. */
@inline function unpackI16(p: usize, i: i32): v128 {
  const qs = v128.load(p + 2);
  const v = i8x16.sub(i < 2 ? v128.and(qs, i8x16.splat(0x0f)) : i8x16.shr_u(qs, 4), i8x16.splat(8));
  return (i & 1) == 0 ? i16x8.extend_low_i8x16_s(v) : i16x8.extend_high_i8x16_s(v);
}

/**
 * Integer-q scores (an explicit accuracy choice, see quantizeRows): qi [G, D] i16, qd [G, D/32] f32 scales.
 * Per block, i32x4.dot_i16x8_s sums exact integer products; one float multiply by d_k * d_q per block.
 */
export function q4_0_scores_i(qi: usize, qd: usize, G: i32, D: i32, k: usize, T: i32, out: usize, outStride: i32): void {
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
        const s = idot4(qg + (<usize>ib << 6), unpackI16(p, 0), unpackI16(p, 1), unpackI16(p, 2), unpackI16(p, 3));
        a0 = f32x4.add(a0, f32x4.mul(f32x4.convert_i32x4_s(s), f32x4.mul(dk, v128.load32_splat(dg + (<usize>ib << 2)))));
      }
      store<f32>(o + <usize>g * os, hsum(a0));
    }
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
