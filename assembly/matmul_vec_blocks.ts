// One-token (decode) matmul rows for the other 32-value block types: q4_1 (f16 d, f16 m, 16 bytes of
// nibbles), q5_0 (f16 d, 32 high bits, nibbles; centre 16), q5_1 (f16 d, f16 m, high bits, nibbles) and
// iq4_nl (f16 d, nibbles indexing ggml's kvalues_iq4nl). Each block comes apart with byte ops into two
// int8 vectors, values 0..15 and 16..31 (as matmul_decode.ts decodeRowI8 does), widened to int16 against
// x in natural order (packActVec ORDER_NATURAL, the q8_0 layout). Block dots stay exact integers; the mins
// meet x's per-32 sums. Four rows go together, one per lane, as matmul_vec.ts rowsQ does for q8_0 / q4_0.
import { halfToFloat, hsum4i } from './common';
import { halfToFloat4s, T_IQ4_NL, T_Q4_1, T_Q5_0, T_Q5_1 } from './matmul_decode';
import { keep, touch } from './touch';

/** Block bytes of a type this file reads. */
@inline function blockBytes(type: i32): usize {
  return type == T_Q4_1 ? 20 : type == T_Q5_0 ? 22 : type == T_Q5_1 ? 24 : 18;
}

/** True for the types with a min (value = d * q + m). */
@inline export function hasMin(type: i32): bool {
  return type == T_Q4_1 || type == T_Q5_1;
}

/** Byte lane i of the 32 high bits -> 0x10 where bit (i + 16*second) is set (q5_0 / q5_1). */
@inline function highBits(qh: u32, second: bool): v128 {
  const v = i32x4.splat(<i32>qh);
  const sel = second ? i8x16(2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3) : i8x16(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
  const bit = i8x16(1, 2, 4, 8, 16, 32, 64, -128, 1, 2, 4, 8, 16, 32, 64, -128);
  return v128.and(i8x16.eq(v128.and(i8x16.swizzle(v, sel), bit), bit), i8x16.splat(0x10));
}

/** One block at p . the 32 natural-order int16 activations at x, as i32x4 partial sums of q . x. */
@inline function dotBlock(type: i32, p: usize, x: usize): v128 {
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
  const a = i32x4.add(i32x4.dot_i16x8_s(i16x8.extend_low_i8x16_s(lo), v128.load(x)), i32x4.dot_i16x8_s(i16x8.extend_high_i8x16_s(lo), v128.load(x, 16)));
  const b = i32x4.add(i32x4.dot_i16x8_s(i16x8.extend_low_i8x16_s(hi), v128.load(x, 32)), i32x4.dot_i16x8_s(i16x8.extend_high_i8x16_s(hi), v128.load(x, 48)));
  return i32x4.add(a, b);
}

/** The f16 values at p0..p3 as f32x4, for finite values (the caller checked: vecScalesFinite). */
@inline function halves4(p0: usize, p1: usize, p2: usize, p3: usize): v128 {
  let h = v128.load16_lane(p0, i16x8.splat(0), 0);
  h = v128.load16_lane(p1, h, 1);
  h = v128.load16_lane(p2, h, 2);
  h = v128.load16_lane(p3, h, 3);
  return halfToFloat4s(i32x4.extend_low_i16x8_s(h));
}

/**
 * `rows` rows of `type` at w (rb bytes apart, nb blocks each) . x into y[r]: xq [nb*32] i16 natural order,
 * xd [nb] f32 scales, xs [nb] i16 sums of each block's quantized values (packActVec, ORDER_NATURAL).
 * d * dx * (q . x) (+ m * dx * sum x) per block, four rows in lanes; the last rows one at a time.
 */
export function rowsBlocks(type: i32, w: usize, rb: usize, rows: i32, nb: usize, xq: usize, xd: usize, xs: usize, y: usize): void {
  const bs = blockBytes(type);
  const mins = hasMin(type);
  const last = w + <usize>rows * rb - 1;
  let r = 0;
  for (; r + 4 <= rows; r += 4) {
    let p0 = w + <usize>r * rb;
    let p1 = p0 + rb, p2 = p1 + rb, p3 = p2 + rb;
    let acc = f32x4.splat(0);
    // The row group two ahead, touched at the pace this one is read (touch.ts).
    let t = p0 + (rb << 3);
    let sink: u32 = 0;
    for (let b: usize = 0; b < nb; b++) {
      sink += touch(t, last) + touch(t + 64, last);
      t += bs << 2;
      const x = xq + (b << 6);
      const s = hsum4i(dotBlock(type, p0, x), dotBlock(type, p1, x), dotBlock(type, p2, x), dotBlock(type, p3, x));
      const dx = v128.load32_splat(xd + (b << 2));
      acc = f32x4.add(acc, f32x4.mul(f32x4.convert_i32x4_s(s), f32x4.mul(halves4(p0, p1, p2, p3), dx)));
      if (mins) acc = f32x4.add(acc, f32x4.mul(halves4(p0 + 2, p1 + 2, p2 + 2, p3 + 2), f32x4.mul(dx, f32x4.splat(<f32>load<i16>(xs + (b << 1))))));
      p0 += bs; p1 += bs; p2 += bs; p3 += bs;
    }
    keep(sink);
    v128.store(y + (<usize>r << 2), acc);
  }
  for (; r < rows; r++) {
    let p = w + <usize>r * rb;
    let t: f32 = 0;
    for (let b: usize = 0; b < nb; b++) {
      const s = dotBlock(type, p, xq + (b << 6));
      const dx = load<f32>(xd + (b << 2));
      const q = <f32>(i32x4.extract_lane(s, 0) + i32x4.extract_lane(s, 1) + i32x4.extract_lane(s, 2) + i32x4.extract_lane(s, 3));
      t += q * (halfToFloat(<u32>load<u16>(p)) * dx);
      if (mins) t += halfToFloat(<u32>load<u16>(p + 2)) * (dx * <f32>load<i16>(xs + (b << 1)));
      p += bs;
    }
    store<f32>(y + (<usize>r << 2), t);
  }
}

/** 1 when every f16 d (and m, for the types with one) of `bytes` of blocks at w is finite, else 0. */
export function blockScalesFinite(type: i32, w: usize, bytes: usize): i32 {
  const bs = blockBytes(type);
  const mins = hasMin(type);
  let bad: u32 = 0;
  for (let p = w; p < w + bytes; p += bs) {
    bad |= <u32>((load<u16>(p) & 0x7c00) == 0x7c00);
    if (mins) bad |= <u32>((load<u16>(p + 2) & 0x7c00) == 0x7c00);
  }
  return bad ? 0 : 1;
}
