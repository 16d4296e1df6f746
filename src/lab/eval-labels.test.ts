// Honest labels of the eval table: n/a where there are no decode rows or the horizon does not reach an
// exact-match horizon; prompt and decode rows apart; bootstrap intervals over prompts; bulk bits beside eff. bits.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { modelFromLoaded } from '../model/model.js';
import { tinyModel } from '../../test/e2e/tiny-models.js';
import { computeReference, REFERENCE_POLICY } from './reference-logits.js';
import { evalTable, runArm, scoreArm } from './eval.js';
import { schemePolicy } from '../cache/schemes.js';
import { bootstrapCi } from './bootstrap.js';

const model = modelFromLoaded(tinyModel('llama'));
const shape = { layers: model.hp.nLayer, kvHeads: model.hp.nHeadKv, headDim: model.hp.headDim };
const prompts = [
  { id: 'a', tokens: [1, 5, 9, 13, 17, 21, 25, 29] },
  { id: 'b', tokens: [1, 7, 3, 11, 2, 40, 8, 6] },
];
const q4 = { name: 'q4_0', policy: schemePolicy('q4_0', { window: 0, sinks: 0 }) };

test('eval --horizon 1: no decode rows and no exact-match horizon reached print n/a, never 0', () => {
  const ref = computeReference(model, { model: 'tiny', policy: REFERENCE_POLICY, horizon: 1, prompts });
  const s = scoreArm(ref, q4, runArm(model, ref, q4), shape, [50, 100]);
  assert.equal(s.klDecode, null);
  assert.equal(s.top1Decode, null);
  assert.deepEqual(s.exactAt, {});
  const row = evalTable([s], [50, 100])[2]!
    .split('|')
    .map((c) => c.trim());
  const head = evalTable([s], [50, 100])[0]!
    .split('|')
    .map((c) => c.trim());
  for (const col of ['KL decode', 'top-1 decode', 'PPL delta decode', 'exact@50', 'exact@100']) assert.equal(row[head.indexOf(col)], 'n/a', col);
  assert.match(row[head.indexOf('KL prompt')]!, /^\d\.\d{5} \[\d\.\d{5}, \d\.\d{5}\]$/);
});

test('eval: prompt and decode rows scored apart, exact-match only up to the horizon, bulk bits beside eff. bits', () => {
  const ref = computeReference(model, { model: 'tiny', policy: REFERENCE_POLICY, horizon: 6, prompts });
  const s = scoreArm(ref, q4, runArm(model, ref, q4), shape, [3, 6, 50]);
  assert.deepEqual(Object.keys(s.exactAt).sort(), ['3', '6']);
  assert.ok(s.klDecode !== null && s.klPrompt > 0);
  // The pooled KL is the row-weighted mean of the prompt and decode KLs (8 + 5 rows per prompt).
  assert.ok(Math.abs(s.kl - (8 * s.klPrompt + 5 * s.klDecode) / 13) < 1e-12);
  assert.equal(s.bulkBits, 4.5);
  assert.ok(s.ci.klPrompt![0] <= s.klPrompt && s.klPrompt <= s.ci.klPrompt![1]);
});

test('bootstrap: one prompt has no spread; resampling is seeded (same interval twice)', () => {
  assert.deepEqual(bootstrapCi([0.3]), [0.3, 0.3]);
  const x = [0.1, 0.5, 0.2, 0.9];
  assert.deepEqual(bootstrapCi(x), bootstrapCi(x));
  const [lo, hi] = bootstrapCi(x);
  assert.ok(lo >= 0.1 && hi <= 0.9 && lo < hi);
});
