// Touching weight bytes a little ahead of their use. Measured on this CPU kind (one core, 2048x768 q8_0
// weights streamed from DRAM, rows four at a time): reading one byte per 64 of the row group two groups
// ahead took a call from 306 to 237 us (+29%; 240 -> 89 us warm, where it costs nothing): the hardware
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
