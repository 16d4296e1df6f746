// q8_0 (ggml block_q8_0: f16 d + 32 x int8). Encode is float32 math, bit-exact to quantize_row_q8_0_ref.
import { axpyRows, floatToHalf, halfToFloat } from '../shared/common';
import { FMT_Q8, scoresF32Q8, scoresInt } from './ggml_scores';
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

/** Fused scores: each K block is unpacked once for up to four query heads (attention/ggml_scores.ts). */
export function q8_0_scores(q: usize, G: i32, D: i32, k: usize, T: i32, out: usize, outStride: i32, tile: usize): void {
  scoresF32Q8(q, G, D, k, T, out, outStride);
}

/** Integer-q scores (an explicit accuracy choice, see quantizeRows): qi [G, D] i16, qd [G, D/32] f32 scales. */
export function q8_0_scores_i(qi: usize, qd: usize, G: i32, D: i32, k: usize, T: i32, out: usize, outStride: i32): void {
  scoresInt(FMT_Q8, qi, qd, G, D, k, T, out, outStride);
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
