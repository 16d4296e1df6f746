// fp32 <-> fp16 and bf16 conversion (Node 20 has no Float16Array / Math.f16round).

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** float -> IEEE fp16 bits, round to nearest even; overflow -> +-Inf, NaN -> quiet NaN (0x7e00). */
export function fp32ToFp16(value: number): number {
  f32[0] = value;
  const x = u32[0]!;
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  let mant = x & 0x7fffff;
  if (exp === 0xff) return sign | (mant ? 0x7e00 : 0x7c00);
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    // Subnormal half (or zero): shift the full mantissa, round to nearest even.
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    const half = mant >>> shift;
    const rem = mant & ((1 << shift) - 1);
    const mid = 1 << (shift - 1);
    const up = rem > mid || (rem === mid && (half & 1) === 1) ? 1 : 0;
    return sign | (half + up);
  }
  const half = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  // A carry out of the mantissa correctly bumps the exponent (and 65520+ becomes Inf).
  const up = rem > 0x1000 || (rem === 0x1000 && (half & 1) === 1) ? 1 : 0;
  return sign | (half + up);
}

/** fp16 bits -> float, exact (every fp16 value is a float32 value). */
export const FP16_TABLE: Float32Array = (() => {
  const t = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) {
    const sign = h & 0x8000 ? -1 : 1;
    const exp = (h >>> 10) & 0x1f;
    const mant = h & 0x3ff;
    if (exp === 0) t[h] = sign * mant * 2 ** -24;
    else if (exp === 0x1f) t[h] = mant ? NaN : sign * Infinity;
    else t[h] = sign * (1 + mant / 1024) * 2 ** (exp - 15);
  }
  return t;
})();

export function fp16ToFp32(bits: number): number {
  return FP16_TABLE[bits & 0xffff]!;
}

/** float rounded through fp16 (the value a stored f16 scale really has). */
export function roundFp16(value: number): number {
  return FP16_TABLE[fp32ToFp16(value)]!;
}

/** float -> bf16 bits as ggml does: round to nearest even, NaN -> quiet NaN with the sign kept. */
export function fp32ToBf16(value: number): number {
  f32[0] = value;
  const x = u32[0]!;
  if ((x & 0x7fffffff) > 0x7f800000) return ((x >>> 16) | 64) & 0xffff;
  return ((x + (0x7fff + ((x >>> 16) & 1))) >>> 16) & 0xffff;
}

export function bf16ToFp32(bits: number): number {
  u32[0] = (bits & 0xffff) << 16;
  return f32[0]!;
}
