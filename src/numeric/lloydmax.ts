// Lloyd-Max (MSE-optimal) scalar quantizers for a unit Gaussian, as tabulated by J. Max, "Quantizing for
// minimum distortion" (IRE Trans. IT-6, 1960), Table I; seed 000 ships the same 4-level values.

/**
 * 4 levels for N(0, 1): reconstruction levels in code order (code 0..3) and the 3 decision thresholds
 * between them. Each threshold is the midpoint of its neighbours; each level is the centroid of its cell
 * (`lloydmax.test.ts` re-derives both conditions numerically).
 */
export const LLOYD_MAX_4 = Object.freeze({
  levels: Object.freeze([-1.5104, -0.4528, 0.4528, 1.5104] as const),
  thresholds: Object.freeze([-0.9816, 0, 0.9816] as const),
});
