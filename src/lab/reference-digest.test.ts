// The saved (digest) reference: a small fraction of the float32 logits, read back exactly, tamper refused, and
// scoring from it gives the numbers scoring from the full reference gives (so no saved KL becomes a bound).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { modelFromLoaded } from '../model/model.js';
import { tinyModel } from '../../test/e2e/tiny-models.js';
import { computeReference, REFERENCE_POLICY, writeReference, type ReferenceKey } from './reference-logits.js';
import { readSavedReference, savedReference, writeSavedReference } from './reference-digest.js';
import { armDigest, exactKlRows, runArm, scoreArm, scoreDigests } from './eval.js';
import { schemePolicy } from '../cache/schemes.js';

const model = modelFromLoaded(tinyModel('llama'));
const spec: ReferenceKey = {
  model: 'tiny-llama',
  policy: REFERENCE_POLICY,
  horizon: 6,
  prompts: [
    { id: 'a', tokens: [1, 5, 9, 13, 17, 21, 25, 29] },
    { id: 'b', tokens: [1, 7, 3, 2, 40, 41] },
  ],
};
const shape = { layers: model.hp.nLayer, kvHeads: model.hp.nHeadKv, headDim: model.hp.headDim };

test('saved reference: round trip, smaller than the float32 logits, a flipped bit is refused', () => {
  const ref = computeReference(model, spec);
  const k = 4;
  assert.ok(k + 3 < model.nVocab, 'the digest must be narrower than the vocabulary for this test to mean anything');
  const { saved } = savedReference(ref, k);
  const bytes = writeSavedReference(saved);
  assert.ok(bytes.length < writeReference(ref).length / 2, `${bytes.length} B vs ${writeReference(ref).length} B`);
  const back = readSavedReference(bytes);
  assert.deepEqual(back.digests, saved.digests);
  assert.deepEqual(
    back.entries.map((e) => e.continuation),
    ref.entries.map((e) => e.continuation),
  );
  assert.equal(back.logitsSha256, saved.logitsSha256);
  const flipped = bytes.slice();
  flipped[flipped.length - 3]! ^= 0x40;
  assert.throws(() => readSavedReference(flipped), /sha256/);
});

test('saved reference: scores from it equal scores from the full reference; KL exact from run-time rows, not the top-k bound', () => {
  const ref = computeReference(model, spec);
  const k = 4;
  const { saved, ids } = savedReference(ref, k);
  const back = readSavedReference(writeSavedReference(saved));
  const arm = { name: 'q4_0', policy: schemePolicy('q4_0', { window: 0, sinks: 0 }) };
  const runs = runArm(model, ref, arm);
  const full = scoreArm(ref, arm, runs, shape, [3, 6]);
  const scored = runs.map(({ logits, ...rest }, i) => ({
    ...rest,
    digest: armDigest(back, ids[i]!, i, logits),
    klRows: exactKlRows(ref.entries[i]!.logits, logits, ref.vocab),
  }));
  const fromSaved = scoreDigests(back, back.digests, k, arm, scored, shape, [3, 6]);
  assert.equal(fromSaved.klSource, 'exact rows');
  assert.ok(Math.abs(fromSaved.kl - full.kl) <= 1e-6 * full.kl + 1e-9, `${fromSaved.kl} vs full-vocab ${full.kl}`);
  assert.equal(fromSaved.top1Agree, full.top1Agree);
  assert.ok(full.kl > 0, 'q4_0 must drift for the comparison to mean anything');
  // Negative control: without the exact rows the same digests give only the top-k lower bound.
  const bound = scoreDigests(
    back,
    back.digests,
    k,
    arm,
    scored.map(({ klRows: _k, ...r }) => r),
    shape,
    [3, 6],
  );
  assert.equal(bound.klSource, 'top-k bound');
  assert.ok(bound.kl < full.kl, `bound ${bound.kl} must be below the exact ${full.kl}`);
});
