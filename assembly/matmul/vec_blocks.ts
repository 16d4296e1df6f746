// The other 32-value block types' parts of the one-token kernel (vec.ts rowsQ): q4_1 (f16 d, f16 m,
// 16 bytes of nibbles), q5_0 (f16 d, 32 high bits, nibbles; centre 16), q5_1 (f16 d, f16 m, high bits,
// nibbles) and iq4_nl (f16 d, nibbles indexing ggml's kvalues_iq4nl). Each block comes apart with byte ops
// into two int8 vectors, values 0..15 and 16..31 (as decode.ts decodeRowI8 does), widened to int16
// against x in natural order (packActVec ORDER_NATURAL, the q8_0 layout); the mins meet x's per-32 sums.
import { highBits, T_IQ4_NL, T_Q4_1, T_Q5_0, T_Q5_1 } from './decode';

/** One block at p . the 32 natural-order int16 activations x0..x3, as i32x4 partial sums of q . x. */
@inline export function dotOther(type: i32, p: usize, x0: v128, x1: v128, x2: v128, x3: v128): v128 {
  const m4 = i8x16.splat(0x0f);
  let lo: v128, hi: v128;
  if (type == T_IQ4_NL) {
    const v = v128.load(p, 2);
    const lut = i8x16(-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113);
    lo = i8x16.swizzle(lut, v128.and(v, m4));
    hi = i8x16.swizzle(lut, i8x16.shr_u(v, 4));
  } else if (type == T_Q4_1) {
    const v = v128.load(p, 4);
    lo = v128.and(v, m4);
    hi = i8x16.shr_u(v, 4);
  } else {
    // q5_0: high bits after d, values centred at 16; q5_1: after d and m, no centre.
    const off: usize = type == T_Q5_1 ? 4 : 2;
    const qh = load<u32>(p + off);
    const v = v128.load(p + off + 4);
    lo = v128.or(v128.and(v, m4), highBits(qh, false));
    hi = v128.or(i8x16.shr_u(v, 4), highBits(qh, true));
    if (type == T_Q5_0) {
      lo = i8x16.sub(lo, i8x16.splat(16));
      hi = i8x16.sub(hi, i8x16.splat(16));
    }
  }
  const a = i32x4.add(i32x4.dot_i16x8_s(i16x8.extend_low_i8x16_s(lo), x0), i32x4.dot_i16x8_s(i16x8.extend_high_i8x16_s(lo), x1));
  const b = i32x4.add(i32x4.dot_i16x8_s(i16x8.extend_low_i8x16_s(hi), x2), i32x4.dot_i16x8_s(i16x8.extend_high_i8x16_s(hi), x3));
  return i32x4.add(a, b);
}
