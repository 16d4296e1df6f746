// Exact resume points: a prefill resumed there from another cache's exported chunks computes bit for bit
// what a cold prefill computes; resumed anywhere else (the naive whole-chunk match) it does not.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KvCache } from '../cache/kvcache.js';
import type { CachePolicy } from '../cache/policy.js';
import { modelFromLoaded, type Model } from '../model/model.js';
import { exportChunk, importChunks } from '../store/cache-chunks.js';
import { tinyModel } from '../../test/e2e/tiny-models.js';
import { exactResumePoint, isExactResume, type ResumeRule } from './exact-resume.js';

const model: Model = modelFromLoaded(tinyModel('qwen2'));
const RULE: ResumeRule = { chunkTokens: 32, prefillChunk: 64, window: 16, overlay: true };
const POLICIES: CachePolicy[] = [
  { k: 'q4_0', v: 'q4_0', window: 16, sinks: 2 },
  // Channel-axis K: groups of 32 tokens wait in exact staging until complete.
  { k: 'q2c_0', v: 'q4_0', window: 16, sinks: 2 },
];
const seq = (n: number, seed: number) => Array.from({ length: n }, (_, i) => (i * 7 + seed * 13 + ((i * i) % 11)) % model.nVocab);

const newCache = (policy: CachePolicy) => model.createCache({ policy, capacity: 256, chunkTokens: RULE.chunkTokens });

/** Feeds tokens[from..] in the server's batches of U from `from`; the last logits. */
function prefill(cache: KvCache, tokens: number[], from: number): Float32Array {
  let out: Float32Array | undefined;
  for (let s = from; s < tokens.length; s += RULE.prefillChunk) out = model.forward(tokens.slice(s, s + RULE.prefillChunk), cache);
  return out!;
}

/** A cache holding chunks [0, keep/C) of `src`, as a remote hit builds it. */
function imported(src: KvCache, keep: number): KvCache {
  const c = newCache(src.policy);
  importChunks(c, Array.from({ length: keep / RULE.chunkTokens }, (_, i) => exportChunk(src, i)));
  return c;
}

test('the rule: multiples of lcm(C, U), within the exact positions, leaving the window to compute; none when U < W', () => {
  assert.equal(exactResumePoint(RULE, 192, 200), 128);
  assert.equal(exactResumePoint(RULE, 192, 208), 192);
  assert.equal(exactResumePoint(RULE, 100, 300), 64);
  assert.equal(exactResumePoint(RULE, 60, 300), 0);
  assert.equal(exactResumePoint({ chunkTokens: 256, prefillChunk: 96, window: 64, overlay: true }, 4096, 5000), 3840);
  assert.equal(exactResumePoint({ ...RULE, window: 128 }, 192, 400), 0);
  assert.equal(exactResumePoint({ ...RULE, overlay: false }, 192, 400), 0);
  assert.ok(isExactResume(RULE, 0, 0, 10));
  assert.ok(isExactResume(RULE, 128, 192, 200));
  assert.ok(!isExactResume(RULE, 96, 192, 200));
  assert.ok(!isExactResume(RULE, 128, 100, 200));
});

for (const policy of POLICIES) test(`${policy.k}/${policy.v}: a prefill resumed at the exact point from another cache's chunks equals a cold prefill bit for bit; at the whole match it does not`, () => {
  const shared = seq(150, 1);
  const a = [...shared, ...seq(40, 2)];
  const b = [...shared, ...seq(30, 3)];
  // Instance A's cold prefill: its full batches [0, 64), [64, 128) are exact.
  const ca = newCache(policy);
  prefill(ca, a, 0);
  const exactA = Math.floor(a.length / RULE.prefillChunk) * RULE.prefillChunk;
  const cold = newCache(policy);
  const want = prefill(cold, b, 0);
  const matched = Math.floor(shared.length / RULE.chunkTokens) * RULE.chunkTokens;
  const keep = exactResumePoint(RULE, Math.min(matched, exactA), b.length);
  assert.deepEqual([matched, keep], [128, 128]);
  const hit = imported(ca, keep);
  assert.deepEqual(Array.from(prefill(hit, b, keep)), Array.from(want), 'exact resume: the same logits as a cold prefill');
  // Negative control: resuming at the 96-position match (not on a batch boundary) reads other rows packed.
  const naive = imported(ca, 96);
  const got = prefill(naive, b, 96);
  const diff = got.reduce((d, x, i) => Math.max(d, Math.abs(x - want[i]!)), 0);
  assert.ok(diff > 1e-4, `a naive resume changes the logits (max diff ${diff})`);
  // And a resume on a boundary but with less than the window left reads the missing exact rows packed.
  const shortB = b.slice(0, 128 + 8);
  const coldShort = newCache(policy);
  const wantShort = prefill(coldShort, shortB, 0);
  assert.equal(exactResumePoint(RULE, 128, shortB.length), 64);
  const tooLate = imported(ca, 128);
  const gotShort = prefill(tooLate, shortB, 128);
  assert.ok(gotShort.some((x, i) => x !== wantShort[i]), 'a resume leaving less than the window differs');
  const ok = imported(ca, 64);
  assert.deepEqual(Array.from(prefill(ok, shortB, 64)), Array.from(wantShort));
  for (const c of [ca, cold, hit, naive, coldShort, tooLate, ok]) c.dispose();
});
