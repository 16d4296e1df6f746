// What the four-row group layouts (vec_q4x4.ts q4_0x4, vec_q4kx4.ts q4_Kx4; src/kernels/matmul/interleave.ts
// defines them) share: a segment of 4-byte units of four rows stored unit by unit, and their f16 scale check.

/**
 * The 16 bytes at a, c, e, f (rows 0..3: 4 words each) transposed to o: vector k (at o + 16k) holds word k of
 * rows 0, 1, 2, 3.
 */
@inline export function storeWordsByRow(a: v128, c: v128, e: v128, f: v128, o: usize): void {
  const t0 = i32x4.shuffle(a, c, 0, 4, 1, 5), t1 = i32x4.shuffle(a, c, 2, 6, 3, 7);
  const t2 = i32x4.shuffle(e, f, 0, 4, 1, 5), t3 = i32x4.shuffle(e, f, 2, 6, 3, 7);
  v128.store(o, i32x4.shuffle(t0, t2, 0, 1, 4, 5));
  v128.store(o, i32x4.shuffle(t0, t2, 2, 3, 6, 7), 16);
  v128.store(o, i32x4.shuffle(t1, t3, 0, 1, 4, 5), 32);
  v128.store(o, i32x4.shuffle(t1, t3, 2, 3, 6, 7), 48);
}

/**
 * 1 when every f16 at the start of each group block of `bytes` at w (blocks of groupBlock bytes) is finite:
 * `wide` checks 8 halves (q4_Kx4's d and dmin), else 4 (q4_0x4's d).
 */
@inline export function groupHalvesFinite(w: usize, bytes: usize, groupBlock: usize, wide: bool): i32 {
  const end = w + bytes;
  const e = i16x8.splat(0x7c00);
  let bad: u32 = 0;
  for (let p = w; p < end; p += groupBlock) {
    const h = wide ? v128.load(p) : v128.load64_zero(p);
    bad |= <u32>v128.any_true(i16x8.eq(v128.and(h, e), e));
  }
  return bad ? 0 : 1;
}

/**
 * Repacks `rows` (% 4 == 0) rows of a 32-value block type (bs bytes a block) at w in place into four-row groups of
 * whole blocks (decode.ts GROUPED): per block, row 0's to row 3's in turn. One group at a time through tmp [4 * rowBytes].
 */
export function repackGrouped(w: usize, rowBytes: i32, rows: i32, bs: usize, tmp: usize): void {
  const rb = <usize>rowBytes;
  const nb = rb / bs;
  for (let g = 0; g < rows; g += 4) {
    const gp = w + <usize>g * rb;
    memory.copy(tmp, gp, rb << 2);
    for (let b: usize = 0; b < nb; b++) {
      for (let r: usize = 0; r < 4; r++) memory.copy(gp + (b << 2) * bs + r * bs, tmp + r * rb + b * bs, bs);
    }
  }
}
