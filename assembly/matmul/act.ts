// The int8 activation quantizer every matmul path shares (packActVec, packActQ6K, packActQ8): one scale
// d = amax / 127 per block, x / d rounded to nearest even (llama.cpp's quantize_row_q8_0 / q8_K).

/** d = amax / 127 over the qb f32 values at x (qb % 4 == 0). */
@inline export function actScale(x: usize, qb: usize): f32 {
  let mx = f32x4.splat(0);
  for (let i: usize = 0; i < qb; i += 4) mx = f32x4.max(mx, f32x4.abs(v128.load(x + (i << 2))));
  const amax = Mathf.max(Mathf.max(f32x4.extract_lane(mx, 0), f32x4.extract_lane(mx, 1)), Mathf.max(f32x4.extract_lane(mx, 2), f32x4.extract_lane(mx, 3)));
  return amax / 127;
}

/** 1 / d in every lane, 0 for d = 0 (an all-zero block quantizes to zeros). */
@inline export function actInverse(d: f32): v128 {
  return f32x4.splat(d > 0 ? 1 / d : 0);
}

/** Four f32 values at p, times id, rounded to nearest even, as i32 lanes. */
@inline export function round4(p: usize, id: v128): v128 {
  return i32x4.trunc_sat_f32x4_s(f32x4.nearest(f32x4.mul(v128.load(p), id)));
}

/** Eight f32 values at p, times id, rounded to int16 lanes. */
@inline export function round8(p: usize, id: v128): v128 {
  return i16x8.narrow_i32x4_s(round4(p, id), round4(p + 16, id));
}

/** Sum of the 16-bit lanes of four vectors (|sum| < 2^15 here: 32 values of at most 127). */
@inline export function sum32(a: v128, b: v128, c: v128, d: v128): i32 {
  const s = i32x4.extadd_pairwise_i16x8_s(i16x8.add(i16x8.add(a, b), i16x8.add(c, d)));
  return i32x4.extract_lane(s, 0) + i32x4.extract_lane(s, 1) + i32x4.extract_lane(s, 2) + i32x4.extract_lane(s, 3);
}
