// Per-block error bounds of ggml's uniform grids, with the fp16 rounding of the stored scale (and min)
// included: the encoder picks q with the unrounded float32 d, the decoder multiplies by the fp16 one.
import { roundFp16 } from '../numeric/half.js';

// Float32 evaluation (x*id, the +0.5 offset, the decode multiply-add) moves results by a few ulps;
// this allowance is ~1e-3 of a step plus ~4e-6 of the block's largest magnitude.
function slack(d: number, amax: number): number {
  return Math.abs(d) * 2 ** -10 + amax * 2 ** -18;
}

function absMax(src: Float32Array, off: number, n: number): number {
  let amax = 0;
  for (let j = 0; j < n; j++) amax = Math.max(amax, Math.abs(src[off + j]!));
  return amax;
}

function finiteOrInf(x: number): number {
  return Number.isFinite(x) ? x : Infinity;
}

/**
 * Symmetric grid q*d, q in [qlo, qhi] (q4_0, q5_0, q8_0): half a step inside the grid; a value beyond the
 * clamped end (x/d > qhi + 0.5, the full-magnitude value of the sign opposite to the block's max) is off
 * by its distance to the end, up to one step for q4_0/q5_0. Plus |q| * |fp16(d) - d|.
 */
export function symmetricBound(d: number, qlo: number, qhi: number, src: Float32Array, off: number, n: number): number {
  const amax = absMax(src, off, n);
  const dh = roundFp16(d);
  // A scale that rounds to 0 in fp16 decodes every value to 0.
  if (dh === 0) return amax + slack(d, amax);
  let steps = 0.5;
  for (let j = 0; j < n; j++) {
    const y = src[off + j]! / d;
    steps = Math.max(steps, y - qhi, qlo - y);
  }
  const qAbs = Math.max(-qlo, qhi);
  return finiteOrInf(steps * Math.abs(d) + qAbs * Math.abs(dh - d) + slack(d, amax));
}

/**
 * Affine grid q*d + min, q in [0, qmax] (q4_1, q5_1): every value lies inside the grid, so half a step, plus
 * qmax * |fp16(d) - d| and |fp16(min) - min| (the min's fp16 rounding dominates for offset blocks).
 */
export function affineBound(d: number, min: number, qmax: number, src: Float32Array, off: number, n: number): number {
  const amax = absMax(src, off, n);
  const dh = roundFp16(d);
  const mh = roundFp16(min);
  return finiteOrInf(0.5 * d + qmax * Math.abs(dh - d) + Math.abs(mh - min) + slack(d, amax));
}
