// The cache defaults every command and the library share (run, chat, eval, memory, serve): one place, so
// the same scheme means the same cache everywhere. A command passes a region only when its flag is given.

/**
 * Exact recent window and attention sinks over a lossy bulk (seed 000's overlay: 128 positions + 4 sinks).
 * Over an exact bulk (f32/f16/bf16 K and V) there are no exact regions at all (policy.ts).
 */
export const DEFAULT_WINDOW = 128;
export const DEFAULT_SINKS = 4;
/** Precision of a lossy tensor's window and sinks ('f16', seed 000); an exact tensor's regions use its own format. */
export const DEFAULT_EXACT = 'f16';
/** Precision of a lossy tensor's decode anchors. */
export const DEFAULT_ANCHOR_PRECISION = 'f16';
