// Standard normal pdf, cdf and quantile in float64, for deriving codebooks (Lloyd-Max, NF4) in tests.

const INV_SQRT_2PI = 1 / Math.sqrt(2 * Math.PI);

export function normalPdf(x: number): number {
  return INV_SQRT_2PI * Math.exp(-0.5 * x * x);
}

/**
 * Phi(x) from the series Phi(x) = 1/2 + pdf(x) * sum x^(2n+1) / (1*3*...*(2n+1)); all terms are positive,
 * so it converges to double precision for |x| <= 8 (beyond that Phi is 0 or 1 to double precision).
 */
export function normalCdf(x: number): number {
  if (x < -8) return 0;
  if (x > 8) return 1;
  let term = x;
  let sum = x;
  for (let n = 1; Math.abs(term) > 1e-17 * Math.abs(sum); n++) {
    term *= (x * x) / (2 * n + 1);
    sum += term;
  }
  return 0.5 + normalPdf(x) * sum;
}

/** Phi^-1(p) for p in (0, 1) by bisection (slow, exact to ~1e-15; used to derive tables, not per value). */
export function normalQuantile(p: number): number {
  let lo = -8;
  let hi = 8;
  for (let i = 0; i < 100; i++) {
    const mid = (lo + hi) / 2;
    if (normalCdf(mid) < p) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}
