// Weight rows of every quantized ggml type decoded to int8 + per-16-value scales, the one form both matmul
// paths consume: x = sc[g] * q + mn[g] for value i in group g = i / 16 (32-value groups store their scale twice).
// Layouts follow ggml's block structs; src/formats/*.ts and src/gguf/kquants.ts are the definitions.
import { halfToFloat } from '../shared/common';

// ggml type ids (src/gguf/types.ts).
export const T_F32: i32 = 0;
export const T_F16: i32 = 1;
export const T_Q4_0: i32 = 2;
export const T_Q4_1: i32 = 3;
export const T_Q5_0: i32 = 6;
export const T_Q5_1: i32 = 7;
export const T_Q8_0: i32 = 8;
export const T_Q4_K: i32 = 12;
export const T_Q5_K: i32 = 13;
export const T_Q6_K: i32 = 14;
export const T_IQ4_NL: i32 = 20;
export const T_BF16: i32 = 30;
/**
 * Not a ggml type: q4_0 rows repacked at load four at a time (vec_q4x4.ts; src/kernels/matmul/interleave.ts is
 * the definition), 256 + q4_0's id. Its rowBytes is q4_0's; a group of four rows fills 4 * rowBytes.
 */
export const T_Q4_0X4: i32 = 258;
/** Not a ggml type either: q4_K rows in four-row groups the same way (vec_q4kx4.ts), 256 + q4_K's id. */
export const T_Q4_KX4: i32 = 268;
/** q8_0 rows in four-row groups (vec_q8x4.ts), 256 + q8_0's id: per block four f16 d, then each row's 32 qs. */
export const T_Q8_0X4: i32 = 264;
/**
 * Four-row groups of a 32-value block type's whole blocks, row 0's to row 3's in turn (vec.ts rowsQ reads a group as
 * one stream): GROUPED + the type's id (q4_0 in baseline builds; q4_1, q5_0, q5_1, iq4_nl in both).
 */
export const GROUPED: i32 = 512;
export const T_Q4_0G4: i32 = GROUPED + T_Q4_0;
export const T_Q4_1G4: i32 = GROUPED + T_Q4_1;
export const T_Q5_0G4: i32 = GROUPED + T_Q5_0;
export const T_Q5_1G4: i32 = GROUPED + T_Q5_1;
export const T_IQ4_NLG4: i32 = GROUPED + T_IQ4_NL;

/** The file type whose blocks a layout holds (the type itself for a file type). */
@inline export function fileTypeOf(type: i32): i32 {
  return type >= GROUPED ? type - GROUPED : type;
}

/** Sum of the four i32 lanes. */
@inline export function hsumi(a: v128): i32 {
  return i32x4.extract_lane(a, 0) + i32x4.extract_lane(a, 1) + i32x4.extract_lane(a, 2) + i32x4.extract_lane(a, 3);
}

@inline function f16at(p: usize): f32 {
  return halfToFloat(<u32>load<u16>(p));
}

/** Scale of 32 values: written for both of its 16-value groups. */
@inline function pair(a: usize, g32: usize, v: f32): void {
  store<f32>(a + (g32 << 3), v);
  store<f32>(a + (g32 << 3), v, 4);
}

/** Byte lane i of a 4-byte high-bit field -> 0x10 where bit (i + 8*half) is set (q5_0 / q5_1). */
@inline export function highBits(qh: u32, second: bool): v128 {
  const v = i32x4.splat(<i32>qh);
  const sel = second ? i8x16(2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3) : i8x16(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
  const bit = i8x16(1, 2, 4, 8, 16, 32, 64, -128, 1, 2, 4, 8, 16, 32, 64, -128);
  const set = i8x16.eq(v128.and(i8x16.swizzle(v, sel), bit), bit);
  return v128.and(set, i8x16.splat(0x10));
}

/**
 * q4_K / q5_K sub-block j's 6-bit scale (low 16 bits) and min (high 16 bits): ggml's get_scale_min_k4, the 12
 * scale bytes as 3 words `stride` bytes apart from s (4: a block's own; 16: q4_Kx4's, one row's words).
 */
@inline function scaleMinK4(s: usize, j: usize, stride: usize = 4): u32 {
  const w1 = s + stride, w2 = w1 + stride;
  if (j < 4) return (<u32>load<u8>(s + j) & 63) | ((<u32>load<u8>(w1 + j) & 63) << 16);
  const i = j - 4;
  const sc = (<u32>load<u8>(w2 + i) & 0xf) | ((<u32>load<u8>(s + i) >> 6) << 4);
  const m = (<u32>load<u8>(w2 + i) >> 4) | ((<u32>load<u8>(w1 + i) >> 6) << 4);
  return sc | (m << 16);
}

/**
 * Row r of the weight at w (rowBytes apart) as decodeRowI8 gives it, for every layout: a q4_0x4 row is read
 * from its four-row group (callers start their rows on a group, as every job's units do).
 */
@inline export function decodeRowI8At(type: i32, w: usize, rowBytes: i32, r: i32, cols: i32, q: usize, sc: usize, mn: usize): bool {
  if (type == T_Q4_0X4) {
    decodeRowQ4x4(w + <usize>(r & ~3) * <usize>rowBytes, <usize>(r & 3), cols, q, sc);
    return false;
  }
  if (type == T_Q4_KX4) {
    decodeRowQ4Kx4(w + <usize>(r & ~3) * <usize>rowBytes, <usize>(r & 3), cols, q, sc, mn);
    return true;
  }
  if (type == T_Q8_0X4) {
    decodeRowQ8x4(w + <usize>(r & ~3) * <usize>rowBytes, <usize>(r & 3), cols, q, sc);
    return false;
  }
  if (type >= GROUPED) {
    // Row r & 3 of its group: its blocks lie four blocks apart, from its own block on.
    const file = type - GROUPED;
    const bs = <usize>rowBytes / <usize>(cols >> 5);
    return decodeRowI8(file, w + <usize>(r & ~3) * <usize>rowBytes + <usize>(r & 3) * bs, cols, q, sc, mn, bs << 2);
  }
  return decodeRowI8(type, w + <usize>r * <usize>rowBytes, cols, q, sc, mn);
}

/** Words o, o + 16, o + 32, o + 48 (one row's units of a four-row group) as one vector. */
@inline function groupWords(o: usize): v128 {
  let v = v128.load32_zero(o);
  v = v128.load32_lane(o + 16, v, 1);
  v = v128.load32_lane(o + 32, v, 2);
  return v128.load32_lane(o + 48, v, 3);
}

/**
 * Row `lane` of the q4_Kx4 group at g (blocks of 576 B: four f16 d, four dmin, scale words A, B, C of the
 * four rows, then 32 x 16 B of 4 qs bytes per row) as q4_K's decode.
 */
function decodeRowQ4Kx4(g: usize, lane: usize, cols: i32, q: usize, sc: usize, mn: usize): void {
  const m4 = i8x16.splat(0x0f);
  const nb = <usize>(cols >> 8);
  for (let b: usize = 0; b < nb; b++) {
    const p = g + b * 576;
    const d = f16at(p + (lane << 1));
    const dmin = f16at(p + 8 + (lane << 1));
    for (let j: usize = 0; j < 8; j++) {
      const smv = scaleMinK4(p + 16 + (lane << 2), j, 16);
      const gi = (b << 3) + j;
      pair(sc, gi, d * <f32>(smv & 0xffff));
      pair(mn, gi, -dmin * <f32>(smv >>> 16));
      // Sub-block j: the low (even j) or high nibbles of the row's 32 qs bytes of pair j / 2 (vectors 8(j/2)..+7).
      const src = p + 64 + ((j >> 1) << 7) + (lane << 2);
      const v0 = groupWords(src), v1 = groupWords(src + 64);
      v128.store(q + (gi << 5), j & 1 ? i8x16.shr_u(v0, 4) : v128.and(v0, m4));
      v128.store(q + (gi << 5), j & 1 ? i8x16.shr_u(v1, 4) : v128.and(v1, m4), 16);
    }
  }
}

/** Row `lane` of the q8_0x4 group at g (blocks of 136 B: four f16 d, then each row's 32 qs) as q8_0's decode. */
function decodeRowQ8x4(g: usize, lane: usize, cols: i32, q: usize, sc: usize): void {
  const nb = <usize>(cols >> 5);
  for (let b: usize = 0; b < nb; b++) {
    const p = g + b * 136;
    pair(sc, b, f16at(p + (lane << 1)));
    const s = p + 8 + (lane << 5);
    v128.store(q + (b << 5), v128.load(s));
    v128.store(q + (b << 5), v128.load(s, 16), 16);
  }
}

/** Row `lane` of the q4_0x4 group at g (blocks of 72 B: four f16 d, then 4 x 16 B of 4 qs bytes per row) as q4_0's decode. */
function decodeRowQ4x4(g: usize, lane: usize, cols: i32, q: usize, sc: usize): void {
  const m4 = i8x16.splat(0x0f);
  const nb = <usize>(cols >> 5);
  for (let b: usize = 0; b < nb; b++) {
    const p = g + b * 72;
    pair(sc, b, f16at(p + (lane << 1)));
    const v = groupWords(p + 8 + (lane << 2));
    v128.store(q + (b << 5), i8x16.sub(v128.and(v, m4), i8x16.splat(8)));
    v128.store(q + (b << 5), i8x16.sub(i8x16.shr_u(v, 4), i8x16.splat(8)), 16);
  }
}

/**
 * One weight row of `cols` values at w -> q [cols] i8, sc [cols/16] f32, mn [cols/16] f32 (written only
 * when the type has mins). Returns true when it does (q4_1, q5_1, q4_K, q5_K). cols is a whole number of blocks.
 * `stride`: bytes from one 32-value block to the next (0: the block size; a four-row group's row: four blocks).
 */
export function decodeRowI8(type: i32, w: usize, cols: i32, q: usize, sc: usize, mn: usize, stride: usize = 0): bool {
  const m4 = i8x16.splat(0x0f);
  if (type == T_Q8_0) {
    const nb = <usize>(cols >> 5);
    for (let b: usize = 0; b < nb; b++) {
      const p = w + b * (stride ? stride : 34);
      pair(sc, b, f16at(p));
      v128.store(q + (b << 5), v128.load(p, 2));
      v128.store(q + (b << 5), v128.load(p, 18), 16);
    }
    return false;
  }
  if (type == T_Q4_0 || type == T_IQ4_NL) {
    // iq4_nl: the nibble indexes ggml's kvalues_iq4nl; q4_0: the nibble minus 8.
    const lut = i8x16(-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113);
    const nl = type == T_IQ4_NL;
    const nb = <usize>(cols >> 5);
    for (let b: usize = 0; b < nb; b++) {
      const p = w + b * (stride ? stride : 18);
      pair(sc, b, f16at(p));
      const v = v128.load(p, 2);
      const lo = v128.and(v, m4);
      const hi = i8x16.shr_u(v, 4);
      v128.store(q + (b << 5), nl ? i8x16.swizzle(lut, lo) : i8x16.sub(lo, i8x16.splat(8)));
      v128.store(q + (b << 5), nl ? i8x16.swizzle(lut, hi) : i8x16.sub(hi, i8x16.splat(8)), 16);
    }
    return false;
  }
  if (type == T_Q4_1) {
    const nb = <usize>(cols >> 5);
    for (let b: usize = 0; b < nb; b++) {
      const p = w + b * (stride ? stride : 20);
      pair(sc, b, f16at(p));
      pair(mn, b, f16at(p + 2));
      const v = v128.load(p, 4);
      v128.store(q + (b << 5), v128.and(v, m4));
      v128.store(q + (b << 5), i8x16.shr_u(v, 4), 16);
    }
    return true;
  }
  if (type == T_Q5_0 || type == T_Q5_1) {
    // q5_1 = q5_0's bits plus a min field before qh; q5_0 centres at 16 instead.
    const one = type == T_Q5_1;
    const bs: usize = one ? 24 : 22;
    const off: usize = one ? 4 : 2;
    const centre = i8x16.splat(one ? 0 : 16);
    const nb = <usize>(cols >> 5);
    for (let b: usize = 0; b < nb; b++) {
      const p = w + b * (stride ? stride : bs);
      pair(sc, b, f16at(p));
      if (one) pair(mn, b, f16at(p + 2));
      const qh = load<u32>(p + off);
      const v = v128.load(p + off + 4);
      v128.store(q + (b << 5), i8x16.sub(v128.or(v128.and(v, m4), highBits(qh, false)), centre));
      v128.store(q + (b << 5), i8x16.sub(v128.or(i8x16.shr_u(v, 4), highBits(qh, true)), centre), 16);
    }
    return one;
  }
  if (type == T_Q4_K || type == T_Q5_K) {
    // 8 sub-blocks of 32: x = d*sc_j*q - dmin*m_j; sub-block j reads the low (even j) or high nibbles of
    // 32 bytes at qs + 32*(j/2); q5_K adds bit j of qh[l] as the fifth bit.
    const five = type == T_Q5_K;
    const bs: usize = five ? 176 : 144;
    const qsOff: usize = five ? 48 : 16;
    const nb = <usize>(cols >> 8);
    for (let b: usize = 0; b < nb; b++) {
      const p = w + b * bs;
      const d = f16at(p);
      const dmin = f16at(p + 2);
      const qh0 = v128.load(p, 16);
      const qh1 = v128.load(p, 32);
      for (let j: usize = 0; j < 8; j++) {
        const smv = scaleMinK4(p + 4, j);
        const g = (b << 3) + j;
        pair(sc, g, d * <f32>(smv & 0xffff));
        pair(mn, g, -dmin * <f32>(smv >>> 16));
        const src = p + qsOff + ((j >> 1) << 5);
        let v0 = v128.load(src);
        let v1 = v128.load(src, 16);
        if (j & 1) {
          v0 = i8x16.shr_u(v0, 4);
          v1 = i8x16.shr_u(v1, 4);
        } else {
          v0 = v128.and(v0, m4);
          v1 = v128.and(v1, m4);
        }
        if (five) {
          const sh = <i32>j;
          v0 = v128.or(v0, i8x16.shl(v128.and(i8x16.shr_u(qh0, sh), i8x16.splat(1)), 4));
          v1 = v128.or(v1, i8x16.shl(v128.and(i8x16.shr_u(qh1, sh), i8x16.splat(1)), 4));
        }
        v128.store(q + (g << 5), v0);
        v128.store(q + (g << 5), v1, 16);
      }
    }
    return true;
  }
  if (type == T_Q6_K) {
    // 16 sub-blocks of 16: x = d*scales[g]*(q - 32); per 128 values, 64 ql bytes and 32 qh bytes
    // (see src/gguf/kquants.ts for which nibble and bit pair feed which value).
    const nb = <usize>(cols >> 8);
    const c32 = i8x16.splat(32);
    const m3 = i8x16.splat(3);
    for (let b: usize = 0; b < nb; b++) {
      const p = w + b * 210;
      const d = f16at(p + 208);
      for (let g: usize = 0; g < 16; g++) store<f32>(sc + (((b << 4) + g) << 2), d * <f32>load<i8>(p + 192 + g));
      for (let h: usize = 0; h < 2; h++) {
        const ql = p + (h << 6);
        const qh = p + 128 + (h << 5);
        const out = q + (b << 8) + (h << 7);
        for (let l: usize = 0; l < 32; l += 16) {
          const A = v128.load(ql + l);
          const B = v128.load(ql + 32 + l);
          const H = v128.load(qh + l);
          v128.store(out + l, i8x16.sub(v128.or(v128.and(A, m4), i8x16.shl(v128.and(H, m3), 4)), c32));
          v128.store(out + 32 + l, i8x16.sub(v128.or(v128.and(B, m4), i8x16.shl(v128.and(i8x16.shr_u(H, 2), m3), 4)), c32));
          v128.store(out + 64 + l, i8x16.sub(v128.or(i8x16.shr_u(A, 4), i8x16.shl(v128.and(i8x16.shr_u(H, 4), m3), 4)), c32));
          v128.store(out + 96 + l, i8x16.sub(v128.or(i8x16.shr_u(B, 4), i8x16.shl(i8x16.shr_u(H, 6), 4)), c32));
        }
      }
    }
    return false;
  }
  unreachable();
  return false;
}

/**
 * K-quant row r of the weight at w (rowBytes apart; q4_Kx4: from its four-row group) as integer scales (the
 * tiled kernel's exact form, tile_q8.ts): isc [cols/32] i32 (q6_K: [cols/16], signed) sub-block scales, imn
 * [cols/32] i32 mins (q4_K / q5_K), dd [cols/256][2] f32 d and dmin.
 */
export function kScalesAt(type: i32, w: usize, rowBytes: i32, r: i32, cols: i32, isc: usize, imn: usize, dd: usize): void {
  const nb = <usize>(cols >> 8);
  const row = w + <usize>r * <usize>rowBytes;
  if (type == T_Q6_K) {
    for (let b: usize = 0; b < nb; b++) {
      const p = row + b * 210;
      store<f32>(dd + (b << 3), f16at(p + 208));
      store<f32>(dd + (b << 3), 0, 4);
      for (let g: usize = 0; g < 16; g++) store<i32>(isc + (((b << 4) + g) << 2), <i32>load<i8>(p + 192 + g));
    }
    return;
  }
  // d, dmin and the scale words of block b: a block's own, or q4_Kx4's fields of row `lane` of its group.
  const grouped = type == T_Q4_KX4;
  const lane = <usize>(r & 3);
  const base = grouped ? w + <usize>(r & ~3) * <usize>rowBytes : row;
  const bs: usize = grouped ? 576 : type == T_Q5_K ? 176 : 144;
  for (let b: usize = 0; b < nb; b++) {
    const p = base + b * bs;
    store<f32>(dd + (b << 3), f16at(grouped ? p + (lane << 1) : p));
    store<f32>(dd + (b << 3), f16at(grouped ? p + 8 + (lane << 1) : p + 2), 4);
    for (let j: usize = 0; j < 8; j++) {
      const smv = grouped ? scaleMinK4(p + 16 + (lane << 2), j, 16) : scaleMinK4(p + 4, j);
      store<i32>(isc + (((b << 3) + j) << 2), <i32>(smv & 0xffff));
      store<i32>(imn + (((b << 3) + j) << 2), <i32>(smv >>> 16));
    }
  }
}

/** The int8 row as f32 values sc*q (+ mn): f [cols] f32. */
export function i8RowToF32(q: usize, sc: usize, mn: usize, hasMin: bool, cols: i32, f: usize): void {
  const ng = <usize>(cols >> 4);
  for (let g: usize = 0; g < ng; g++) {
    const v = v128.load(q + (g << 4));
    const lo = i16x8.extend_low_i8x16_s(v);
    const hi = i16x8.extend_high_i8x16_s(v);
    const s = v128.load32_splat(sc + (g << 2));
    const m = hasMin ? v128.load32_splat(mn + (g << 2)) : f32x4.splat(0);
    const o = f + (g << 6);
    v128.store(o, f32x4.add(f32x4.mul(f32x4.convert_i32x4_s(i32x4.extend_low_i16x8_s(lo)), s), m));
    v128.store(o, f32x4.add(f32x4.mul(f32x4.convert_i32x4_s(i32x4.extend_high_i16x8_s(lo)), s), m), 16);
    v128.store(o, f32x4.add(f32x4.mul(f32x4.convert_i32x4_s(i32x4.extend_low_i16x8_s(hi)), s), m), 32);
    v128.store(o, f32x4.add(f32x4.mul(f32x4.convert_i32x4_s(i32x4.extend_high_i16x8_s(hi)), s), m), 48);
  }
}

/** f16 / bf16 row -> f [cols] f32 (f16: finite values exact; see halfToFloat4s). */
export function halfRowToF32(type: i32, w: usize, cols: i32, f: usize): void {
  const c8 = cols & ~7;
  let i = 0;
  if (type == T_F16) {
    for (; i < c8; i += 8) {
      const h = v128.load(w + (<usize>i << 1));
      v128.store(f + (<usize>i << 2), halfToFloat4s(i32x4.extend_low_i16x8_s(h)));
      v128.store(f + (<usize>i << 2), halfToFloat4s(i32x4.extend_high_i16x8_s(h)), 16);
    }
    for (; i < cols; i++) store<f32>(f + (<usize>i << 2), halfToFloat(<u32>load<u16>(w + (<usize>i << 1))));
  } else {
    for (; i < c8; i += 8) {
      const h = v128.load(w + (<usize>i << 1));
      v128.store(f + (<usize>i << 2), i32x4.shl(i32x4.extend_low_i16x8_u(h), 16));
      v128.store(f + (<usize>i << 2), i32x4.shl(i32x4.extend_high_i16x8_u(h), 16), 16);
    }
    for (; i < cols; i++) store<u32>(f + (<usize>i << 2), <u32>load<u16>(w + (<usize>i << 1)) << 16);
  }
}

/**
 * Four fp16 values, sign-extended to i32 lanes -> f32x4 in three integer/float ops (no branches, no table):
 * h << 13 puts the magnitude in f32 position with sign copies in bits 31..28; masking keeps bit 31, and
 * x 2^112 rebases the exponent (subnormals included). Exact for finite values; Inf/NaN become finite
 * (>= 65536), so the loader checks f16 weights with halfNonFinite and expands those that have any.
 */
@inline export function halfToFloat4s(v: v128): v128 {
  return f32x4.mul(v128.and(i32x4.shl(v, 13), i32x4.splat(0x8fffffff)), f32x4.splat(reinterpret<f32>(0x77800000)));
}

/** Number of fp16 values among `count` at p whose exponent is all ones (Inf or NaN). */
export function halfNonFinite(p: usize, count: i32): i32 {
  const e = i16x8.splat(0x7c00);
  let acc = i16x8.splat(0);
  let i = 0;
  let total = 0;
  const c8 = count & ~7;
  for (; i < c8; i += 8) {
    // eq gives -1 per hit; fold into i32 every 8K vectors so i16 lanes cannot overflow.
    acc = i16x8.sub(acc, i16x8.eq(v128.and(v128.load(p + (<usize>i << 1)), e), e));
    if ((i & 0xffff) == 0xfff8) {
      total += i32x4.extract_lane(i32x4.extadd_pairwise_i16x8_u(acc), 0) + i32x4.extract_lane(i32x4.extadd_pairwise_i16x8_u(acc), 1) + i32x4.extract_lane(i32x4.extadd_pairwise_i16x8_u(acc), 2) + i32x4.extract_lane(i32x4.extadd_pairwise_i16x8_u(acc), 3);
      acc = i16x8.splat(0);
    }
  }
  const s = i32x4.extadd_pairwise_i16x8_u(acc);
  total += i32x4.extract_lane(s, 0) + i32x4.extract_lane(s, 1) + i32x4.extract_lane(s, 2) + i32x4.extract_lane(s, 3);
  for (; i < count; i++) if ((load<u16>(p + (<usize>i << 1)) & 0x7c00) == 0x7c00) total++;
  return total;
}
