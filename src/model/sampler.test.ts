import { test } from 'node:test';
import assert from 'node:assert/strict';
import { argmax, Sampler } from './sampler.js';
import { ArgumentError } from '../errors.js';

const logits = Float32Array.from([1, 3, 2.9, -1, 0.5]);

test('temperature 0 is argmax, first index on ties', () => {
  assert.equal(new Sampler({ temperature: 0 }).sample(logits), 1);
  assert.equal(argmax([2, 5, 5]), 1);
});

test('top-k 1 always picks the top token, whatever the temperature', () => {
  const s = new Sampler({ temperature: 5, topK: 1, seed: 3 });
  for (let i = 0; i < 20; i++) assert.equal(s.sample(logits), 1);
});

test('same seed, same draws; another seed, other draws', () => {
  const draw = (seed: number) => {
    const s = new Sampler({ temperature: 2, topK: 0, topP: 1, minP: 0, seed });
    return Array.from({ length: 40 }, () => s.sample(logits));
  };
  assert.deepEqual(draw(1), draw(1));
  assert.notDeepEqual(draw(1), draw(2));
  assert.ok(new Set(draw(1)).size > 2, 'temperature 2 should reach several tokens');
});

test('min-p and top-p cut the tail', () => {
  const s = new Sampler({ temperature: 1, topK: 0, topP: 1, minP: 0.5, seed: 9 });
  for (let i = 0; i < 50; i++) assert.ok([1, 2].includes(s.sample(logits)));
  const p = new Sampler({ temperature: 1, topK: 0, topP: 0.3, minP: 0, seed: 9 });
  for (let i = 0; i < 50; i++) assert.equal(p.sample(logits), 1);
});

test('repetition penalty moves greedy off a seen token', () => {
  const s = new Sampler({ temperature: 0, repeatPenalty: 1.5 });
  assert.equal(s.sample(logits, [1]), 2);
  assert.equal(s.sample(logits, [4]), 1);
});

test('out-of-range options are ArgumentErrors', () => {
  assert.throws(() => new Sampler({ topP: 1.5 }), ArgumentError);
  assert.throws(() => new Sampler({ temperature: -1 }), ArgumentError);
});

test('topIds: the k best of a full sort (ties by lower id), any k, NaN-free random and tied logits', async () => {
  const { topIds } = await import('./sampler.js');
  const { Prng } = await import('../numeric/prng.js');
  const rng = new Prng(3);
  for (const n of [1, 7, 64, 513]) {
    for (const tied of [false, true]) {
      const z = Float32Array.from({ length: n }, () => (tied ? Math.floor(rng.next() * 4) : rng.next() * 10 - 5));
      const full = Array.from({ length: n }, (_, i) => i).sort((a, b) => z[b]! - z[a]! || a - b);
      for (const k of [1, 2, 5, 40, n - 1, n].filter((k) => k >= 1 && k <= n)) assert.deepEqual(topIds(z, k), full.slice(0, k), `n ${n} k ${k} tied ${tied}`);
    }
  }
});

test('OpenAI penalties count generated tokens only; logit_bias adds to the logit', () => {
  const z = Float32Array.of(1, 0.9, 0);
  const greedy = (o: ConstructorParameters<typeof Sampler>[0], history: number[], generated: number) =>
    new Sampler({ temperature: 0, ...o }).sample(z, history, generated);
  assert.equal(greedy({}, [0, 0], 2), 0);
  // Token 0 generated twice: 1 - 2 x 0.06 = 0.88 < 0.9.
  assert.equal(greedy({ frequencyPenalty: 0.06 }, [0, 0], 2), 1);
  assert.equal(greedy({ frequencyPenalty: 0.06 }, [0, 0], 1), 0, 'the prompt token does not count');
  assert.equal(greedy({ presencePenalty: 0.11 }, [0], 1), 1);
  assert.equal(greedy({ presencePenalty: 0.09 }, [0, 0, 0], 3), 0, 'presence counts once');
  assert.equal(greedy({ logitBias: new Map([[2, 1.5]]) }, [], 0), 2);
  assert.throws(() => new Sampler({ logitBias: new Map([[1, 101]]) }), ArgumentError);
  // The input logits are never modified.
  assert.deepEqual(Array.from(z), [1, 0.8999999761581421, 0]);
});
