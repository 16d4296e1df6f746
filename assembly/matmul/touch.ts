// Touching weight bytes a little ahead of their use. Measured on this CPU kind (one core, q8_0 weights
// streamed from memory, 96 MiB of copies, rows four at a time, touches on and off alternated in one
// process): reading one byte per 64 of the row group two groups ahead takes 0.80-0.88x the time on
// [2048, 768], [768, 2048], [768, 768], [32000, 768] (1, 4 or 8 groups ahead: the same): the hardware
// prefetcher alone leaves the compute-bound loop waiting on each new line. wasm has no prefetch instruction.
// Touching a whole row group in one burst before it (many misses in flight at once) measured 0.96-1.10x
// this over a decode step's weights streamed from DRAM, and 1.2x slower on an L3-resident [32000, 768].

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

