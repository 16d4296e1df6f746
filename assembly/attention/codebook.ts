// nf4 (QLoRA NormalFloat, 64 values: f16 d + 32 code bytes, byte i = element 2i | element 2i+1 << 4) and
// affine int4/int2 per-token groups (f16 d, f16 m, codes low bits first): exact dequantizers for tiles.
import { halfToFloat } from '../shared/common';

/** 16 code bytes (element order) -> their NF4 levels (f32 bits of NF4_LEVELS, one byte plane per swizzle). */
@inline function nf4Levels(c: v128, d: v128, o: usize): void {
  const b0 = i8x16.swizzle(i8x16(0, -79, 48, -96, 77, 63, 113, 0, -1, -29, -35, 58, -72, -85, -77, 0), c);
  const b1 = i8x16.swizzle(i8x16(0, 57, 107, 50, -94, 53, 120, 0, -6, -54, 4, 3, -92, 7, 19, 0), c);
  const b2 = i8x16.swizzle(i8x16(-128, 50, 6, -54, -111, 61, -70, 0, -94, 36, 124, -83, -31, 16, 57, -128), c);
  const b3 = i8x16.swizzle(i8x16(-65, -65, -65, -66, -66, -66, -67, 0, 61, 62, 62, 62, 62, 63, 63, 63), c);
  const l01 = i8x16.shuffle(b0, b1, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const h01 = i8x16.shuffle(b0, b1, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  const l23 = i8x16.shuffle(b2, b3, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const h23 = i8x16.shuffle(b2, b3, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  v128.store(o, f32x4.mul(i16x8.shuffle(l01, l23, 0, 8, 1, 9, 2, 10, 3, 11), d));
  v128.store(o, f32x4.mul(i16x8.shuffle(l01, l23, 4, 12, 5, 13, 6, 14, 7, 15), d), 16);
  v128.store(o, f32x4.mul(i16x8.shuffle(h01, h23, 0, 8, 1, 9, 2, 10, 3, 11), d), 32);
  v128.store(o, f32x4.mul(i16x8.shuffle(h01, h23, 4, 12, 5, 13, 6, 14, 7, 15), d), 48);
}

/** Two nibbles per byte (element 2i low) -> 32 codes in element order: [elements 0..15], [16..31]. */
@inline function nibblesInOrder(qs: v128, high: bool): v128 {
  const lo = v128.and(qs, i8x16.splat(0x0f));
  const hi = i8x16.shr_u(qs, 4);
  return high
    ? i8x16.shuffle(lo, hi, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31)
    : i8x16.shuffle(lo, hi, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
}

/** nb nf4 blocks -> nb * 64 f32: x = level * d (the reference's float32 product). */
@inline export function nf4Blocks(src: usize, nb: i32, dst: usize): void {
  for (let ib = 0; ib < nb; ib++) {
    const p = src + <usize>ib * 34;
    const o = dst + (<usize>ib << 8);
    const d = f32x4.splat(halfToFloat(load<u16>(p)));
    for (let j: usize = 0; j < 32; j += 16) {
      const qs = v128.load(p + 2 + j);
      nf4Levels(nibblesInOrder(qs, false), d, o + (j << 3));
      nf4Levels(nibblesInOrder(qs, true), d, o + (j << 3) + 64);
    }
  }
}

/** 16 unsigned codes -> 16 f32 at o: m + code * d (code * d is exact in f32, so one rounding, as the reference). */
@inline function affine16(o: usize, c: v128, d: v128, m: v128): void {
  const a = i16x8.extend_low_i8x16_u(c);
  const b = i16x8.extend_high_i8x16_u(c);
  v128.store(o, f32x4.add(m, f32x4.mul(f32x4.convert_i32x4_s(i32x4.extend_low_i16x8_u(a)), d)));
  v128.store(o, f32x4.add(m, f32x4.mul(f32x4.convert_i32x4_s(i32x4.extend_high_i16x8_u(a)), d)), 16);
  v128.store(o, f32x4.add(m, f32x4.mul(f32x4.convert_i32x4_s(i32x4.extend_low_i16x8_u(b)), d)), 32);
  v128.store(o, f32x4.add(m, f32x4.mul(f32x4.convert_i32x4_s(i32x4.extend_high_i16x8_u(b)), d)), 48);
}

/** nb int4 blocks of `group` values (4 + group/2 bytes) -> f32. */
@inline export function int4Blocks(src: usize, nb: i32, dst: usize, group: i32): void {
  const bb = <usize>(4 + (group >> 1));
  for (let ib = 0; ib < nb; ib++) {
    const p = src + <usize>ib * bb;
    const o = dst + ((<usize>ib * group) << 2);
    const d = f32x4.splat(halfToFloat(load<u16>(p)));
    const m = f32x4.splat(halfToFloat(load<u16>(p, 2)));
    for (let j: usize = 0; j < <usize>(group >> 1); j += 16) {
      const qs = v128.load(p + 4 + j);
      affine16(o + (j << 3), nibblesInOrder(qs, false), d, m);
      affine16(o + (j << 3) + 64, nibblesInOrder(qs, true), d, m);
    }
  }
}

/** nb int2 blocks of `group` values (4 + group/4 bytes) -> f32; 8 code bytes (32 values) at a time. */
@inline export function int2Blocks(src: usize, nb: i32, dst: usize, group: i32): void {
  const bb = <usize>(4 + (group >> 2));
  for (let ib = 0; ib < nb; ib++) {
    const p = src + <usize>ib * bb;
    const o = dst + ((<usize>ib * group) << 2);
    const d = f32x4.splat(halfToFloat(load<u16>(p)));
    const m = f32x4.splat(halfToFloat(load<u16>(p, 2)));
    for (let j: usize = 0; j < <usize>(group >> 2); j += 8) {
      const qs = v128.load64_zero(p + 4 + j);
      const three = i8x16.splat(3);
      const c0 = v128.and(qs, three);
      const c1 = v128.and(i8x16.shr_u(qs, 2), three);
      const c2 = v128.and(i8x16.shr_u(qs, 4), three);
      const c3 = i8x16.shr_u(qs, 6);
      // Element 4i + k is code k of byte i: interleave bytes, then byte pairs.
      const e01 = i8x16.shuffle(c0, c1, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
      const e23 = i8x16.shuffle(c2, c3, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
      affine16(o + (j << 4), i16x8.shuffle(e01, e23, 0, 8, 1, 9, 2, 10, 3, 11), d, m);
      affine16(o + (j << 4) + 64, i16x8.shuffle(e01, e23, 4, 12, 5, 13, 6, 14, 7, 15), d, m);
    }
  }
}

/**
 * nb sign blocks (32 values, 32/g f16 scales then 32 sign bits) -> f32: x = bit ? -s : s, built by xor-ing
 * the sign bit into s (so s = 0 with bit 1 gives -0, as the reference's negation does).
 */
@inline export function signBlocks(src: usize, nb: i32, dst: usize, g: i32): void {
  const sets = 32 / g;
  const bb = <usize>(2 * sets + 4);
  const lane = i32x4(1, 2, 4, 8);
  for (let ib = 0; ib < nb; ib++) {
    const p = src + <usize>ib * bb;
    const o = dst + (<usize>ib << 7);
    const bits = load<u32>(p + <usize>(2 * sets));
    for (let i = 0; i < 8; i++) {
      const s = f32x4.splat(halfToFloat(load<u16>(p + <usize>(((i << 2) / g) << 1))));
      const set = i32x4.ne(v128.and(i32x4.splat(<i32>(bits >>> (i << 2))), lane), i32x4.splat(0));
      v128.store(o + (<usize>i << 4), v128.xor(s, v128.and(set, i32x4.splat(0x80000000))));
    }
  }
}
