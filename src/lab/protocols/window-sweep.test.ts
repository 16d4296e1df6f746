import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runAndTamper, sabotaged, sabotagedWith } from '../../../test/fixtures/model-runs.js';

const SMALL = { schemes: ['q4_0', 'q2k'], windows: [0, 128], prompts: { count: 1, length: 40, seedTokens: 4, seed: 1 }, horizon: 12, horizons: [5, 12] };

test('window-sweep: tiny run passes its controls, audits PASS, a flipped byte FAILs', (t) => runAndTamper(t, 'window-sweep', SMALL));
test('window-sweep: quantization secretly disabled fires the read-back and bytes controls', (t) => sabotaged(t, 'window-sweep', { ...SMALL, windows: [0] }));
test('window-sweep: a cache destroyed at read time (storage intact) passes the stored-K/V control but fails the attention read-back control', (t) => {
  const bad = sabotagedWith(
    t,
    'window-sweep',
    { ...SMALL, windows: [0] },
    { corruptRead: true },
    "control: every arm's attention output equals float64 attention over the values its cache stores",
  );
  assert.ok(!bad.some((n) => n.startsWith('control: stored K/V relL2')), 'storage reads back fine: the stored-K/V control alone cannot see it');
});
