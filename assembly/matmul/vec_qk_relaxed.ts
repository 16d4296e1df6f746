// The relaxed-SIMD builds' one-token kernel for q4_K and q5_K (vec.ts matmulVec; ASC_FEATURE_RELAXED_SIMD):
// x as int8 in natural order (packActQKRelaxed: these builds' ORDER_NIB256 layout), the nibbles (q5_K's with
// their fifth bits, 0..31) the 7-bit operand of i16x8.relaxed_dot_i8x16_i7x16_s. Per 256-value block the
// integer sums I = sum_j sc_j (q . x)_j and M = sum_j m_j sum(x)_j are the exact integers of vec.ts rowQK and
// the float steps after them are its own, so the bits are rowQK's. A baseline build calls none of this.
import { halfToFloat } from '../shared/common';
import { actInverse, actScale, round8, sum32 } from './act';

/**
 * One token x [cols] f32 -> xq [cols] i8 natural, one scale amax/127 per 256 values in xd [cols/256] f32, the
 * sum of each 32 quantized values in xs [cols/32] i16: packActVec's ORDER_NIB256 numbers, bytes in natural order.
 */
export function packActQKRelaxed(x: usize, cols: i32, xq: usize, xd: usize, xs: usize): void {
  for (let b0: usize = 0; b0 < <usize>cols; b0 += 256) {
    const d = actScale(x + (b0 << 2), 256);
    store<f32>(xd + (b0 >> 6), d);
    const id = actInverse(d);
    for (let c = b0; c < b0 + 256; c += 32) {
      const p = x + (c << 2);
      const q0 = round8(p, id), q1 = round8(p + 32, id), q2 = round8(p + 64, id), q3 = round8(p + 96, id);
      store<i16>(xs + (c >> 4), <i16>sum32(q0, q1, q2, q3));
      v128.store(xq + c, i8x16.narrow_i16x8_s(q0, q1));
      v128.store(xq + c, i8x16.narrow_i16x8_s(q2, q3), 16);
    }
  }
}

/**
 * Sub-blocks 2c, 2c + 1 of one block (32 qs bytes at q: low nibbles 2c, high 2c + 1; q5_K: their fifth bits,
 * bits 2c and 2c + 1 of the qh bytes, at bits 0 and 1 of each byte of f0 / f1, qh bytes 0..15 / 16..31) . x
 * (int8 natural, at x), each i16 dot (at most 4 * 31 * 127 per lane) times its scale (sa, sb: splats).
 */
@inline function pairDot(five: bool, q: usize, f0: v128, f1: v128, x: usize, sa: v128, sb: v128): v128 {
  if (!ASC_FEATURE_RELAXED_SIMD) return i32x4.splat(0);
  const m4 = i8x16.splat(0x0f);
  const v0 = v128.load(q), v1 = v128.load(q, 16);
  let l0 = v128.and(v0, m4), l1 = v128.and(v1, m4), h0 = v128.and(i16x8.shr_u(v0, 4), m4), h1 = v128.and(i16x8.shr_u(v1, 4), m4);
  if (five) {
    // Bit 0 / 1 of each byte to bit 4 by 16-bit shifts: bits crossing into the next byte land below bit 4, masked off.
    const b4 = i8x16.splat(0x10);
    l0 = v128.or(l0, v128.and(i16x8.shl(f0, 4), b4)); l1 = v128.or(l1, v128.and(i16x8.shl(f1, 4), b4));
    h0 = v128.or(h0, v128.and(i16x8.shl(f0, 3), b4)); h1 = v128.or(h1, v128.and(i16x8.shl(f1, 3), b4));
  }
  const a = i16x8.add(i16x8.relaxed_dot_i8x16_i7x16_s(v128.load(x), l0), i16x8.relaxed_dot_i8x16_i7x16_s(v128.load(x, 16), l1));
  const b = i16x8.add(i16x8.relaxed_dot_i8x16_i7x16_s(v128.load(x, 32), h0), i16x8.relaxed_dot_i8x16_i7x16_s(v128.load(x, 48), h1));
  return i32x4.add(i32x4.dot_i16x8_s(a, sa), i32x4.dot_i16x8_s(b, sb));
}

/** The 6-bit scales (lanes 0..7) and mins (lanes 8..15) of the block at p as bytes (vec.ts rowQK's unpacking). */
@inline function scalesMins(p: usize): v128 {
  const A = load<u32>(p + 4), B = load<u32>(p + 8), C = load<u32>(p + 12);
  const scLo = A & 0x3f3f3f3f;
  const scHi = (C & 0x0f0f0f0f) | (((A >> 6) & 0x03030303) << 4);
  const mLo = B & 0x3f3f3f3f;
  const mHi = ((C >> 4) & 0x0f0f0f0f) | (((B >> 6) & 0x03030303) << 4);
  return i32x4(<i32>scLo, <i32>scHi, <i32>mLo, <i32>mHi);
}

/** acc plus the block's I * d - M * dmin (rowQK's float step: I, M in ik / mk's lanes, summed exactly). */
@inline function blockStep(acc: f32, p: usize, ik: v128, mk: v128, dx: f32): f32 {
  const d = halfToFloat(<u32>load<u16>(p)) * dx;
  const dmin = halfToFloat(<u32>load<u16>(p + 2)) * dx;
  const ab = i32x4.add(i32x4.shuffle(ik, mk, 0, 1, 4, 5), i32x4.shuffle(ik, mk, 2, 3, 6, 7));
  const f = f32x4.mul(f32x4.convert_i32x4_s(i32x4.add(ab, i32x4.shuffle(ab, ab, 1, 0, 3, 2))), f32x4.shuffle(f32x4.splat(d), f32x4.splat(dmin), 0, 1, 4, 5));
  return acc + (f32x4.extract_lane(f, 0) - f32x4.extract_lane(f, 2));
}

/** Sub-block pair c (0..3) of the block at p: ik plus its scaled dots (pairDot); sc's i16 lanes 0, 1 are its scales. */
@inline function pairStep(five: bool, c: i32, ik: v128, q: usize, qh0: v128, qh1: v128, x: usize, sc: v128): v128 {
  const f0 = five ? i16x8.shr_u(qh0, 2 * c) : qh0, f1 = five ? i16x8.shr_u(qh1, 2 * c) : qh1;
  const sa = i16x8.shuffle(sc, sc, 0, 0, 0, 0, 0, 0, 0, 0), sb = i16x8.shuffle(sc, sc, 1, 1, 1, 1, 1, 1, 1, 1);
  return i32x4.add(ik, pairDot(five, q + (<usize>c << 5), f0, f1, x + (<usize>c << 6), sa, sb));
}

/**
 * One q4_K (five false, 144 B blocks) or q5_K (176 B) row at w . x (packActQKRelaxed's layout), nb blocks,
 * with no touches ahead (bench/matmul-ab.ts, one thread, n 1, cold, against touching as rowQK does: q5_K
 * [4096, 4096] to [4096, 14336] 0.61-0.67x the time, [2048, 768] to [32000, 768] 0.90-0.93x; q4_K there
 * 0.86-0.91x cold, 0.92x warm; its long rows already ran without). The four sub-block pairs are unrolled,
 * each storing the integer sum so far to yr (the row's own output, overwritten by the caller): the store keeps
 * the next pair's loads after this pair's arithmetic (vec.ts dotStored), where V8 would hoist all 24 and spill.
 */
@inline export function rowQKRelaxed(five: bool, w: usize, nb: usize, xq: usize, xd: usize, xs: usize, yr: usize): f32 {
  let acc: f32 = 0;
  const bs: usize = five ? 176 : 144;
  for (let b: usize = 0; b < nb; b++) {
    const p = w + b * bs;
    const sm = scalesMins(p);
    const sc16 = i16x8.extend_low_i8x16_u(sm);
    const q = p + (five ? 48 : 16);
    const qh0 = five ? v128.load(p + 16) : sm, qh1 = five ? v128.load(p + 32) : sm;
    const x = xq + (b << 8);
    let ik = pairStep(five, 0, i32x4.splat(0), q, qh0, qh1, x, sc16);
    v128.store32_lane(yr, ik, 0);
    ik = pairStep(five, 1, ik, q, qh0, qh1, x, i32x4.shuffle(sc16, sc16, 1, 2, 3, 0));
    v128.store32_lane(yr, ik, 0);
    ik = pairStep(five, 2, ik, q, qh0, qh1, x, i32x4.shuffle(sc16, sc16, 2, 3, 0, 1));
    v128.store32_lane(yr, ik, 0);
    ik = pairStep(five, 3, ik, q, qh0, qh1, x, i32x4.shuffle(sc16, sc16, 3, 0, 1, 2));
    const mk = i32x4.dot_i16x8_s(i16x8.extend_high_i8x16_u(sm), v128.load(xs + (b << 4)));
    acc = blockStep(acc, p, ik, mk, load<f32>(xd + (b << 2)));
  }
  return acc;
}
