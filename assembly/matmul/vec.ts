// One-token (decode) matmul kernels: y[r] = W[r, :] . x for q8_0, q4_0 and q4_K weights (f16 / bf16:
// vec_halves.ts; q6_K: vec_q6k.ts; q4_1, q5_0, q5_1, iq4_nl: vec_blocks.ts), read once straight from their packed ggml bytes, with no scratch round trip.
// x arrives quantized per block to int8 (as llama.cpp's q8_0 / q8_K activations) and widened to int16 by
// packActVec, in the order each weight type's bytes come apart: natural for q8_0 (load8x8_s widens 8
// weights while loading); for the 4-bit types the order in which the 16-bit lanes of the packed nibbles
// split with an and and a shift (no byte shuffles, no widening). Block dots stay exact integers
// (i32x4.dot_i16x8_s; relaxed-SIMD builds dot q4_0 / q4_K / q5_K by relaxed_dot, q4_K / q5_K in vec_qk_relaxed.ts). q8_0 / q4_0 run four rows at once, one per lane (measured 1.24x one row at a time:
// each x load serves four rows, no horizontal sum per row).
import { halfToFloat, hsum, hsum4i } from '../shared/common';
import { actInverse, actScale, round8, sum32 } from './act';
import { halfToFloat4s, hsumi, T_BF16, T_F16, T_IQ4_NL, T_Q4_0, T_Q4_0X4, T_Q4_1, T_Q4_K, T_Q4_KX4, T_Q5_0, T_Q5_1, T_Q5_K, T_Q6_K, T_Q8_0, T_Q8_0X4, GROUPED, T_Q4_0G4, fileTypeOf } from './decode';
import { dotOther } from './vec_blocks';
import { blockBytesOf, centreOf, eightRows, hasMin, ORDER_HALVES, ORDER_NAT8, ORDER_NATURAL, ORDER_NIB256, ORDER_Q6K, orderOf, scalesChecked, VEC_RELAXED_NIB256, VEC_RELAXED_Q4_0, VEC_RELAXED_Q6K } from './types';
import { packActQKRelaxed, rowQKRelaxed } from './vec_qk_relaxed';
import { packActQ6K, rowQ6K, rowQ6KRelaxed } from './vec_q6k';
import { keep, touch } from './touch';
import { repackGrouped } from './group4';
import { matmulVecHalves, packActHalves } from './vec_halves';
import { matmulVecQ4x4, packActNat8, q4x4ScalesFinite, repackQ4x4 } from './vec_q4x4';
import { dotQ8, matmulVecQ8x4, q8x4ScalesFinite, repackQ8x4 } from './vec_q8x4';
import { matmulVecQ4Kx4, q4Kx4ScalesFinite, repackQ4Kx4 } from './vec_q4kx4';

/**
 * q8_0 / q4_0 rows of at least EIGHT_MIN_ROW_BYTES run eight at a time, with no touches ahead (the hardware
 * prefetcher follows rows this long). In-process A/B against four rows with touches, weights cycled through
 * 96 MiB, one thread (bench/matmul-ab.ts --cold): q8_0 [4096, 14336] 0.44-0.61x the time, [4096, 4096]
 * 0.78-0.83x, [14336, 4096] 0.72-0.75x; q4_0 [4096, 14336] 0.71-0.79x, [14336, 4096] 0.95-0.98x. Shorter rows
 * keep four with touches: without them [2048, 768] q8_0 took 2.6-2.8x, and eight rows with touches took
 * 1.3-1.4x on [14336, 4096]. EIGHT_ROWS / EIGHT_TOUCH are build switches for such A/B runs.
 */
// Rows of 2048-4095 B (q4_0 at 4096 columns: 2304 B) joined them on an AMD EPYC (Zen 4), same A/B, one thread:
// q4_0 [4096, 4096] 0.75-0.81x cold, 0.76x warm; [14336, 4096] 0.81-0.83x cold; [1024, 4096] 0.71x warm;
// the baseline-SIMD build 0.81-0.89x (q8_0 rows at 4096 columns, 4352 B, already ran eight: unchanged).
const EIGHT_ROWS = true;
const EIGHT_TOUCH = false;
const EIGHT_MIN_ROW_BYTES: usize = 2048;
/**
 * q4_K rows of EIGHT_MIN_ROW_BYTES and more read without touches: [4096, 14336] (8064 B rows) 0.74-0.83x the time
 * cold (same A/B); at 4096 columns (2304 B rows, Zen 4): [4096, 4096] 0.78-0.88x, [14336, 4096] 0.77-0.78x.
 */
const QK_LONG_NO_TOUCH = true;
/**
 * Relaxed-SIMD builds (types.ts VEC_RELAXED_NIB256) run q4_K / q5_K by vec_qk_relaxed.ts rowQKRelaxed, x in its int8 natural layout (the two
 * share ORDER_NIB256, so types.ts marks both relaxed). One token, one thread, against the relaxed build before
 * (bench/matmul-ab.ts, 3 runs, a loaded machine): q4_K [4096, 4096] 0.69-0.70x the time warm, 0.71-0.77x cold;
 * [14336, 4096] 0.71-0.76x / 0.71-0.72x; [4096, 14336] 0.57-0.61x / 0.60-0.66x; q5_K 0.75-0.89x on the same
 * shapes. callgrind Ir of matmulVec: q4_K 0.73-0.74x on the three, q5_K [4096, 4096] 0.80x. One row at a time.
 */

export { ORDER_HALVES, ORDER_NAT8, ORDER_NATURAL, ORDER_NIB256, ORDER_NIB32, ORDER_Q6K } from './types';

/**
 * The activation order a weight type's one-token kernel reads (-1: none): its row in types.ts. The int8
 * orders quantize x, ORDER_NIB256 with one scale per 256 values, the others per 32; ORDER_HALVES keeps it f32.
 */
export function vecOrder(type: i32): i32 {
  return orderOf(type);
}

/** Even / odd 16-bit lanes of a:b (values 0,2,..,14 / 1,3,..,15 of the 16 they hold). */
@inline function evens(a: v128, b: v128): v128 {
  return i16x8.shuffle(a, b, 0, 2, 4, 6, 8, 10, 12, 14);
}
@inline function odds(a: v128, b: v128): v128 {
  return i16x8.shuffle(a, b, 1, 3, 5, 7, 9, 11, 13, 15);
}



/**
 * One token x [cols] f32 -> xq [cols] i16 in `order`, one scale amax/127 per qb values (256 for
 * ORDER_NIB256, else 32) in xd [cols/qb] f32, and the sum of each 32 quantized values in xs [cols/32] i16.
 * cols % qb == 0. Same rounding as packActQ8 (tile_q8.ts) (round to nearest even of x / d).
 */
export function packActVec(x: usize, cols: i32, order: i32, xq: usize, xd: usize, xs: usize): void {
  if (order == ORDER_HALVES) {
    packActHalves(x, cols, xq);
    return;
  }
  if (order == ORDER_Q6K) {
    packActQ6K(x, cols, xq, xd, xs);
    return;
  }
  if (order == ORDER_NAT8) {
    packActNat8(x, cols, xq, xd, xs);
    return;
  }
  if (order == ORDER_NIB256 && VEC_RELAXED_NIB256) {
    packActQKRelaxed(x, cols, xq, xd, xs);
    return;
  }
  const qb: i32 = order == ORDER_NIB256 ? 256 : 32;
  for (let b0: usize = 0; b0 < <usize>cols; b0 += <usize>qb) {
    const d = actScale(x + (b0 << 2), <usize>qb);
    store<f32>(xd + ((b0 / <usize>qb) << 2), d);
    const id = actInverse(d);
    if (qb == 32) {
      // q8_0 (natural) or q4_0 (per 32: values 2k, 2k+1, 16+2k, 17+2k for k < 8, as dotNib splits 16 qs bytes).
      const p = x + (b0 << 2);
      const o = xq + (b0 << 1);
      const q0 = round8(p, id), q1 = round8(p + 32, id), q2 = round8(p + 64, id), q3 = round8(p + 96, id);
      store<i16>(xs + (b0 >> 4), <i16>sum32(q0, q1, q2, q3));
      if (order == ORDER_NATURAL) {
        v128.store(o, q0); v128.store(o, q1, 16); v128.store(o, q2, 32); v128.store(o, q3, 48);
      } else {
        v128.store(o, evens(q0, q1)); v128.store(o, odds(q0, q1), 16); v128.store(o, evens(q2, q3), 32); v128.store(o, odds(q2, q3), 48);
      }
      continue;
    }
    // q4_K, per 64 values (32 qs bytes: low nibbles values 0..31, high 32..63): half h holds values
    // 16h + (2k, 2k+1) and 32 + 16h + (2k, 2k+1).
    for (let c = b0; c < b0 + <usize>qb; c += 64) {
      const p = x + (c << 2);
      const o = xq + (c << 1);
      const q0 = round8(p, id), q1 = round8(p + 32, id), q2 = round8(p + 64, id), q3 = round8(p + 96, id);
      const q4 = round8(p + 128, id), q5 = round8(p + 160, id), q6 = round8(p + 192, id), q7 = round8(p + 224, id);
      store<i16>(xs + (c >> 4), <i16>sum32(q0, q1, q2, q3));
      store<i16>(xs + (c >> 4), <i16>sum32(q4, q5, q6, q7), 2);
      v128.store(o, evens(q0, q1)); v128.store(o, odds(q0, q1), 16); v128.store(o, evens(q4, q5), 32); v128.store(o, odds(q4, q5), 48);
      v128.store(o, evens(q2, q3), 64); v128.store(o, odds(q2, q3), 80); v128.store(o, evens(q6, q7), 96); v128.store(o, odds(q6, q7), 112);
    }
  }
}



/**
 * The f16 scales at p0..p3 as f32x4, for finite scales (Inf/NaN would turn finite: weights that have any
 * take the exact tiled kernel instead, see vecScalesFinite).
 */
@inline function scales4(p0: usize, p1: usize, p2: usize, p3: usize): v128 {
  let h = v128.load16_lane(p0, i16x8.splat(0), 0);
  h = v128.load16_lane(p1, h, 1);
  h = v128.load16_lane(p2, h, 2);
  h = v128.load16_lane(p3, h, 3);
  return halfToFloat4s(i32x4.extend_low_i16x8_s(h));
}

/**
 * 1 when every f16 block scale (and min) of `bytes` of blocks at w is finite, else 0; always 1 for the types
 * whose one-token kernels convert scales exactly (K-quants) or that have none (float types).
 */
export function vecScalesFinite(type: i32, w: usize, bytes: usize): i32 {
  if (!scalesChecked(type)) return 1;
  if (type == T_Q4_0X4) return q4x4ScalesFinite(w, bytes);
  if (type == T_Q8_0X4) return q8x4ScalesFinite(w, bytes);
  if (type == T_Q4_KX4) return q4Kx4ScalesFinite(w, bytes);
  return blockHalvesFinite(w, bytes, blockBytesOf(type), hasMin(type));
}

/** 1 when the f16 at the start of every block of bs bytes in `bytes` at w (and, with `two`, the f16 after it) is finite. */
@inline function blockHalvesFinite(w: usize, bytes: usize, bs: usize, two: bool): i32 {
  let bad: u32 = 0;
  for (let p = w; p < w + bytes; p += bs) {
    bad |= <u32>((load<u16>(p) & 0x7c00) == 0x7c00);
    if (two) bad |= <u32>((load<u16>(p + 2) & 0x7c00) == 0x7c00);
  }
  return bad ? 0 : 1;
}

/** 16 bytes of nibbles at p as 16-bit lanes: low / high nibbles of even / odd bytes, against x0..x3 (ORDER_NIB32). */
@inline function dotNib(p: usize, x0: v128, x1: v128, x2: v128, x3: v128): v128 {
  const v = v128.load(p);
  const m = i16x8.splat(0x0f);
  const a = i32x4.add(i32x4.dot_i16x8_s(v128.and(v, m), x0), i32x4.dot_i16x8_s(v128.and(i16x8.shr_u(v, 8), m), x1));
  const b = i32x4.add(i32x4.dot_i16x8_s(v128.and(i16x8.shr_u(v, 4), m), x2), i32x4.dot_i16x8_s(i16x8.shr_u(v, 12), x3));
  return i32x4.add(a, b);
}

/**
 * q4_0's one-token kernel in relaxed-SIMD builds (types.ts VEC_RELAXED_Q4_0) dots its nibbles by i16x8.relaxed_dot_i8x16_i7x16_s:
 * 16 bytes of nibbles against x as int8 in natural order, low nibbles (values 0..15) and high (16..31) as
 * the 7-bit operand, the two i16 dots added (at most 2 * 2 * 15 * 127 per lane) and widened once. The
 * integer dot is exact either way, so the bits are those of dotNib. One token, one thread (bench/matmul-ab.ts
 * against the relaxed build before): [4096, 4096] 0.78x the time warm, 0.86x cold; [14336, 4096] 0.88x /
 * 0.87x; [2048, 768] 0.78x / 0.72x; callgrind Ir of matmulVec 0.66-0.76x.
 */

/**
 * The type a weight of `type` is repacked to at load for this build's kernels, or -1 (kept as it is): q8_0 to
 * q8_0x4 in both builds (vec_q8x4.ts), q4_0 to q4_0x4 and q4_K to q4_Kx4 where their relaxed kernels run
 * (vec_q4x4.ts, vec_q4kx4.ts), the other 32-value types (and q4_0 in baseline builds) to four-row groups of whole
 * blocks (decode.ts GROUPED, read by rowsQ). Rows must come in whole groups of four.
 */
export function repackTypeOf(type: i32): i32 {
  if (type == T_Q8_0) return T_Q8_0X4;
  if (type == T_Q4_0) return VEC_RELAXED_Q4_0 ? T_Q4_0X4 : T_Q4_0G4;
  if (type == T_Q4_K && VEC_RELAXED_NIB256) return T_Q4_KX4;
  if (type == T_Q4_1 || type == T_Q5_0 || type == T_Q5_1 || type == T_IQ4_NL) return GROUPED + type;
  return -1;
}

/**
 * Repacks `rows` weight rows of `type` at w in place to repackTypeOf(type)'s layout, through tmp [4 * rowBytes],
 * and returns 1; returns 0 with the bytes untouched where a block's f16 d (or dmin) is not finite, which the
 * layout's kernel converts four at a time (Inf/NaN not kept).
 */
export function repackWeight(type: i32, w: usize, rowBytes: i32, rows: i32, tmp: usize): i32 {
  const to = repackTypeOf(type);
  const bytes = <usize>rows * <usize>rowBytes;
  if (to == T_Q8_0X4) {
    if (!blockHalvesFinite(w, bytes, 34, false)) return 0;
    repackQ8x4(w, rowBytes, rows, tmp);
  } else if (to >= GROUPED) {
    const bs = blockBytesOf(type);
    if (!blockHalvesFinite(w, bytes, bs, hasMin(type))) return 0;
    repackGrouped(w, rowBytes, rows, bs, tmp);
  } else if (to == T_Q4_0X4) {
    if (!blockHalvesFinite(w, bytes, 18, false)) return 0;
    repackQ4x4(w, rowBytes, rows, tmp);
  } else if (to == T_Q4_KX4) {
    if (!blockHalvesFinite(w, bytes, 144, true)) return 0;
    repackQ4Kx4(w, rowBytes, rows, tmp);
  } else unreachable();
  return 1;
}

/** 1 when this build's one-token kernel of `type` runs the relaxed dot (the constants its kernels branch on, types.ts VEC_RELAXED_*; the matmul gate checks them against the table). */
export function vecRelaxedType(layout: i32): i32 {
  const type = fileTypeOf(layout);
  const relaxed = type == T_Q4_0 || type == T_Q4_0X4 ? VEC_RELAXED_Q4_0 : type == T_Q4_K || type == T_Q4_KX4 || type == T_Q5_K ? VEC_RELAXED_NIB256 : type == T_Q6_K ? VEC_RELAXED_Q6K : false;
  return relaxed ? 1 : 0;
}

/** x in ORDER_NIB32 (x0..x3: evens, odds of values 0..15, then of 16..31) -> int8 values 0..15 (hi: 16..31), natural order. */
@inline function natural8(a: v128, b: v128): v128 {
  const v = i8x16.narrow_i16x8_s(a, b);
  return i8x16.shuffle(v, v, 0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15);
}

/** 16 bytes of nibbles at p . x as int8 natural values 0..15 (n0) and 16..31 (n1), as i32x4 partial sums (relaxed builds). */
@inline function dotNibRelaxed(p: usize, n0: v128, n1: v128): v128 {
  // A baseline build compiles no relaxed instruction (and never calls this: VEC_RELAXED_Q4_0 is false).
  if (!ASC_FEATURE_RELAXED_SIMD) return v128.splat<i32>(0);
  const v = v128.load(p);
  const m = i8x16.splat(0x0f);
  const s = i16x8.add(i16x8.relaxed_dot_i8x16_i7x16_s(n0, v128.and(v, m)), i16x8.relaxed_dot_i8x16_i7x16_s(n1, v128.and(i16x8.shr_u(v, 4), m)));
  return i32x4.extadd_pairwise_i16x8_s(s);
}

/**
 * One block at p . x0..x3 as i32x4 partial sums of q . x (q4_0: q the nibble, its -8 comes after); n0, n1:
 * the same x as natural8 gives it, read only by the relaxed q4_0 dot.
 */
@inline function dotBlock(type: i32, p: usize, x0: v128, x1: v128, x2: v128, x3: v128, n0: v128, n1: v128): v128 {
  if (type == T_Q8_0) return dotQ8(p + 2, x0, x1, x2, x3);
  if (type == T_Q4_0) return VEC_RELAXED_Q4_0 ? dotNibRelaxed(p + 2, n0, n1) : dotNib(p + 2, x0, x1, x2, x3);
  return dotOther(type, p, x0, x1, x2, x3);
}

/**
 * dotBlock, its partial sums also stored to yr (the row group's output, overwritten at its end): the store keeps
 * the next row's loads after this row's arithmetic (rowsQ).
 */
@inline function dotStored(type: i32, p: usize, x0: v128, x1: v128, x2: v128, x3: v128, n0: v128, n1: v128, yr: usize): v128 {
  const d = dotBlock(type, p, x0, x1, x2, x3, n0, n1);
  v128.store(yr, d);
  return d;
}

/**
 * Rows of a 32-value block type (a constant after inlining: q8_0, 34 B blocks of f16 d and 32 i8; q4_0,
 * 18 B of f16 d and 16 bytes of nibbles, value = nibble - 8; q4_1, q5_0, q5_1, iq4_nl: vec_blocks.ts)
 * . x into y[r]. Four rows go together, one per lane: each x vector is loaded once for the four, the four
 * rows' block sums come out of one horizontal-sum step already in row lanes, and each lane accumulates its
 * row (no horizontal sum at the end). Per block d * dx * (q . x), plus m * dx * sum(x) for the types with a min.
 */
@inline function rowsQ(type: i32, grouped: bool, w: usize, rb: usize, rows: i32, nb: usize, xq: usize, xd: usize, xs: usize, y: usize): void {
  const bs = blockBytesOf(type);
  // Four-row groups (decode.ts GROUPED): a group's rows lie a block apart, its next blocks four blocks on, no touches.
  const rs = grouped ? bs : rb;
  const step = grouped ? bs << 2 : bs;
  const mins = hasMin(type);
  const centre = centreOf(type);
  let r = 0;
  const last = w + <usize>rows * rb - 1;
  // Eight rows at a time (two four-row groups, each lane's operations unchanged, so the bits are): twice the
  // weight loads in flight per x load, for decode from DRAM.
  if (EIGHT_ROWS && !grouped && eightRows(type) && rb >= EIGHT_MIN_ROW_BYTES) for (; r + 8 <= rows; r += 8) {
    let p0 = w + <usize>r * rb;
    let p1 = p0 + rb, p2 = p1 + rb, p3 = p2 + rb, p4 = p3 + rb, p5 = p4 + rb, p6 = p5 + rb, p7 = p6 + rb;
    let x = xq;
    let acc = f32x4.splat(0), acd = f32x4.splat(0);
    const yr = y + (<usize>r << 2);
    let t = p0 + (rb << 4);
    let sink: u32 = 0;
    for (let b: usize = 0; b < nb; b++) {
      if (EIGHT_TOUCH) sink += touch(t, last) + touch(t + 64, last) + touch(t + 128, last) + touch(t + 192, last);
      t += bs << 3;
      const x0 = v128.load(x), x1 = v128.load(x, 16), x2 = v128.load(x, 32), x3 = v128.load(x, 48);
      const n0 = natural8(x0, x1), n1 = natural8(x2, x3);
      // Each row's partial sums stored to this group's output (overwritten at its end) as they come: the stores keep
      // a row's loads after the row before's arithmetic, where V8 would issue all 32 first and spill (vec_q4kx4.ts).
      // bench/matmul-ab.ts, one thread, n 1: q8_0 0.69-0.91x the time (eight- and four-row loops), q4_1 / iq4_nl
      // 0.84-0.92x, the baseline build's q8_0 / q4_0 0.73-0.86x.
      const d0 = dotStored(type, p0, x0, x1, x2, x3, n0, n1, yr);
      const d1 = dotStored(type, p1, x0, x1, x2, x3, n0, n1, yr);
      const d2 = dotStored(type, p2, x0, x1, x2, x3, n0, n1, yr);
      const d3 = dotStored(type, p3, x0, x1, x2, x3, n0, n1, yr);
      const d4 = dotStored(type, p4, x0, x1, x2, x3, n0, n1, yr);
      const d5 = dotStored(type, p5, x0, x1, x2, x3, n0, n1, yr);
      const d6 = dotStored(type, p6, x0, x1, x2, x3, n0, n1, yr);
      const d7 = dotStored(type, p7, x0, x1, x2, x3, n0, n1, yr);
      let s = hsum4i(d0, d1, d2, d3);
      let u = hsum4i(d4, d5, d6, d7);
      if (centre != 0) {
        const c = i32x4.splat(<i32>load<i16>(xs + (b << 1)) * centre);
        s = i32x4.sub(s, c);
        u = i32x4.sub(u, c);
      }
      const dx = v128.load32_splat(xd + (b << 2));
      acc = f32x4.add(acc, f32x4.mul(f32x4.convert_i32x4_s(s), f32x4.mul(scales4(p0, p1, p2, p3), dx)));
      acd = f32x4.add(acd, f32x4.mul(f32x4.convert_i32x4_s(u), f32x4.mul(scales4(p4, p5, p6, p7), dx)));
      if (mins) {
        const sx = f32x4.mul(dx, f32x4.splat(<f32>load<i16>(xs + (b << 1))));
        acc = f32x4.add(acc, f32x4.mul(scales4(p0 + 2, p1 + 2, p2 + 2, p3 + 2), sx));
        acd = f32x4.add(acd, f32x4.mul(scales4(p4 + 2, p5 + 2, p6 + 2, p7 + 2), sx));
      }
      p0 += bs; p1 += bs; p2 += bs; p3 += bs; p4 += bs; p5 += bs; p6 += bs; p7 += bs;
      x += 64;
    }
    keep(sink);
    v128.store(yr, acc);
    v128.store(yr, acd, 16);
  }
  for (; r + 4 <= rows; r += 4) {
    let p0 = w + <usize>r * rb;
    let p1 = p0 + rs, p2 = p1 + rs, p3 = p2 + rs;
    let x = xq;
    let acc = f32x4.splat(0);
    const yr = y + (<usize>r << 2);
    // The row group two ahead, touched at the pace this one is read (touch.ts).
    let t = p0 + (rb << 3);
    let sink: u32 = 0;
    for (let b: usize = 0; b < nb; b++) {
      if (!grouped) {
        sink += touch(t, last) + touch(t + 64, last);
        t += bs << 2;
      }
      const x0 = v128.load(x), x1 = v128.load(x, 16), x2 = v128.load(x, 32), x3 = v128.load(x, 48);
      const n0 = natural8(x0, x1), n1 = natural8(x2, x3);
      // As in the eight-row loop: each row's partials stored to this group's output as they come.
      const d0 = dotStored(type, p0, x0, x1, x2, x3, n0, n1, yr);
      const d1 = dotStored(type, p1, x0, x1, x2, x3, n0, n1, yr);
      const d2 = dotStored(type, p2, x0, x1, x2, x3, n0, n1, yr);
      const d3 = dotStored(type, p3, x0, x1, x2, x3, n0, n1, yr);
      let s = hsum4i(d0, d1, d2, d3);
      // q4_0: (q - 8) . x = q . x - 8 * sum(x), in integers.
      if (centre != 0) s = i32x4.sub(s, i32x4.splat(<i32>load<i16>(xs + (b << 1)) * centre));
      const dx = v128.load32_splat(xd + (b << 2));
      acc = f32x4.add(acc, f32x4.mul(f32x4.convert_i32x4_s(s), f32x4.mul(scales4(p0, p1, p2, p3), dx)));
      if (mins) acc = f32x4.add(acc, f32x4.mul(scales4(p0 + 2, p1 + 2, p2 + 2, p3 + 2), f32x4.mul(dx, f32x4.splat(<f32>load<i16>(xs + (b << 1))))));
      p0 += step; p1 += step; p2 += step; p3 += step;
      x += 64;
    }
    keep(sink);
    v128.store(yr, acc);
  }
  // Leftover rows one at a time, each with the operations of a lane of the four-row groups (scalars: the
  // same float ops), so every row's output is the same wherever it sits (the tiles match this order).
  for (; r < rows; r++) {
    let p = w + <usize>r * rb;
    let acc: f32 = 0;
    for (let b: usize = 0; b < nb; b++) {
      const x = xq + (b << 6);
      const x0 = v128.load(x), x1 = v128.load(x, 16), x2 = v128.load(x, 32), x3 = v128.load(x, 48);
      let s = hsumi(dotBlock(type, p, x0, x1, x2, x3, natural8(x0, x1), natural8(x2, x3)));
      if (centre != 0) s -= <i32>load<i16>(xs + (b << 1)) * centre;
      const dx = load<f32>(xd + (b << 2));
      acc += <f32>s * (halfToFloat(<u32>load<u16>(p)) * dx);
      if (mins) acc += halfToFloat(<u32>load<u16>(p + 2)) * (dx * <f32>load<i16>(xs + (b << 1)));
      p += bs;
    }
    store<f32>(y + (<usize>r << 2), acc);
  }
}

/**
 * The fifth bits of q5_K for one 16-bit lane vector of nibbles: qh bytes l, l + 1 in lane k (QH), bit j of
 * each moved to bit 4 (0x10). `even`: the low byte's bit (value l), else the high byte's (value l + 1).
 */
@inline function fifth(QH: v128, j: i32, even: bool): v128 {
  // Bit j (even) or 8 + j (odd) of the lane to bit 4.
  const from = even ? j : 8 + j;
  const v = from < 4 ? i16x8.shl(QH, 4 - from) : from > 4 ? i16x8.shr_u(QH, from - 4) : QH;
  return v128.and(v, i16x8.splat(0x10));
}

/**
 * q4_K row (five false: nb blocks of 144 B: f16 d, f16 dmin, 12 bytes of 6-bit sub-block scales and mins,
 * 128 bytes of nibbles) or q5_K row (five true: 176 B, the same with 32 bytes of fifth bits qh before the
 * nibbles: bit j of qh[l] belongs to value l of sub-block j) . x: value = d * sc_j * q - dmin * m_j in
 * sub-block j of 32. Per block, sum_j sc_j (q . x)_j and sum_j m_j sum(x)_j are exact integers, then scaled
 * once by d and dmin times x's block scale. Touches the row that starts at `ahead` as it goes (never past `last`).
 */
@inline function rowQK(five: bool, touching: bool, w: usize, nb: usize, xq: usize, xd: usize, xs: usize, ahead: usize, last: usize): f32 {
  let acc: f32 = 0;
  const m4 = i16x8.splat(0x0f);
  const bs: usize = five ? 176 : 144;
  // Touching 8 rows ahead (touch.ts), q4_K [14336, 4096] cycled through 1 GiB (DRAM), in-process A/B:
  // this kernel 0.80x the time on 1 thread, 0.77x on 2 (1, 2, 4, 16 rows ahead: the same), q5_K 0.91x /
  // 0.88x; through wasmMatmul 0.87-0.89x / 0.89-0.91x, q5_K 0.87x / 0.88x; warm in L2 ([1024, 4096]) 1.04x / 0.71x. Four rows at once sharing x loads (as rowsQ) spilled registers: 1.35x
  // the time warm, 0.86-0.94x from DRAM without touches and slower with them, so one row at a time stays.
  let sink: u32 = 0;
  for (let b: usize = 0; b < nb; b++) {
    const p = w + b * bs;
    const ta = ahead + b * bs;
    if (touching) sink += touch(ta, last) + touch(ta + 64, last) + touch(ta + 128, last);
    // 6-bit scales (sc_j low 6 bits of bytes 0..3 for j < 4, else low nibble of byte j + 4 with two bits
    // from byte j - 4) and mins (bytes 4..7 / high nibble of byte j + 4 and two bits of byte j): as bytes.
    const A = load<u32>(p + 4), B = load<u32>(p + 8), C = load<u32>(p + 12);
    const scLo = A & 0x3f3f3f3f;
    const scHi = (C & 0x0f0f0f0f) | (((A >> 6) & 0x03030303) << 4);
    const mLo = B & 0x3f3f3f3f;
    const mHi = ((C >> 4) & 0x0f0f0f0f) | (((B >> 6) & 0x03030303) << 4);
    const sm = i32x4(<i32>scLo, <i32>scHi, <i32>mLo, <i32>mHi);
    const sc16 = i16x8.extend_low_i8x16_u(sm);
    const m16 = i16x8.extend_high_i8x16_u(sm);
    const q = p + (five ? 48 : 16);
    const x = xq + (b << 9);
    // Sub-block pair c: 32 bytes; half h's low nibbles belong to sub-block 2c, high nibbles to 2c + 1.
    let e0 = i32x4.splat(0), o0 = i32x4.splat(0), e1 = i32x4.splat(0), o1 = i32x4.splat(0);
    let e2 = i32x4.splat(0), o2 = i32x4.splat(0), e3 = i32x4.splat(0), o3 = i32x4.splat(0);
    for (let h: usize = 0; h < 2; h++) {
      const v0 = v128.load(q + (h << 4)), v1 = v128.load(q + 32 + (h << 4)), v2 = v128.load(q + 64 + (h << 4)), v3 = v128.load(q + 96 + (h << 4));
      const x0 = x + (h << 6), x1 = x0 + 128, x2 = x0 + 256, x3 = x0 + 384;
      // Lanes: even bytes' low nibbles, odd bytes' low, even bytes' high, odd bytes' high (values l, l + 1 of sub-blocks 2c, 2c + 1).
      let a0 = v128.and(v0, m4), b0 = v128.and(i16x8.shr_u(v0, 8), m4), c0 = v128.and(i16x8.shr_u(v0, 4), m4), d0 = i16x8.shr_u(v0, 12);
      let a1 = v128.and(v1, m4), b1 = v128.and(i16x8.shr_u(v1, 8), m4), c1 = v128.and(i16x8.shr_u(v1, 4), m4), d1 = i16x8.shr_u(v1, 12);
      let a2 = v128.and(v2, m4), b2 = v128.and(i16x8.shr_u(v2, 8), m4), c2 = v128.and(i16x8.shr_u(v2, 4), m4), d2 = i16x8.shr_u(v2, 12);
      let a3 = v128.and(v3, m4), b3 = v128.and(i16x8.shr_u(v3, 8), m4), c3 = v128.and(i16x8.shr_u(v3, 4), m4), d3 = i16x8.shr_u(v3, 12);
      if (five) {
        const QH = v128.load(p + 16 + (h << 4));
        a0 = v128.or(a0, fifth(QH, 0, true)); b0 = v128.or(b0, fifth(QH, 0, false)); c0 = v128.or(c0, fifth(QH, 1, true)); d0 = v128.or(d0, fifth(QH, 1, false));
        a1 = v128.or(a1, fifth(QH, 2, true)); b1 = v128.or(b1, fifth(QH, 2, false)); c1 = v128.or(c1, fifth(QH, 3, true)); d1 = v128.or(d1, fifth(QH, 3, false));
        a2 = v128.or(a2, fifth(QH, 4, true)); b2 = v128.or(b2, fifth(QH, 4, false)); c2 = v128.or(c2, fifth(QH, 5, true)); d2 = v128.or(d2, fifth(QH, 5, false));
        a3 = v128.or(a3, fifth(QH, 6, true)); b3 = v128.or(b3, fifth(QH, 6, false)); c3 = v128.or(c3, fifth(QH, 7, true)); d3 = v128.or(d3, fifth(QH, 7, false));
      }
      e0 = i32x4.add(e0, i32x4.add(i32x4.dot_i16x8_s(a0, v128.load(x0)), i32x4.dot_i16x8_s(b0, v128.load(x0, 16))));
      o0 = i32x4.add(o0, i32x4.add(i32x4.dot_i16x8_s(c0, v128.load(x0, 32)), i32x4.dot_i16x8_s(d0, v128.load(x0, 48))));
      e1 = i32x4.add(e1, i32x4.add(i32x4.dot_i16x8_s(a1, v128.load(x1)), i32x4.dot_i16x8_s(b1, v128.load(x1, 16))));
      o1 = i32x4.add(o1, i32x4.add(i32x4.dot_i16x8_s(c1, v128.load(x1, 32)), i32x4.dot_i16x8_s(d1, v128.load(x1, 48))));
      e2 = i32x4.add(e2, i32x4.add(i32x4.dot_i16x8_s(a2, v128.load(x2)), i32x4.dot_i16x8_s(b2, v128.load(x2, 16))));
      o2 = i32x4.add(o2, i32x4.add(i32x4.dot_i16x8_s(c2, v128.load(x2, 32)), i32x4.dot_i16x8_s(d2, v128.load(x2, 48))));
      e3 = i32x4.add(e3, i32x4.add(i32x4.dot_i16x8_s(a3, v128.load(x3)), i32x4.dot_i16x8_s(b3, v128.load(x3, 16))));
      o3 = i32x4.add(o3, i32x4.add(i32x4.dot_i16x8_s(c3, v128.load(x3, 32)), i32x4.dot_i16x8_s(d3, v128.load(x3, 48))));
    }
    // Sub-block sums [0..3] and [4..7], times their scales; the mins against x's per-32 sums.
    const lo = i32x4.mul(hsum4i(e0, o0, e1, o1), i32x4.extend_low_i16x8_u(sc16));
    const hi = i32x4.mul(hsum4i(e2, o2, e3, o3), i32x4.extend_high_i16x8_u(sc16));
    const mins = i32x4.dot_i16x8_s(m16, v128.load(xs + (b << 4)));
    const dx = load<f32>(xd + (b << 2));
    const d = halfToFloat(<u32>load<u16>(p)) * dx;
    const dmin = halfToFloat(<u32>load<u16>(p + 2)) * dx;
    // One float step per 256 values on the block's exact integer sums I, M (tile_q8.ts tileK does the
    // same): lanes [I, I, M, M] by two pairwise steps, then I * d - M * dmin.
    const a = i32x4.add(lo, hi);
    const ab = i32x4.add(i32x4.shuffle(a, mins, 0, 1, 4, 5), i32x4.shuffle(a, mins, 2, 3, 6, 7));
    const f = f32x4.mul(f32x4.convert_i32x4_s(i32x4.add(ab, i32x4.shuffle(ab, ab, 1, 0, 3, 2))), f32x4.shuffle(f32x4.splat(d), f32x4.splat(dmin), 0, 1, 4, 5));
    acc += f32x4.extract_lane(f, 0) - f32x4.extract_lane(f, 2);
  }
  keep(sink);
  return acc;
}

/** Bytes of one token's packed x in xq / xd / xs for rows of `cols` values (packActVec's layout). */
@inline function tokenQ(order: i32, cols: i32): usize {
  return <usize>cols << (order == ORDER_HALVES ? 2 : order == ORDER_NAT8 || (order == ORDER_NIB256 && VEC_RELAXED_NIB256) || (order == ORDER_Q6K && VEC_RELAXED_Q6K) ? 0 : 1);
}
@inline function tokenD(order: i32, cols: i32): usize {
  return <usize>(order == ORDER_NIB256 || order == ORDER_Q6K ? cols >> 8 : cols >> 5) << 2;
}
@inline function tokenS(order: i32, cols: i32): usize {
  return <usize>(order == ORDER_Q6K ? cols >> 4 : cols >> 5) << 1;
}

/**
 * y[t*yStride + r] = W[r] . x_t for `rows` rows of `type` (vecOrder(type) >= 0) at w, rowBytes apart, and n
 * tokens x_t packed one after another by packActVec with that type's order: per token xq [cols] i16,
 * xd [cols/qb] f32, xs [cols/32] i16 (f16: xq [cols] f32, xd and xs unused). Each token re-reads the rows,
 * which a unit of rows (run.ts) keeps in cache.
 */
export function matmulVec(type: i32, w: usize, rowBytes: i32, rows: i32, cols: i32, xq: usize, xd: usize, xs: usize, n: i32, y: usize, yStride: i32): void {
  const rb = <usize>rowBytes;
  const order = orderOf(type);
  const file = fileTypeOf(type);
  const grouped = type >= GROUPED;
  for (let t = 0; t < n; t++) {
    const q = xq + <usize>t * tokenQ(order, cols);
    const d = xd + <usize>t * tokenD(order, cols);
    const s = xs + <usize>t * tokenS(order, cols);
    const yt = y + ((<usize>t * <usize>yStride) << 2);
    if (type == T_F16) matmulVecHalves(false, w, rowBytes, rows, cols, q, yt);
    else if (type == T_BF16) matmulVecHalves(true, w, rowBytes, rows, cols, q, yt);
    // (One call per file type, each inlined with its type a constant; `grouped` stays a runtime flag, since an
    // instance per layout more took Binaryen's -O3 from ~20 s to 6 minutes.)
    else if (type == T_Q8_0) rowsQ(T_Q8_0, false, w, rb, rows, <usize>(cols >> 5), q, d, s, yt);
    else if (file == T_Q4_0) rowsQ(T_Q4_0, grouped, w, rb, rows, <usize>(cols >> 5), q, d, s, yt);
    else if (type == T_Q8_0X4) matmulVecQ8x4(w, rows, cols, q, d, yt);
    else if (type == T_Q4_0X4) matmulVecQ4x4(w, rowBytes, rows, cols, q, d, s, yt);
    else if (type == T_Q4_KX4) matmulVecQ4Kx4(w, rowBytes, rows, cols, q, d, s, yt);
    else if (file == T_Q4_1) rowsQ(T_Q4_1, grouped, w, rb, rows, <usize>(cols >> 5), q, d, s, yt);
    else if (file == T_Q5_0) rowsQ(T_Q5_0, grouped, w, rb, rows, <usize>(cols >> 5), q, d, s, yt);
    else if (file == T_Q5_1) rowsQ(T_Q5_1, grouped, w, rb, rows, <usize>(cols >> 5), q, d, s, yt);
    else if (file == T_IQ4_NL) rowsQ(T_IQ4_NL, grouped, w, rb, rows, <usize>(cols >> 5), q, d, s, yt);
    else if (type == T_Q4_K || type == T_Q5_K) {
      const nb = <usize>(cols >> 8);
      const last = w + <usize>rows * rb - 1;
      if (VEC_RELAXED_NIB256) {
        if (type == T_Q5_K) for (let r = 0; r < rows; r++) store<f32>(yt + (<usize>r << 2), rowQKRelaxed(true, w + <usize>r * rb, nb, q, d, s, yt + (<usize>r << 2)));
        else for (let r = 0; r < rows; r++) store<f32>(yt + (<usize>r << 2), rowQKRelaxed(false, w + <usize>r * rb, nb, q, d, s, yt + (<usize>r << 2)));
      } else if (type == T_Q5_K) for (let r = 0; r < rows; r++) store<f32>(yt + (<usize>r << 2), rowQK(true, true, w + <usize>r * rb, nb, q, d, s, w + <usize>(r + 8) * rb, last));
      else if (QK_LONG_NO_TOUCH && rb >= EIGHT_MIN_ROW_BYTES) for (let r = 0; r < rows; r++) store<f32>(yt + (<usize>r << 2), rowQK(false, false, w + <usize>r * rb, nb, q, d, s, 0, last));
      else for (let r = 0; r < rows; r++) store<f32>(yt + (<usize>r << 2), rowQK(false, true, w + <usize>r * rb, nb, q, d, s, w + <usize>(r + 8) * rb, last));
    } else if (type == T_Q6_K) {
      const nb = <usize>(cols >> 8);
      const last = w + <usize>rows * rb - 1;
      if (VEC_RELAXED_Q6K) for (let r = 0; r < rows; r++) store<f32>(yt + (<usize>r << 2), rowQ6KRelaxed(w + <usize>r * rb, nb, q, d, s, yt + (<usize>r << 2)));
      else for (let r = 0; r < rows; r++) store<f32>(yt + (<usize>r << 2), rowQ6K(w + <usize>r * rb, nb, q, d, s, w + <usize>(r + 8) * rb, last));
    } else unreachable();
  }
}

/** packActVec for n tokens x [n, cols] f32, one after another in xq / xd / xs (matmulVec's layout). */
export function packActVecN(x: usize, n: i32, cols: i32, order: i32, xq: usize, xd: usize, xs: usize): void {
  for (let t = 0; t < n; t++) packActVec(x + ((<usize>t * <usize>cols) << 2), cols, order, xq + <usize>t * tokenQ(order, cols), xd + <usize>t * tokenD(order, cols), xs + <usize>t * tokenS(order, cols));
}
