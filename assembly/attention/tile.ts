// Tile size for decode-then-compute kernels: one tile of decoded rows stays in L1 while G heads read it.

/** Tokens per tile: 16 KiB of f32 rows (32 tokens at head dim 128), at least 4. */
@inline export function tileTokens(D: i32): i32 {
  const t = 4096 / D;
  return t < 4 ? 4 : t;
}

/** Bytes callers must reserve for the `tile` argument of any scores/accum kernel at head dim D. */
export function tileBytes(D: i32): i32 {
  return tileTokens(D) * D * 4;
}

