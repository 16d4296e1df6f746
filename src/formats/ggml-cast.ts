// C float -> small-integer casts as ggml's x86-64 build really computes them (cvttss2si / cvttps2dq).

const TWO31 = 2 ** 31;

/**
 * C `(int8_t)x` for a float x: truncate to int32, keep the low byte, sign-extend. NaN and |x| >= 2^31 give
 * x86's "integer indefinite" 0x80000000, whose low byte is 0: ggml's tiny-scale blocks (1/d overflows to
 * +-Inf) depend on this, and a plain Math.min(15, Infinity) would give 15 instead.
 */
export function castInt8(x: number): number {
  const t = x > -TWO31 - 1 && x < TWO31 ? Math.trunc(x) : -TWO31;
  return (t << 24) >> 24;
}

/** C `(uint8_t)x` for a float x (same truncation, low byte kept unsigned). */
export function castUint8(x: number): number {
  return castInt8(x) & 0xff;
}
