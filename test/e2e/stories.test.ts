// End-to-end on stories260K (llama2.c): the engine's greedy decode from BOS equals an independent float64
// llama2.c loop; the .gguf conversion decodes the same; a q8_0 cache stays close in KL.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { fromRoot } from '../paths.js';
import { loadModel, type Model } from '../../src/model/model.js';
import { argmax, softmax } from '../../src/model/sampler.js';
import { generate, teacherForcedLogits } from '../../src/model/generate.js';
import type { CachePolicy } from '../../src/cache/policy.js';
import { naiveGreedy, readNaive } from './naive-llama2c.js';

const BIN = fromRoot('..', 'shared', 'models', 'stories260K.bin');
const GGUF = fromRoot('..', 'shared', 'models', 'stories260K.gguf');
const STEPS = 128;
const F32: CachePolicy = { k: 'f32', v: 'f32', exact: 'f32' };
/** Mean KL(f32 cache || q8_0 cache) over the sequence: measured 1.29e-3 nats on the canonical checkpoint (8-dim heads packed 4 per block, every position packed). */
const Q8_KL_MAX = 1e-2;

function greedy(model: Model, policy: CachePolicy): number[] {
  const cache = model.createCache({ policy, capacity: STEPS + 1 });
  // eos: [] so the run always has STEPS tokens, like the naive loop.
  const r = generate(model, cache, [1], { maxTokens: STEPS, sampler: { temperature: 0 }, eos: [] });
  cache.dispose();
  return [1, ...r.tokens];
}

test('stories260K.bin: greedy from BOS equals a naive float64 llama2.c over 128 tokens', (t) => {
  if (!existsSync(BIN)) return void t.skip(`${BIN} not present`);
  const ours = greedy(loadModel(BIN), F32);
  const naive = naiveGreedy(readNaive(BIN), 1, STEPS);
  assert.deepEqual(ours, naive);
});

test('stories260K.bin: an f32 cache with the default regions (llama.cpp -ctk f32 -ctv f32) is the f32 result', (t) => {
  if (!existsSync(BIN)) return void t.skip(`${BIN} not present`);
  // No window or sinks over an exact bulk, so nothing reads these positions less exactly than f32.
  const model = loadModel(BIN);
  const cache = model.createCache({ policy: { k: 'f32', v: 'f32' }, capacity: STEPS + 1 });
  const plain = model.createCache({ policy: F32, capacity: STEPS + 1 });
  const tokens = naiveGreedy(readNaive(BIN), 1, STEPS);
  const a = teacherForcedLogits(model, tokens, cache);
  const b = teacherForcedLogits(model, tokens, plain);
  assert.deepEqual(a, b);
  assert.equal(cache.nbytes().window + cache.nbytes().sinks, 0);
  cache.dispose();
  plain.dispose();
});

test('stories260K.gguf decodes the same tokens as the .bin', (t) => {
  if (!existsSync(BIN) || !existsSync(GGUF)) return void t.skip('stories260K.bin/.gguf not present');
  assert.deepEqual(greedy(loadModel(GGUF), F32), greedy(loadModel(BIN), F32));
});

test('stories260K: prefill in one batch gives the same logits as decode step by step', (t) => {
  if (!existsSync(BIN)) return void t.skip(`${BIN} not present`);
  const model = loadModel(BIN);
  const seq = naiveGreedy(readNaive(BIN), 1, 48);
  const batch = teacherForcedLogits(model, seq, model.createCache({ policy: F32, capacity: 128 }));
  const cache = model.createCache({ policy: F32, capacity: 128 });
  seq.forEach((tok, i) => {
    const one = model.forward([tok], cache);
    for (let j = 0; j < one.length; j++) assert.ok(Math.abs(one[j]! - batch[i]![j]!) < 1e-4, `position ${i} logit ${j}`);
    // Row i predicts token i + 1 of the greedy sequence.
    if (i + 1 < seq.length) assert.equal(argmax(batch[i]!), seq[i + 1]);
  });
});

test('stories260K: a q8_0 cache keeps the logits close (mean KL)', (t) => {
  if (!existsSync(BIN)) return void t.skip(`${BIN} not present`);
  const model = loadModel(BIN);
  const seq = greedy(model, F32);
  const ref = teacherForcedLogits(model, seq, model.createCache({ policy: F32, capacity: STEPS + 1 }));
  // window 0: every position goes through the packed q8_0 bulk, none stays exact.
  const q8 = teacherForcedLogits(model, seq, model.createCache({ policy: { k: 'q8_0', v: 'q8_0', window: 0, sinks: 0 }, capacity: STEPS + 1 }));
  let kl = 0;
  let agree = 0;
  for (let i = 0; i < ref.length; i++) {
    const p = softmax([...ref[i]!]);
    const q = softmax([...q8[i]!]);
    for (let j = 0; j < p.length; j++) if (p[j]! > 0) kl += p[j]! * Math.log(p[j]! / q[j]!);
    if (argmax(ref[i]!) === argmax(q8[i]!)) agree++;
  }
  const klMean = kl / ref.length;
  t.diagnostic(`q8_0 cache vs f32: klMean ${klMean.toExponential(3)} nats, top1Agree ${agree}/${ref.length}`);
  assert.ok(klMean < Q8_KL_MAX, `klMean ${klMean}`);
  assert.ok(klMean > 0, 'a q8_0 cache that changes nothing means the cache was not used');
});
