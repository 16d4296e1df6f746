// Touching weight bytes a little ahead of their use. Measured on this CPU kind (one core, q8_0 weights
// streamed from memory, 96 MiB of copies, rows four at a time, touches on and off alternated in one
// process): reading one byte per 64 of the row group two groups ahead takes 0.80-0.88x the time on
// [2048, 768], [768, 2048], [768, 768], [32000, 768] (1, 4 or 8 groups ahead: the same): the hardware
// prefetcher alone leaves the compute-bound loop waiting on each new line. wasm has no prefetch instruction.

/** The byte at p, or at `last` once p is past it (never beyond the weight). */
@inline export function touch(p: usize, last: usize): u32 {
  return <u32>load<u8>(p < last ? p : last);
}

/**
 * Keeps the touches: their sum flows into a test that never holds (a sum of at most 2^20 bytes stays below
 * 0xdeadbeef), which no optimiser can prove, so the loads are not removed.
 */
@inline export function keep(sum: u32): void {
  if (sum == 0xdeadbeef) unreachable();
}

/**
 * Touches one byte per 64 of [a, b) (clamped to `end`, exclusive) in a tight loop and returns their sum (for
 * keep). A burst of loads a row group ahead has many misses in flight at once, where touches spread over
 * the compute loop have only as many as its reorder window holds (see matmul_vec.ts rowsQ).
 */
@inline export function touchLines(a: usize, b: usize, end: usize): u32 {
  const e = b < end ? b : end;
  let s: u32 = 0;
  let q = a;
  for (; q + 192 < e; q += 256) s += <u32>load<u8>(q) + <u32>load<u8>(q, 64) + <u32>load<u8>(q, 128) + <u32>load<u8>(q, 192);
  for (; q < e; q += 64) s += <u32>load<u8>(q);
  return s;
}
