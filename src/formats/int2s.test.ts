import { test } from 'node:test';
import assert from 'node:assert/strict';
import { int2s_g8, int2s_g4, int2sSets } from './int2s.js';
import { bitsPerValue } from './format.js';
import { FP16_TABLE } from '../numeric/half.js';
import { Prng } from '../numeric/prng.js';

const log2Fact = (n: number) => Array.from({ length: n }, (_, i) => Math.log2(i + 1)).reduce((a, b) => a + b, 0);

test('int2s sizes count scales, membership and codes: g8 23 B (5.75 bits), g4 33 B (8.25 bits)', () => {
  assert.equal(int2s_g8.blockBytes, 23);
  assert.equal(int2s_g4.blockBytes, 33);
  assert.equal(bitsPerValue(int2s_g8), 5.75);
  assert.equal(bitsPerValue(int2s_g4), 8.25);
});

test('int2s membership field is the minimum whole bytes for an unordered partition into equal sets', () => {
  for (const [f, g] of [
    [int2s_g8, 8],
    [int2s_g4, 4],
  ] as const) {
    const sets = 32 / g;
    // Partitions of 32 labelled positions into `sets` unlabelled sets of g: 32! / (g!^sets * sets!).
    const bits = log2Fact(32) - sets * log2Fact(g) - log2Fact(sets);
    const grp = f.layout.find((x) => x.name === 'grp')!.bytes;
    assert.equal(grp, Math.ceil(bits / 8), `${f.id}: ${bits.toFixed(2)} bits`);
  }
});

test('int2s sets are magnitude runs and survive the membership round trip', () => {
  const rng = new Prng(21);
  for (const [f, g] of [
    [int2s_g8, 8],
    [int2s_g4, 4],
  ] as const) {
    for (let it = 0; it < 50; it++) {
      const x = rng.normals(32);
      const block = new Uint8Array(f.blockBytes);
      f.encodeBlock(x, 0, block, 0);
      const set = int2sSets(g, block);
      const rank = [...x.keys()].sort((a, b) => Math.abs(x[b]!) - Math.abs(x[a]!) || a - b);
      for (let r = 0; r < 32; r++) assert.equal(set[rank[r]!], set[rank[r - (r % g)]!], 'same run, same set');
      // Canonical numbering: set k is first seen at a smaller position than set k+1.
      const first = Array.from({ length: 32 / g }, (_, k) => set.indexOf(k));
      assert.deepEqual(
        first,
        [...first].sort((a, b) => a - b),
      );
    }
  }
});

test('int2s: an outlier widens only its own set; the smallest values keep a fine scale', () => {
  const rng = new Prng(8);
  const x = rng.normals(32, 0.1);
  x[17] = 40;
  for (const [f, g] of [
    [int2s_g8, 8],
    [int2s_g4, 4],
  ] as const) {
    const block = new Uint8Array(f.blockBytes);
    f.encodeBlock(x, 0, block, 0);
    const out = new Float32Array(32);
    f.decodeBlock(block, 0, out, 0);
    const set = int2sSets(g, block);
    const scale = (k: number) => FP16_TABLE[block[2 * k]! | (block[2 * k + 1]! << 8)]!;
    assert.ok(Math.abs(scale(set[17]!) - 40) < 0.04);
    assert.ok(Math.abs(out[17]! - 40) < 0.04, 'the outlier is its set absmax: reproduced to f16');
    for (let j = 0; j < 32; j++) {
      assert.ok(Math.abs(out[j]! - x[j]!) <= scale(set[j]!) / 3 + 1e-6, `element ${j} within its own set's half step`);
      if (set[j] !== set[17]) assert.ok(scale(set[j]!) < 0.5);
    }
  }
});

test('int2s: random membership bytes still decode to a partition into equal sets', () => {
  const rng = new Prng(99);
  for (const [f, g] of [
    [int2s_g8, 8],
    [int2s_g4, 4],
  ] as const) {
    for (let it = 0; it < 200; it++) {
      const block = Uint8Array.from({ length: f.blockBytes }, () => rng.int(256));
      const set = int2sSets(g, block);
      const counts = new Array(32 / g).fill(0);
      set.forEach((k) => counts[k]++);
      assert.ok(counts.every((c) => c === g));
    }
  }
});
