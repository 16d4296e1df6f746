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
