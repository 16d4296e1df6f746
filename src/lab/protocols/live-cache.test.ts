import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runAndTamper } from '../../../test/fixtures/model-runs.js';
import { endsInLoop } from './live-cache-core.js';

const SMALL = {
  arms: [
    { name: 'q4_0', k: 'q4_0', v: 'q4_0' },
    { name: 'q2k', k: 'q2c_0', v: 'q4_0' },
  ],
  prompts: { count: 2, length: 40, seedTokens: 4, seed: 1 },
  horizon: 12,
  horizons: [5, 12],
  shortTokens: 4,
  loops: { tail: 6, maxPeriod: 2 },
};

test('live-cache: tiny run passes its controls, audits PASS, a flipped byte FAILs', (t) => runAndTamper(t, 'live-cache', SMALL));

test('loop detection: a period up to maxPeriod over the tail, nothing shorter than the tail', () => {
  assert.equal(endsInLoop([1, 2, 3, 4, 5, 6, 7, 8], 4, 2), false);
  assert.equal(endsInLoop([9, 8, 7, 1, 2, 1, 2, 1, 2], 6, 2), true);
  assert.equal(endsInLoop([9, 8, 7, 1, 2, 3, 1, 2, 3], 6, 2), false);
  assert.equal(endsInLoop([5, 5, 5, 5], 4, 1), true);
  assert.equal(endsInLoop([5, 5, 5], 4, 1), false);
});
