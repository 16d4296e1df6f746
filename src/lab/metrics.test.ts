import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  relL2,
  relRms,
  nmse,
  maxAbs,
  massInWindow,
  klMean,
  top1Agree,
  sameTopP,
  nllMean,
  nllDelta,
  matchedPrefix,
  exactMatch,
  softmax64,
  nucleus,
} from './metrics.js';
import { ShapeError, ArgumentError } from '../errors.js';

const close = (a: number, b: number, tol = 1e-12) => assert.ok(Math.abs(a - b) <= tol, `${a} vs ${b}`);

test('relL2 / nmse / maxAbs on hand-computed values', () => {
  // ref = (3, 4): |ref| = 5; test - ref = (0, -1)... -> relL2 = 1/5.
  close(relL2([3, 3], [3, 4]), 0.2);
  close(relRms([3, 3], [3, 4]), 0.2);
  close(nmse([3, 3], [3, 4]), 0.04);
  close(maxAbs([3, 3, 7], [3, 4, 5]), 2);
  assert.equal(relL2([0, 0], [0, 0]), 0);
  assert.equal(relL2([1, 0], [0, 0]), Infinity);
  assert.throws(() => relL2([1], [1, 2]), ShapeError);
});

test('massInWindow: last R positions, R=0 is empty (not the whole array)', () => {
  const w = [1, 1, 2, 4]; // total 8
  close(massInWindow(w, 0), 0);
  close(massInWindow(w, 1), 0.5);
  close(massInWindow(w, 2), 0.75);
  close(massInWindow(w, 4), 1);
  assert.throws(() => massInWindow(w, 5), ArgumentError);
});

test('softmax64 is stable for huge logits', () => {
  const p = softmax64([1000, 1000 + Math.log(3)]);
  close(p[0]!, 0.25);
  close(p[1]!, 0.75);
});

test('klMean: 0 for identical rows, hand value for two tokens', () => {
  const ref = { logits: [0, 0], vocab: 2 }; // p = (1/2, 1/2)
  const test = { logits: [0, Math.log(3)], vocab: 2 }; // q = (1/4, 3/4)
  // KL = 1/2 ln(2) + 1/2 ln(2/3)
  close(klMean(ref, test), 0.5 * Math.log(0.5 / 0.25) + 0.5 * Math.log(0.5 / 0.75));
  close(klMean(ref, ref), 0);
  // Mean over two positions: (KL + 0) / 2.
  const two = { logits: [0, 0, 5, 1], vocab: 2 };
  const twoT = { logits: [0, Math.log(3), 5, 1], vocab: 2 };
  close(klMean(two, twoT), (0.5 * Math.log(2) + 0.5 * Math.log(2 / 3)) / 2);
  // Shift invariance: adding a constant to a row changes nothing; huge logits stay finite.
  close(klMean({ logits: [1e4, 1e4], vocab: 2 }, { logits: [-50, -50 + Math.log(3)], vocab: 2 }), 0.5 * Math.log(2) + 0.5 * Math.log(2 / 3));
});

test('top1Agree and sameTopP', () => {
  const ref = { logits: [3, 2, 1, /**/ 0, 5, 1], vocab: 3 };
  const test = { logits: [3, 2.5, 1, /**/ 5, 0, 1], vocab: 3 };
  close(top1Agree(ref, test), 0.5);
  // Position 0: ref probs (.665,.245,.090) -> p=0.5 nucleus {0}; test (.586,.355,.059) -> {0}. Position 1 differs.
  assert.deepEqual(nucleus(ref.logits, 0, 3, 0.5), [0]);
  close(sameTopP(ref, test, 0.5), 0.5);
  // At p = 0.9 position 0: ref needs {0,1} (.910), test needs {0,1} (.941) -> same.
  assert.deepEqual(nucleus(ref.logits, 0, 3, 0.9), [0, 1]);
  close(sameTopP(ref, test, 0.9), 0.5);
});

test('nllMean and perplexity delta', () => {
  const ref = { logits: [0, 0], vocab: 2 }; // p(target) = 1/2
  const test = { logits: [0, Math.log(3)], vocab: 2 }; // p(target 0) = 1/4
  close(nllMean(ref, [0]), Math.log(2));
  const d = nllDelta(ref, test, [0]);
  close(d.nllDelta, Math.log(4) - Math.log(2));
  close(d.pplRef, 2);
  close(d.pplTest, 4);
  close(d.pplDelta, 2);
  assert.throws(() => nllMean(ref, [2]), ArgumentError);
});

test('exact match of greedy continuations at horizons', () => {
  assert.equal(matchedPrefix([1, 2, 3], [1, 2, 4]), 2);
  const ref = [
    [1, 2, 3, 4],
    [5, 6, 7, 8],
    [9, 9],
  ];
  const got = [
    [1, 2, 3, 4],
    [5, 6, 0, 8],
    [9, 9],
  ];
  const m = exactMatch(ref, got, [2, 4]);
  assert.deepEqual(m.prefix, [4, 2, 2]);
  close(m.prefixMean, 8 / 3);
  close(m.fullAt[2]!, 1);
  // Horizon 4: the second diverges at 2; the third is shorter than 4 but equals its whole reference.
  close(m.fullAt[4]!, 2 / 3);
});
