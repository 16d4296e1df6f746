// q4_0 (ggml block_q4_0: f16 d + 16 bytes; byte j = element j | element j+16 << 4).
// Encode is float32 math, bit-exact to quantize_row_q4_0_ref.
import { floatToHalf, halfToFloat } from '../shared/common';
import { FMT_Q4, scoresInt } from './ggml_scores';

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

/** Integer-q scores (an explicit accuracy choice, see quantizeRows): qi [G, D] i16, qd [G, D/32] f32 scales. */
export function q4_0_scores_i(qi: usize, qd: usize, G: i32, D: i32, k: usize, T: i32, out: usize, outStride: i32): void {
  scoresInt(FMT_Q4, qi, qd, G, D, k, T, out, outStride);
}
