// int2s_g8/g4 (src/formats/int2s.ts): 32 values in 32/g sets of g, each set with an f16 scale; set membership
// stored as combinatorial ranks (mixed-radix chunks < 2^53, so u64 integer math is exactly the reference's
// double math). Decode a tile of rows to f32 (x = level[code] * s, the reference's float32 product), then
// the shared G-head dots / weighted sums.
import { dotRows, axpyRows, halfToFloat } from '../shared/common';
import { tileTokens } from './tile';

const QK = 32;

/** C(n, k) for n <= 32, exact in u64 (each partial product divides evenly); 0 when k > n. */
@inline function binom(n: i32, k: i32): u64 {
  if (k > n) return 0;
  let c: u64 = 1;
  for (let t = 1; t <= k; t++) c = (c * <u64>(n - k + t)) / <u64>t;
  return c;
}

/** Index of the p-th (0-based) set bit of x. */
@inline function nthBit(x: u32, p: i32): i32 {
  for (let i = 0; i < p; i++) x &= x - 1;
  return <i32>ctz(x);
}

/** `bits` bits from bit offset pos of the field at p, low bits first (bits + (pos & 7) <= 64). */
@inline function getBits(p: usize, pos: i32, bits: i32): u64 {
  const w = load<u64>(p + <usize>(pos >> 3)) >> <u64>(pos & 7);
  return w & ((<u64>1 << <u64>bits) - 1);
}

/** level[code] of the 4-level grid {-1, -1/3, +1/3, +1} as float32. */
@inline function level(code: u32): f32 {
  return code == 0 ? <f32>-1.0 : code == 1 ? <f32>(-1.0 / 3.0) : code == 2 ? <f32>(1.0 / 3.0) : <f32>1.0;
}

/**
 * Set k's members from its digit r: the lowest remaining position, plus a (g-1)-subset of the other remaining
 * positions unranked greedily, largest first (the reference's loop, with C(p+1, i) stepped incrementally).
 */
@inline function members(rest: u32, r: u64, g: i32): u32 {
  const first = <i32>ctz(rest);
  const others = rest & ~(<u32>1 << first);
  let sel: u32 = <u32>1 << first;
  for (let i = g - 1; i >= 1; i--) {
    let p = i - 1;
    let cur: u64 = 0; // C(p, i)
    let next: u64 = 1; // C(p + 1, i)
    while (next <= r) {
      p++;
      cur = next;
      next = (next * <u64>(p + 1)) / <u64>(p + 1 - i);
    }
    r -= cur;
    sel |= <u32>1 << nthBit(others, p);
  }
  return sel;
}

/** nb blocks -> nb * 32 f32. Digits are taken `% radix`, so any bytes decode to a valid partition. */
@inline function int2sBlocks(src: usize, nb: i32, dst: usize, g: i32): void {
  const sets = QK / g;
  const grpBytes: usize = g == 8 ? 7 : 9;
  const bb = <usize>(2 * sets) + grpBytes + 8;
  for (let ib = 0; ib < nb; ib++) {
    const p = src + <usize>ib * bb;
    const o = dst + (<usize>ib << 7);
    const grp = p + <usize>(2 * sets);
    const qs = grp + grpBytes;
    // g=8: one 52-bit chunk of 4 digits; g=4: 45 bits (digits 0..3) then 22 bits (digits 4..7).
    let v = getBits(grp, 0, g == 8 ? 52 : 45);
    let rest: u32 = 0xffffffff;
    for (let k = 0; k < sets; k++) {
      if (g == 4 && k == 4) v = getBits(grp, 45, 22);
      const radix = binom(QK - k * g - 1, g - 1);
      const r = v % radix;
      v /= radix;
      let sel = members(rest, r, g);
      rest &= ~sel;
      const s = halfToFloat(load<u16>(p + (<usize>k << 1)));
      while (sel != 0) {
        const j = <i32>ctz(sel);
        sel &= sel - 1;
        const code = (<u32>load<u8>(qs + <usize>(j >> 2)) >> (<u32>(j & 3) << 1)) & 3;
        store<f32>(o + (<usize>j << 2), level(code) * s);
      }
    }
  }
}

@inline function blockBytes(g: i32): usize {
  return g == 8 ? 23 : 33;
}

@inline function int2sScores(g: i32, q: usize, G: i32, D: i32, k: usize, T: i32, out: usize, outStride: i32, tile: usize): void {
  const TT = tileTokens(D);
  const bpr = D / QK;
  const rb = <usize>bpr * blockBytes(g);
  for (let t0 = 0; t0 < T; t0 += TT) {
    const n = min(TT, T - t0);
    int2sBlocks(k + <usize>t0 * rb, n * bpr, tile, g);
    dotRows(q, G, D, tile, n, <usize>D << 2, out + (<usize>t0 << 2), outStride);
  }
}

@inline function int2sAccum(g: i32, w: usize, wStride: i32, G: i32, D: i32, v: usize, T: i32, acc: usize, tile: usize): void {
  const TT = tileTokens(D);
  const bpr = D / QK;
  const rb = <usize>bpr * blockBytes(g);
  for (let t0 = 0; t0 < T; t0 += TT) {
    const n = min(TT, T - t0);
    int2sBlocks(v + <usize>t0 * rb, n * bpr, tile, g);
    axpyRows(w + (<usize>t0 << 2), wStride, G, D, tile, n, <usize>D << 2, acc);
  }
}

export function int2s_g8_decode(src: usize, T: i32, D: i32, dst: usize): void { int2sBlocks(src, T * (D / QK), dst, 8); }
export function int2s_g8_scores(q: usize, G: i32, D: i32, k: usize, T: i32, out: usize, outStride: i32, tile: usize): void { int2sScores(8, q, G, D, k, T, out, outStride, tile); }
export function int2s_g8_accum(w: usize, wStride: i32, G: i32, D: i32, v: usize, T: i32, acc: usize, tile: usize): void { int2sAccum(8, w, wStride, G, D, v, T, acc, tile); }
export function int2s_g4_decode(src: usize, T: i32, D: i32, dst: usize): void { int2sBlocks(src, T * (D / QK), dst, 4); }
export function int2s_g4_scores(q: usize, G: i32, D: i32, k: usize, T: i32, out: usize, outStride: i32, tile: usize): void { int2sScores(4, q, G, D, k, T, out, outStride, tile); }
export function int2s_g4_accum(w: usize, wStride: i32, G: i32, D: i32, v: usize, T: i32, acc: usize, tile: usize): void { int2sAccum(4, w, wStride, G, D, v, T, acc, tile); }
