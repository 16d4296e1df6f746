// q8_0 rows repacked at load four at a time (T_Q8_0X4; src/kernels/matmul/interleave.ts defines the layout):
// per 32-value block a group holds the four rows' f16 d (8 B), then each row's 32 qs bytes in turn (136 B).
// A four-row pass then reads one address stream, as a one-row kernel over the file layout would, where the
// file layout's four rows are four streams rowBytes apart (and needed touches ahead to keep them fed). The
// integer dots and float steps per block and row are vec.ts rowsQ's for q8_0, so the bits are the file
// layout's (the matmul gate checks against the rows not repacked). q8_0 keeps this layout rather than the generic
// grouped one (decode.ts GROUPED, whole blocks in turn, read by rowsQ): its four scales come in one 8-byte load
// instead of four lane loads, 0.95-0.96x the time of rowsQ over grouped blocks (/tmp microbench, a dim-768
// step's weights cold and warm), before the two blocks a pass.
import { hsum4i } from '../shared/common';
import { halfToFloat4s } from './decode';
import { groupHalvesFinite } from './group4';

/** Bytes of one block of a group: four f16 scales and 4 x 32 qs bytes. */
const GROUP_BLOCK: usize = 136;

/** 32 int8 weights at p . the 32 int16 activations x0..x3 (natural order), as i32x4 partial sums. */
@inline export function dotQ8(p: usize, x0: v128, x1: v128, x2: v128, x3: v128): v128 {
  const a = i32x4.add(i32x4.dot_i16x8_s(v128.load8x8_s(p), x0), i32x4.dot_i16x8_s(v128.load8x8_s(p, 8), x1));
  const b = i32x4.add(i32x4.dot_i16x8_s(v128.load8x8_s(p, 16), x2), i32x4.dot_i16x8_s(v128.load8x8_s(p, 24), x3));
  return i32x4.add(a, b);
}

/**
 * Repacks `rows` (% 4 == 0) q8_0 rows at w (rowBytes = 34 * blocks apart) into q8_0x4 in place, one group at
 * a time through tmp [4 * rowBytes].
 */
export function repackQ8x4(w: usize, rowBytes: i32, rows: i32, tmp: usize): void {
  const rb = <usize>rowBytes;
  const nb = rb / 34;
  for (let g = 0; g < rows; g += 4) {
    const gp = w + <usize>g * rb;
    memory.copy(tmp, gp, rb << 2);
    for (let b: usize = 0; b < nb; b++) {
      const o = gp + b * GROUP_BLOCK;
      for (let r: usize = 0; r < 4; r++) {
        const s = tmp + r * rb + b * 34;
        store<u16>(o + (r << 1), load<u16>(s));
        v128.store(o + 8 + (r << 5), v128.load(s, 2));
        v128.store(o + 8 + (r << 5), v128.load(s, 18), 16);
      }
    }
  }
}

/** 1 when every f16 d in `bytes` of q8_0x4 groups at w is finite (vec.ts vecScalesFinite for this layout). */
export function q8x4ScalesFinite(w: usize, bytes: usize): i32 {
  return groupHalvesFinite(w, bytes, GROUP_BLOCK, false);
}

/**
 * acc plus the group block at p . x at x (int16, 32 values) with x's scale at xd: per row lane f32(q . x) * (d * dx),
 * rowsQ's q8_0 step. Each row's partial sums are stored to the group's output yg (overwritten at its end) as they
 * come: the stores keep a row's loads after the row before's arithmetic (vec.ts rowsQ; without them 1.03-1.10x
 * the time, bench/matmul-ab.ts).
 */
@inline function blockStep(acc: v128, p: usize, x: usize, xd: usize, yg: usize): v128 {
  const x0 = v128.load(x), x1 = v128.load(x, 16), x2 = v128.load(x, 32), x3 = v128.load(x, 48);
  const d0 = dotQ8(p + 8, x0, x1, x2, x3);
  v128.store(yg, d0);
  const d1 = dotQ8(p + 40, x0, x1, x2, x3);
  v128.store(yg, d1);
  const d2 = dotQ8(p + 72, x0, x1, x2, x3);
  v128.store(yg, d2);
  const d3 = dotQ8(p + 104, x0, x1, x2, x3);
  v128.store(yg, d3);
  const d = halfToFloat4s(i32x4.extend_low_i16x8_s(v128.load64_zero(p)));
  return f32x4.add(acc, f32x4.mul(f32x4.convert_i32x4_s(hsum4i(d0, d1, d2, d3)), f32x4.mul(d, v128.load32_splat(xd))));
}

/**
 * y[r] = W[r] . x for `rows` (% 4 == 0) q8_0x4 rows at w (4 * rowBytes per group), x packed by packActVec in
 * natural order (xq [cols] i16, xd [cols/32] f32). Per block and row: acc += f32(q . x) * (d * dx), rowsQ's
 * q8_0 steps with its four-row lanes.
 */
export function matmulVecQ8x4(w: usize, rows: i32, cols: i32, xq: usize, xd: usize, y: usize): void {
  const nb = <usize>(cols >> 5);
  let p = w;
  for (let g = 0; g < rows; g += 4) {
    const yg = y + (<usize>g << 2);
    let acc = f32x4.splat(0);
    // Two blocks a pass, in order.
    let b: usize = 0;
    for (; b + 2 <= nb; b += 2) {
      acc = blockStep(acc, p, xq + (b << 6), xd + (b << 2), yg);
      acc = blockStep(acc, p + GROUP_BLOCK, xq + (b << 6) + 64, xd + (b << 2) + 4, yg);
      p += GROUP_BLOCK << 1;
    }
    if (b < nb) {
      acc = blockStep(acc, p, xq + (b << 6), xd + (b << 2), yg);
      p += GROUP_BLOCK;
    }
    v128.store(yg, acc);
  }
}
