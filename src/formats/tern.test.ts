import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tern_g32, tern_g8, tern_g4, ternScale } from './tern.js';
import { bitsPerValue } from './format.js';
import { Prng } from '../numeric/prng.js';

test('tern sizes: f16 scale per group + 7 trit bytes: g32 9 B (2.25), g8 15 B (3.75), g4 23 B (5.75)', () => {
  assert.deepEqual(
    [tern_g32, tern_g8, tern_g4].map((f) => [f.blockBytes, bitsPerValue(f)]),
    [
      [9, 2.25],
      [15, 3.75],
      [23, 5.75],
    ],
  );
});

test('tern packs trits 5 per byte, element 5i+k as base-3 digit k (code 0 = -s, 1 = 0, 2 = +s)', () => {
  // |x| in {0, 1}: the best support is exactly the ones, so s = 1.
  const pattern = [1, 0, -1, -1, 1, 0, 0, 1, -1, 0];
  const x = Float32Array.from({ length: 32 }, (_, j) => pattern[j % 10]!);
  const block = new Uint8Array(9);
  tern_g32.encodeBlock(x, 0, block, 0);
  assert.equal(block[0]! | (block[1]! << 8), 0x3c00);
  const t = [...x].map((v) => v + 1);
  for (let i = 0; i < 7; i++) {
    const want = [0, 1, 2, 3, 4].reduce((s, k) => s + (5 * i + k < 32 ? t[5 * i + k]! * 3 ** k : 0), 0);
    assert.equal(block[2 + i], want, `byte ${i}`);
  }
  const out = new Float32Array(32);
  tern_g32.decodeBlock(block, 0, out, 0);
  assert.deepEqual([...out], [...x]);
});

test('ternScale minimizes squared error over all scales (checked against a fine scan)', () => {
  const rng = new Prng(4);
  const err = (x: Float32Array, s: number) => x.reduce((e, v) => e + Math.min(v * v, (Math.abs(v) - s) ** 2), 0);
  for (let it = 0; it < 100; it++) {
    const g = [4, 8, 32][it % 3]!;
    const x = rng.normals(g);
    if (it % 4 === 0) x[0] = 6;
    const s = ternScale(x, 0, g);
    const amax = Math.max(...x.map(Math.abs));
    for (let k = 0; k <= 400; k++) assert.ok(err(x, s) <= err(x, (amax * k) / 400) + 1e-12);
  }
});

test('tern decodes bytes >= 243 without throwing, every value in {-s, 0, +s}', () => {
  const block = new Uint8Array(23).fill(255);
  block.fill(0, 0, 16);
  for (let k = 0; k < 8; k++) block[2 * k + 1] = 0x3c; // s = 1
  const out = new Float32Array(32);
  tern_g4.decodeBlock(block, 0, out, 0);
  assert.ok(out.every((v) => v === -1 || v === 0 || v === 1));
  assert.deepEqual([...out.subarray(0, 5)], [-1, 0, 0, -1, -1]); // 255 = 0 + 1*3 + 1*9 + 0*27 + 0*81 + 3*81
});

test('tern groups have independent scales', () => {
  const x = new Float32Array(32).fill(0.01);
  x[0] = 5;
  const block = new Uint8Array(15);
  tern_g8.encodeBlock(x, 0, block, 0);
  const out = new Float32Array(32);
  tern_g8.decodeBlock(block, 0, out, 0);
  assert.ok(Math.abs(out[0]! - 5) < 0.01);
  for (let j = 8; j < 32; j++) assert.ok(Math.abs(out[j]! - 0.01) < 1e-5);
});
