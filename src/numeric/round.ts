// Rounding helpers that match C's float semantics (ggml's reference encoders are written in C float).

/** C roundf: half away from zero (Math.round(-2.5) is -2, roundf(-2.5) is -3). */
export function roundf(x: number): number {
  return x < 0 ? -Math.floor(-x + 0.5) : Math.floor(x + 0.5);
}

/** C's `(int)x` truncation toward zero. */
export function truncInt(x: number): number {
  return x < 0 ? Math.ceil(x) : Math.floor(x);
}

export const fround = Math.fround;

/** Clamp to [lo, hi]. */
export function clamp(x: number, lo: number, hi: number): number {
  return x < lo ? lo : Math.min(x, hi);
}
