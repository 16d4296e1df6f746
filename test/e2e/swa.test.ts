// gemma3's sliding-window layers keep only their window: the engine builds such a cache by itself, and
// prefill plus a long decode (across many chunk boundaries) gives bit-identical logits to a cache that
// keeps every position, since the dropped positions were masked anyway. Memory drops as the accounting says.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { kvBytes } from '../../src/cache/accounting.js';
import type { CachePolicy } from '../../src/cache/policy.js';
import { schemePolicy } from '../../src/cache/schemes.js';
import { EvictedError, PolicyError } from '../../src/errors.js';
import { generate } from '../../src/model/generate.js';
import { layerWindows, modelFromLoaded } from '../../src/model/model.js';
import { TINY, TINY_SLIDING_WINDOW, tinyModel } from './tiny-models.js';

const CHUNK = 32;
const PROMPT = 70;
const DECODE = 200;
const model = modelFromLoaded(tinyModel('gemma3'));
const prompt = Array.from({ length: PROMPT }, (_, i) => (i * 29 + 3) % TINY.vocab);
const forced = Array.from({ length: DECODE }, (_, i) => (i * 17 + 1) % TINY.vocab);

const POLICIES: [string, CachePolicy][] = [
  ['f32', { k: 'f32', v: 'f32', exact: 'f32', window: 0, sinks: 0 }],
  ['q4_0 + window 8 + sinks 4', schemePolicy('q4_0', { window: 8, sinks: 4 })],
  ['q2k residual + anchors', schemePolicy('q2k', { window: 4, sinks: 2, windowMode: 'residual', anchors: { count: 16, precision: 'f16' } })],
];

for (const [name, policy] of POLICIES) {
  test(`gemma3 ${name}: eviction gives the same logits as keeping every position, and holds less`, () => {
    const swa = model.createCache({ policy, capacity: 400, chunkTokens: CHUNK });
    const all = model.createCache({ policy: { ...policy, slidingWindow: 0 }, capacity: 400, chunkTokens: CHUNK });
    assert.deepEqual(
      swa.plans.map((p) => p.slidingWindow),
      layerWindows(model.hp),
    );
    assert.ok(all.plans.every((p) => p.slidingWindow === 0));
    // Prefill in two batches (the second starts past the window), then decode one token at a time.
    for (const [a, b] of [
      [0, 40],
      [40, PROMPT],
    ] as const)
      assert.deepEqual(model.forward(prompt.slice(a, b), swa), model.forward(prompt.slice(a, b), all));
    swa.beginDecode();
    all.beginDecode();
    for (const [i, t] of forced.entries()) assert.deepEqual(model.forward([t], swa), model.forward([t], all), `${name} decode step ${i}`);
    const n = PROMPT + DECODE;
    for (let l = 0; l < model.hp.nLayer; l++) {
      // Local layers hold what the next query reads, plus at most about a chunk more; the global layer all.
      const first = swa.firstHeld(l);
      if (model.hp.swaLayers[l]) assert.ok(first <= n - TINY_SLIDING_WINDOW + 1 && first > n - TINY_SLIDING_WINDOW - 2 * CHUNK, `layer ${l}: ${first}`);
      else assert.equal(first, 0);
    }
    const got = swa.nbytes();
    const want = kvBytes({
      ctx: n,
      layers: model.hp.nLayer,
      kvHeads: model.hp.nHeadKv,
      headDim: model.hp.headDim,
      policy: swa.policy,
      prompt: PROMPT,
      chunkTokens: CHUNK,
    });
    for (const r of ['sinks', 'anchors', 'bulk', 'window', 'staging', 'total'] as const) assert.equal(got[r], want[r], `${name} ${r}`);
    const full = all.nbytes();
    // Eviction frees bulk chunks; the exact rows (sinks, anchors, window and an open channel group) are the same in both.
    assert.ok(
      got.bulk < full.bulk / 2 && got.total < full.total && got.allocated < full.allocated,
      `${name}: ${got.bulk} B bulk vs ${full.bulk} B, ${got.total} B held vs ${full.total} B, ${got.allocated} B allocated vs ${full.allocated} B`,
    );
    swa.dispose();
    all.dispose();
  });
}

test('gemma3: generate over an evicting cache equals generate over a keep-all cache', () => {
  const policy = schemePolicy('q8_0', { window: 0, sinks: 0 });
  const run = (p: CachePolicy) => {
    const c = model.createCache({ policy: p, capacity: 300, chunkTokens: CHUNK });
    const r = generate(model, c, prompt, { maxTokens: 120, sampler: { temperature: 0 }, eos: [] });
    const held = c.nbytes().total;
    c.dispose();
    return { tokens: r.tokens, held };
  };
  const a = run(policy);
  const b = run({ ...policy, slidingWindow: 0 });
  assert.deepEqual(a.tokens, b.tokens);
  assert.ok(a.held < b.held);
});

test('gemma3: a policy shorter than the model window, or dropping on the global layer, is a PolicyError naming the field', () => {
  const f16: CachePolicy = { k: 'f16', v: 'f16' };
  assert.throws(
    () => model.createCache({ policy: { ...f16, layers: { 2: { slidingWindow: 3 } } } }),
    (e: unknown) => e instanceof PolicyError && /policy\.layers\.2\.slidingWindow/.test(e.message),
  );
  assert.throws(
    () => model.createCache({ policy: { ...f16, slidingWindow: 64 } }),
    (e: unknown) => e instanceof PolicyError && /layer 5, which attends over every position/.test(e.message),
  );
  const roomy = model.createCache({ policy: { ...f16, layers: { 0: { slidingWindow: 64 } } } });
  assert.equal(roomy.plans[0]!.slidingWindow, 64);
  assert.equal(roomy.plans[1]!.slidingWindow, TINY_SLIDING_WINDOW);
  roomy.dispose();
});

test('gemma3: rewinding past the window is an EvictedError; a shallow rewind then re-feed equals never going further', () => {
  const policy = schemePolicy('q4_0', { window: 0, sinks: 0 });
  const c = model.createCache({ policy, capacity: 400, chunkTokens: CHUNK });
  model.forward(prompt, c);
  for (const t of forced.slice(0, 60)) model.forward([t], c);
  assert.throws(() => c.rewind(PROMPT), EvictedError);
  assert.equal(c.length, PROMPT + 60);
  const back = PROMPT + 55;
  assert.ok(c.canRewind(back));
  c.rewind(back);
  const ref = model.createCache({ policy, capacity: 400, chunkTokens: CHUNK });
  model.forward(prompt, ref);
  for (const t of forced.slice(0, 55)) model.forward([t], ref);
  for (const t of forced.slice(100, 110)) assert.deepEqual(model.forward([t], c), model.forward([t], ref));
  c.dispose();
  ref.dispose();
});
