import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Prng } from '../numeric/prng.js';
import { klMean, top1Agree, nllMean } from './metrics.js';
import { digestRows, klDigest, nllDigest, top1Digest, topIds, digestWidth } from './logit-digest.js';

const V = 50,
  rows = 6;
const rng = new Prng(11);
const ref = rng.normals(rows * V, 3);
const test_ = ref.map((x) => x + 0.5 * rng.normal());
const targets = [3, 7, 0, 49, 12, 5];

test('k >= vocab: the digest metrics equal the full-logit metrics', () => {
  const ids = topIds(ref, rows, V, 1000);
  const R = { digest: digestRows(ref, V, ids, targets), k: V };
  const T = { digest: digestRows(test_, V, ids, targets), k: V };
  assert.equal(R.digest.length, rows * digestWidth(V));
  assert.equal(R.digest[V], -Infinity);
  const full = klMean({ logits: ref, vocab: V }, { logits: test_, vocab: V });
  assert.ok(Math.abs(klDigest(R, T) - full) < 1e-5 * full, `${klDigest(R, T)} vs ${full}`);
  assert.equal(top1Digest(R, T), top1Agree({ logits: ref, vocab: V }, { logits: test_, vocab: V }));
  assert.ok(Math.abs(nllDigest(T) - nllMean({ logits: test_, vocab: V }, targets)) < 1e-5);
  assert.equal(klDigest(R, R), 0);
});

test('top-k + tail KL is a lower bound on the full KL, and shrinks as k does', () => {
  const full = klMean({ logits: ref, vocab: V }, { logits: test_, vocab: V });
  let prev = Infinity;
  for (const k of [40, 10, 2]) {
    const ids = topIds(ref, rows, V, k);
    const kl = klDigest({ digest: digestRows(ref, V, ids, targets), k }, { digest: digestRows(test_, V, ids, targets), k });
    assert.ok(kl <= full + 1e-6 && kl <= prev + 1e-6 && kl > 0, `k ${k}: ${kl} vs full ${full}`);
    prev = kl;
  }
});

test('top ids: largest first, ties to the lower id', () => {
  const ids = topIds(new Float32Array([1, 3, 3, 0]), 1, 4, 3);
  assert.deepEqual([...ids[0]!], [1, 2, 0]);
});
