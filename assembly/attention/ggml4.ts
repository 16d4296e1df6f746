// ggml's other 32-value 4/5-bit blocks (q4_1, q5_0, q5_1, iq4_nl): exact dequantizers (the same float32
// products as the reference decoders) for the tiled kernels in tiled.ts.
import { halfToFloat } from '../shared/common';

const QK = 32;

/** Bytes 0..15 = low nibbles (elements 0..15), 16..31 = high nibbles (elements 16..31) of 16 code bytes. */
@inline function nibbles(qs: v128, high: bool): v128 {
  return high ? i8x16.shr_u(qs, 4) : v128.and(qs, i8x16.splat(0x0f));
}

/** The fifth bit (0 or 16) of elements 0..15 (high = false) or 16..31 from the 32-bit qh at p. */
@inline function fifthBit(p: usize, high: bool): v128 {
  const qh = v128.load32_zero(p);
  const bytes = high
    ? i8x16.swizzle(qh, i8x16(2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3))
    : i8x16.swizzle(qh, i8x16(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1));
  const bit = v128.and(bytes, i8x16(1, 2, 4, 8, 16, 32, 64, -128, 1, 2, 4, 8, 16, 32, 64, -128));
  return v128.and(i8x16.ne(bit, i8x16.splat(0)), i8x16.splat(0x10));
}

/** 16 signed bytes -> 16 f32 at o (x * d, then + m when hasMin). */
@inline function store16(o: usize, v: v128, d: v128, m: v128, hasMin: bool): void {
  const a = i16x8.extend_low_i8x16_s(v);
  const b = i16x8.extend_high_i8x16_s(v);
  let x0 = f32x4.mul(f32x4.convert_i32x4_s(i32x4.extend_low_i16x8_s(a)), d);
  let x1 = f32x4.mul(f32x4.convert_i32x4_s(i32x4.extend_high_i16x8_s(a)), d);
  let x2 = f32x4.mul(f32x4.convert_i32x4_s(i32x4.extend_low_i16x8_s(b)), d);
  let x3 = f32x4.mul(f32x4.convert_i32x4_s(i32x4.extend_high_i16x8_s(b)), d);
  if (hasMin) {
    x0 = f32x4.add(x0, m);
    x1 = f32x4.add(x1, m);
    x2 = f32x4.add(x2, m);
    x3 = f32x4.add(x3, m);
  }
  v128.store(o, x0);
  v128.store(o, x1, 16);
  v128.store(o, x2, 32);
  v128.store(o, x3, 48);
}

// ---- q4_1: f16 d, f16 m, 16 code bytes; x = q * d + m.
@inline export function q4_1Blocks(src: usize, nb: i32, dst: usize): void {
  for (let ib = 0; ib < nb; ib++) {
    const p = src + <usize>ib * 20;
    const o = dst + (<usize>ib << 7);
    const d = f32x4.splat(halfToFloat(load<u16>(p)));
    const m = f32x4.splat(halfToFloat(load<u16>(p, 2)));
    const qs = v128.load(p + 4);
    store16(o, nibbles(qs, false), d, m, true);
    store16(o + 64, nibbles(qs, true), d, m, true);
  }
}

// ---- q5_0: f16 d, 32-bit qh, 16 code bytes; x = (q5 - 16) * d.
@inline export function q5_0Blocks(src: usize, nb: i32, dst: usize): void {
  const z = f32x4.splat(0);
  for (let ib = 0; ib < nb; ib++) {
    const p = src + <usize>ib * 22;
    const o = dst + (<usize>ib << 7);
    const d = f32x4.splat(halfToFloat(load<u16>(p)));
    const qs = v128.load(p + 6);
    store16(o, i8x16.sub(v128.or(nibbles(qs, false), fifthBit(p + 2, false)), i8x16.splat(16)), d, z, false);
    store16(o + 64, i8x16.sub(v128.or(nibbles(qs, true), fifthBit(p + 2, true)), i8x16.splat(16)), d, z, false);
  }
}

// ---- q5_1: f16 d, f16 m, 32-bit qh, 16 code bytes; x = q5 * d + m.
@inline export function q5_1Blocks(src: usize, nb: i32, dst: usize): void {
  for (let ib = 0; ib < nb; ib++) {
    const p = src + <usize>ib * 24;
    const o = dst + (<usize>ib << 7);
    const d = f32x4.splat(halfToFloat(load<u16>(p)));
    const m = f32x4.splat(halfToFloat(load<u16>(p, 2)));
    const qs = v128.load(p + 8);
    store16(o, v128.or(nibbles(qs, false), fifthBit(p + 4, false)), d, m, true);
    store16(o + 64, v128.or(nibbles(qs, true), fifthBit(p + 4, true)), d, m, true);
  }
}

// ---- iq4_nl: f16 d, 16 code bytes; x = d * kvalues_iq4nl[code] (integer levels, one byte swizzle).
@inline export function iq4_nlBlocks(src: usize, nb: i32, dst: usize): void {
  const levels = i8x16(-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113);
  const z = f32x4.splat(0);
  for (let ib = 0; ib < nb; ib++) {
    const p = src + <usize>ib * 18;
    const o = dst + (<usize>ib << 7);
    const d = f32x4.splat(halfToFloat(load<u16>(p)));
    const qs = v128.load(p + 2);
    store16(o, i8x16.swizzle(levels, nibbles(qs, false)), d, z, false);
    store16(o + 64, i8x16.swizzle(levels, nibbles(qs, true)), d, z, false);
  }
}

