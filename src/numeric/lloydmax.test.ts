import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LLOYD_MAX_4 } from './lloydmax.js';
import { normalCdf, normalPdf, normalQuantile } from '../../test/numeric/gaussian.js';

/** Lloyd iteration on N(0,1): thresholds = midpoints, levels = cell centroids (pdf(a)-pdf(b))/(cdf(b)-cdf(a)). */
function lloydMax(levels: number[], iterations: number): { levels: number[]; thresholds: number[] } {
  let y = levels.slice();
  let t: number[] = [];
  for (let it = 0; it < iterations; it++) {
    t = y.slice(1).map((v, i) => (v + y[i]!) / 2);
    const edges = [-Infinity, ...t, Infinity];
    y = y.map((_, i) => {
      const a = edges[i]!;
      const b = edges[i + 1]!;
      const pa = Number.isFinite(a) ? normalPdf(a) : 0;
      const pb = Number.isFinite(b) ? normalPdf(b) : 0;
      return (pa - pb) / (normalCdf(b) - normalCdf(a));
    });
  }
  return { levels: y, thresholds: t };
}

test('gaussian helpers: known values of Phi and its inverse', () => {
  assert.ok(Math.abs(normalCdf(0) - 0.5) < 1e-15);
  assert.ok(Math.abs(normalCdf(1.959963984540054) - 0.975) < 1e-12);
  assert.ok(Math.abs(normalCdf(-1) - 0.15865525393145707) < 1e-12);
  assert.ok(Math.abs(normalQuantile(0.975) - 1.959963984540054) < 1e-10);
});

test('LLOYD_MAX_4 matches a numerically re-derived 4-level Lloyd-Max quantizer for N(0,1) within 1e-3', () => {
  // Start far from the answer (a uniform grid) so agreement is not inherited from the start point.
  const fit = lloydMax([-3, -1, 1, 3], 500);
  fit.levels.forEach((v, i) => assert.ok(Math.abs(v - LLOYD_MAX_4.levels[i]!) < 1e-3, `level ${i}: ${v}`));
  fit.thresholds.forEach((v, i) => assert.ok(Math.abs(v - LLOYD_MAX_4.thresholds[i]!) < 1e-3, `threshold ${i}: ${v}`));
  // The constants are at the fixed point: one more iteration from them moves nothing beyond the rounding.
  const again = lloydMax([...LLOYD_MAX_4.levels], 1);
  again.levels.forEach((v, i) => assert.ok(Math.abs(v - LLOYD_MAX_4.levels[i]!) < 2e-4));
});

test('LLOYD_MAX_4 thresholds are the midpoints of adjacent levels', () => {
  const y = LLOYD_MAX_4.levels;
  LLOYD_MAX_4.thresholds.forEach((t, i) => assert.ok(Math.abs(t - (y[i]! + y[i + 1]!) / 2) < 1e-12));
});
