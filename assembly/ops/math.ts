// Vector f32 elementary functions for the forward ops (ops/ops.ts): e^x over the whole f32 range, and
// tanh built on it. Accuracy vs Math.exp / Math.tanh is measured in src/kernels/ops/ops.test.ts.

const LOG2E: f32 = 1.44269504088896341;
// Cody-Waite split of ln 2: LN2_HI has 9 significant bits, so n * LN2_HI is exact for the |n| <= 150 used here.
const LN2_HI: f32 = 0.693359375;
const LN2_LO: f32 = -2.12194440e-4;
/** e^x underflows to 0 below this and overflows to Inf above EXP_HI: clamping there keeps 2^n in range. */
const EXP_LO: f32 = -104.0;
const EXP_HI: f32 = 89.0;

/** n = nearest(x / ln 2), the power of two split off e^x. */
@inline export function expN(x: v128): v128 {
  return f32x4.nearest(f32x4.mul(x, f32x4.splat(LOG2E)));
}

/**
 * a * b + c per f32 lane: one fused multiply-add in relaxed-SIMD builds (V8 emits vfmadd where the CPU has
 * FMA), a multiply then an add in baseline builds. A build runs one form everywhere, so results still do not
 * depend on the batch or the thread count.
 */
@inline export function madd(a: v128, b: v128, c: v128): v128 {
  if (ASC_FEATURE_RELAXED_SIMD) return f32x4.relaxed_madd(a, b, c);
  return f32x4.add(c, f32x4.mul(a, b));
}

/**
 * e^r for r = x - n ln 2 (|r| <= ln2/2): Cephes expf's degree-5 polynomial; the caller applies 2^n. Horner
 * steps are multiply-adds: fused, they took 0.83 against 1.14 ns a value in the attention softmax.
 */
@inline export function expReduced(x: v128, n: v128): v128 {
  let r = f32x4.sub(x, f32x4.mul(n, f32x4.splat(LN2_HI)));
  r = f32x4.sub(r, f32x4.mul(n, f32x4.splat(LN2_LO)));
  let p = f32x4.splat(1.9875691500e-4);
  p = madd(p, r, f32x4.splat(1.3981999507e-3));
  p = madd(p, r, f32x4.splat(8.3334519073e-3));
  p = madd(p, r, f32x4.splat(4.1665795894e-2));
  p = madd(p, r, f32x4.splat(1.6666665459e-1));
  p = madd(p, r, f32x4.splat(5.0000001201e-1));
  return f32x4.add(madd(f32x4.mul(p, r), r, r), f32x4.splat(1.0));
}

/**
 * e^x per lane: Cephes expf (degree-5 polynomial on r = x - n ln2, |r| <= ln2/2), then 2^n applied as two
 * halves so n in [-150, 129] never leaves the normal exponents: results underflow to 0 / overflow to Inf
 * like Math.exp rounded to f32, NaN stays NaN. Measured max relative error 8.4e-8 (0.71 x 2^-23) where e^x
 * is a normal f32 (relaxed build; 8.3e-8 before the Horner steps were multiply-adds).
 */
@inline export function exp4(x: v128): v128 {
  // pmax(x, c) = x < c ? c : x: one instruction (f32x4.max is ~7 in V8) and a NaN x stays NaN.
  x = f32x4.pmin(f32x4.pmax(x, f32x4.splat(EXP_LO)), f32x4.splat(EXP_HI));
  const n = expN(x);
  const y = expReduced(x, n);
  const ni = i32x4.trunc_sat_f32x4_s(n);
  const n1 = i32x4.shr_s(ni, 1);
  const n2 = i32x4.sub(ni, n1);
  const bias = i32x4.splat(127);
  return f32x4.mul(f32x4.mul(y, i32x4.shl(i32x4.add(n1, bias), 23)), i32x4.shl(i32x4.add(n2, bias), 23));
}

/** Below this |x| tanh uses its odd polynomial: 1 - 2/(e^2x + 1) would cancel and lose relative accuracy. */
const TANH_SMALL: f32 = 0.625;

/**
 * tanh per lane: Cephes tanhf (odd polynomial for |x| < 0.625, else 1 - 2/(e^2|x| + 1) with x's sign).
 * Measured max relative error 1.4e-7 (1.2 x 2^-23), just past the polynomial's range.
 */
@inline export function tanh4(x: v128): v128 {
  const s = f32x4.mul(x, x);
  let p = f32x4.splat(-5.70498872745e-3);
  p = f32x4.add(f32x4.mul(p, s), f32x4.splat(2.06390887954e-2));
  p = f32x4.add(f32x4.mul(p, s), f32x4.splat(-5.37397155531e-2));
  p = f32x4.add(f32x4.mul(p, s), f32x4.splat(1.33314422036e-1));
  p = f32x4.add(f32x4.mul(p, s), f32x4.splat(-3.33332819422e-1));
  const small = f32x4.add(f32x4.mul(f32x4.mul(p, s), x), x);
  const ax = f32x4.abs(x);
  const e = exp4(f32x4.add(ax, ax));
  const big = f32x4.sub(f32x4.splat(1.0), f32x4.div(f32x4.splat(2.0), f32x4.add(e, f32x4.splat(1.0))));
  const signed = v128.or(big, v128.and(x, i32x4.splat(0x80000000)));
  return v128.bitselect(small, signed, f32x4.lt(ax, f32x4.splat(TANH_SMALL)));
}
