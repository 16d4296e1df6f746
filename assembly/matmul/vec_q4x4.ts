// q4_0 rows repacked at load four at a time (T_Q4_0X4; src/kernels/matmul/interleave.ts defines the layout):
// per 32-value block a group holds the four rows' f16 d (8 B), then four 16-byte vectors, vector k holding
// qs bytes 4k..4k+3 of rows 0, 1, 2, 3. One relaxed dot then gives each row its own i32 lane: no horizontal
// sums, no shuffles, and x enters as 4-byte broadcasts. Per block the float steps are rowsQ's (vec.ts) for
// q4_0, so the bits are those of the q4_0 kernels (the matmul gate checks against the rows not repacked).
import { actInverse, actScale, round8, sum32 } from './act';
import { halfToFloat4s } from './decode';
import { groupHalvesFinite, storeWordsByRow } from './group4';

/** Bytes of one block of a group: four f16 scales and 64 bytes of nibbles. */
const GROUP_BLOCK: usize = 72;

/**
 * Repacks `rows` (% 4 == 0) q4_0 rows at w (rowBytes = 18 * blocks apart) into q4_0x4 in place, one group at
 * a time through tmp [4 * rowBytes].
 */
export function repackQ4x4(w: usize, rowBytes: i32, rows: i32, tmp: usize): void {
  const rb = <usize>rowBytes;
  const nb = rb / 18;
  for (let g = 0; g < rows; g += 4) {
    const gp = w + <usize>g * rb;
    memory.copy(tmp, gp, rb << 2);
    for (let b: usize = 0; b < nb; b++) {
      const o = gp + b * GROUP_BLOCK;
      const s0 = tmp + b * 18, s1 = s0 + rb, s2 = s1 + rb, s3 = s2 + rb;
      store<u16>(o, load<u16>(s0));
      store<u16>(o + 2, load<u16>(s1));
      store<u16>(o + 4, load<u16>(s2));
      store<u16>(o + 6, load<u16>(s3));
      // The four rows' 16 qs bytes as 4 x 4 words, transposed: vector k takes word k of each row.
      storeWordsByRow(v128.load(s0, 2), v128.load(s1, 2), v128.load(s2, 2), v128.load(s3, 2), o + 8);
    }
  }
}

/**
 * One token x [cols] f32 -> xq [cols] i8 in natural order, xd [cols/32] f32 (d = amax / 127), xs [cols/32]
 * i16 (the sum of each block's quantized values): packActVec's values, as bytes.
 */
export function packActNat8(x: usize, cols: i32, xq: usize, xd: usize, xs: usize): void {
  for (let b0: usize = 0; b0 < <usize>cols; b0 += 32) {
    const d = actScale(x + (b0 << 2), 32);
    store<f32>(xd + ((b0 >> 5) << 2), d);
    const id = actInverse(d);
    const p = x + (b0 << 2);
    const q0 = round8(p, id), q1 = round8(p + 32, id), q2 = round8(p + 64, id), q3 = round8(p + 96, id);
    store<i16>(xs + (b0 >> 4), <i16>sum32(q0, q1, q2, q3));
    v128.store(xq + b0, i8x16.narrow_i16x8_s(q0, q1));
    v128.store(xq + b0, i8x16.narrow_i16x8_s(q2, q3), 16);
  }
}

/**
 * Half a block of a group: the 2 x 16 bytes at p (vectors k, k + 1) . x at xb (int8; vector k's low nibbles
 * against xb + 4k, high against xb + 16 + 4k): each row's sum in its i16 lanes 2r, 2r + 1 (8 products of at
 * most 15 * 127 each).
 */
@inline function halfGroup(p: usize, xb: usize, m: v128): v128 {
  if (!ASC_FEATURE_RELAXED_SIMD) return v128.splat<i32>(0);
  const v0 = v128.load(p), v1 = v128.load(p, 16);
  return i16x8.add(
    i16x8.add(i16x8.relaxed_dot_i8x16_i7x16_s(v128.load32_splat(xb), v128.and(v0, m)), i16x8.relaxed_dot_i8x16_i7x16_s(v128.load32_splat(xb, 16), v128.and(i16x8.shr_u(v0, 4), m))),
    i16x8.add(i16x8.relaxed_dot_i8x16_i7x16_s(v128.load32_splat(xb, 4), v128.and(v1, m)), i16x8.relaxed_dot_i8x16_i7x16_s(v128.load32_splat(xb, 20), v128.and(i16x8.shr_u(v1, 4), m))),
  );
}

/**
 * acc plus block b of the group block at p (rowsQ's q4_0 step: f32(q . x - 8 sum x) * (d * dx) per row lane).
 * The first half's sum and then acc are stored to yg, the group's output (overwritten at its end), which keeps
 * each step's loads after the step before's arithmetic: V8 would issue all the loads first and spill (as in
 * vec_q4kx4.ts). bench/matmul-ab.ts, one thread, n 1: a store per half block 0.83-0.86x the time, warm and cold.
 */
@inline function blockStep(acc: v128, p: usize, b: usize, xq: usize, xd: usize, xs: usize, m: v128, yg: usize): v128 {
  const xb = xq + (b << 5);
  const h = halfGroup(p + 8, xb, m);
  v128.store(yg, h);
  const q = i32x4.extadd_pairwise_i16x8_s(i16x8.add(h, halfGroup(p + 40, xb + 8, m)));
  const s = i32x4.sub(q, i32x4.splat(<i32>load<i16>(xs + (b << 1)) << 3));
  const d = halfToFloat4s(i32x4.extend_low_i16x8_s(v128.load64_zero(p)));
  const r = f32x4.add(acc, f32x4.mul(f32x4.convert_i32x4_s(s), f32x4.mul(d, v128.load32_splat(xd + (b << 2)))));
  v128.store(yg, r);
  return r;
}

/**
 * y[r] = W[r] . x for `rows` (% 4 == 0) q4_0x4 rows at w (rowBytes per row, 4 * rowBytes per group), x
 * packed by packActNat8. Per block and row: acc += f32(q . x - 8 sum x) * (d * dx), rowsQ's q4_0 steps.
 * Relaxed-SIMD builds only (the engine repacks only where repackTypeOf says so).
 */
export function matmulVecQ4x4(w: usize, rowBytes: i32, rows: i32, cols: i32, xq: usize, xd: usize, xs: usize, y: usize): void {
  if (!ASC_FEATURE_RELAXED_SIMD) unreachable();
  const nb = <usize>(cols >> 5);
  const m = i8x16.splat(0x0f);
  for (let g = 0; g < rows; g += 4) {
    let p = w + <usize>g * <usize>rowBytes;
    const yg = y + (<usize>g << 2);
    let acc = f32x4.splat(0);
    // Two blocks a pass, in order: 0.82-0.88x the time of one (bench/matmul-ab.ts, one thread, n 1, warm and cold;
    // before the stores in blockStep, 1.04-1.18x); four 0.93-1.0x of two.
    let b: usize = 0;
    for (; b + 2 <= nb; b += 2) {
      acc = blockStep(acc, p, b, xq, xd, xs, m, yg);
      acc = blockStep(acc, p + GROUP_BLOCK, b + 1, xq, xd, xs, m, yg);
      p += GROUP_BLOCK << 1;
    }
    if (b < nb) acc = blockStep(acc, p, b, xq, xd, xs, m, yg);
    v128.store(yg, acc);
  }
}
/** 1 when every f16 d in `bytes` of q4_0x4 groups at w is finite (vec.ts vecScalesFinite for this layout). */
export function q4x4ScalesFinite(w: usize, bytes: usize): i32 {
  return groupHalvesFinite(w, bytes, GROUP_BLOCK, false);
}
