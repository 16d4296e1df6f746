// forwardBatch: several sequences of different lengths and positions in one pass give each the logits and
// the cache contents its own forward() calls give (every architecture, incl. gemma3's sliding windows).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { CachePolicy } from '../cache/policy.js';
import { tinyModel } from '../../test/e2e/tiny-models.js';
import { forwardBatch } from './forward.js';
import { modelFromLoaded, type Model } from './model.js';
import { Prng } from '../numeric/prng.js';
import { relL2 } from '../lab/metrics.js';

const POLICY: CachePolicy = { k: 'q8_0', v: 'q8_0', window: 8, sinks: 2 };

function tokens(rng: Prng, n: number, vocab: number): number[] {
  return Array.from({ length: n }, () => Math.floor(rng.next() * vocab));
}

/** Three sequences with different histories; one batched step of mixed lengths (1, 1, 9), then a decode step. */
function check(model: Model): void {
  const rng = new Prng(3);
  const vocab = model.nVocab;
  const histories = [tokens(rng, 5, vocab), tokens(rng, 40, vocab), tokens(rng, 13, vocab)];
  const steps = [
    [tokens(rng, 1, vocab), tokens(rng, 1, vocab), tokens(rng, 9, vocab)],
    [tokens(rng, 1, vocab), tokens(rng, 1, vocab), tokens(rng, 1, vocab)],
  ];
  const mk = () =>
    histories.map((h) => {
      const c = model.createCache({ policy: POLICY, capacity: 128, chunkTokens: 32 });
      model.forward(h, c);
      return c;
    });
  const solo = mk();
  const batched = mk();
  for (const step of steps) {
    const want = step.map((t, i) => model.forward(t, solo[i]!));
    const got = forwardBatch(
      model,
      step.map((t, i) => ({ tokens: t, cache: batched[i]! })),
    );
    got.forEach((g, i) => {
      assert.equal(batched[i]!.length, solo[i]!.length);
      const d = relL2(g, want[i]!);
      assert.ok(d < 1e-4, `${model.hp.arch} sequence ${i}: logits differ by ${d}`);
    });
  }
  for (const c of [...solo, ...batched]) c.dispose();
}

for (const arch of ['llama', 'qwen2', 'qwen3', 'gemma3'] as const) {
  test(`forwardBatch equals per-sequence forward: ${arch}`, () => check(modelFromLoaded(tinyModel(arch))));
}

test('forwardBatch on q8_0 weights (quantized activations) equals per-sequence forward', () =>
  check(modelFromLoaded(tinyModel('llama', { quant: 'q8_0' }), { expand: false })));

test('forwardBatch: a failing sequence rewinds every cache; two sequences may not share a cache', () => {
  const model = modelFromLoaded(tinyModel('llama'));
  const a = model.createCache({ policy: POLICY, capacity: 16 });
  const b = model.createCache({ policy: POLICY, capacity: 16 });
  model.forward([1, 2, 3], a);
  assert.throws(
    () =>
      forwardBatch(model, [
        { tokens: [4], cache: a },
        { tokens: [1, 2], cache: a },
      ]),
    /share one cache/,
  );
  assert.throws(
    () =>
      forwardBatch(model, [
        { tokens: [4], cache: a },
        { tokens: [9999], cache: b },
      ]),
    /outside/,
  );
  assert.equal(a.length, 3);
  assert.equal(b.length, 0);
  a.dispose();
  b.dispose();
});

test('forwardBatch with allLogits gives each sequence every position, and observe sees the stacked rows', () => {
  const model = modelFromLoaded(tinyModel('llama'));
  const rng = new Prng(8);
  const vocab = model.nVocab;
  const steps = [tokens(rng, 3, vocab), tokens(rng, 1, vocab), tokens(rng, 5, vocab)];
  const solo = steps.map((t) => {
    const c = model.createCache({ policy: POLICY, capacity: 32 });
    return { c, logits: model.forward(t, c, { allLogits: true }) };
  });
  const caches = steps.map(() => model.createCache({ policy: POLICY, capacity: 32 }));
  const seen: number[] = [];
  const got = forwardBatch(
    model,
    steps.map((t, i) => ({ tokens: t, cache: caches[i]! })),
    {
      allLogits: true,
      observe: (l, q, k) => {
        if (l === 0) seen.push(q.length / (model.hp.nHead * model.hp.headDim), k.length / (model.hp.nHeadKv * model.hp.headDim));
      },
    },
  );
  assert.deepEqual(seen, [9, 9]);
  got.forEach((g, i) => {
    assert.equal(g.length, steps[i]!.length * vocab);
    const d = relL2(g, solo[i]!.logits);
    assert.ok(d < 1e-4, `sequence ${i}: all-position logits differ by ${d}`);
  });
  for (const c of [...caches, ...solo.map((s) => s.c)]) c.dispose();
});
