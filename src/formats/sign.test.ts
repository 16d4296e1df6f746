import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sign_g32, sign_g8, sign_g4 } from './sign.js';
import { bitsPerValue } from './format.js';
import { roundFp16 } from '../numeric/half.js';
import { Prng } from '../numeric/prng.js';

test('sign sizes: f16 scale per group + 4 bit bytes: g32 6 B (1.5), g8 12 B (3), g4 20 B (5)', () => {
  assert.deepEqual(
    [sign_g32, sign_g8, sign_g4].map((f) => [f.blockBytes, bitsPerValue(f)]),
    [
      [6, 1.5],
      [12, 3],
      [20, 5],
    ],
  );
});

test('sign bit j&7 of byte j>>3 marks element j negative; scale = mean |x| of its group', () => {
  const rng = new Prng(2);
  const x = rng.normals(32);
  const block = new Uint8Array(12);
  sign_g8.encodeBlock(x, 0, block, 0);
  for (let j = 0; j < 32; j++) assert.equal((block[8 + (j >> 3)]! >> (j & 7)) & 1, x[j]! < 0 ? 1 : 0);
  const out = new Float32Array(32);
  sign_g8.decodeBlock(block, 0, out, 0);
  for (let k = 0; k < 4; k++) {
    const s = roundFp16(x.subarray(8 * k, 8 * k + 8).reduce((a, v) => a + Math.abs(v), 0) / 8);
    for (let j = 8 * k; j < 8 * k + 8; j++) assert.equal(out[j], Math.fround(x[j]! < 0 ? -s : s));
  }
});

test('sign scale is L2-optimal: moving it either way raises the squared error', () => {
  const rng = new Prng(6);
  const x = rng.normals(32);
  const block = new Uint8Array(6);
  sign_g32.encodeBlock(x, 0, block, 0);
  const out = new Float32Array(32);
  sign_g32.decodeBlock(block, 0, out, 0);
  const s = Math.abs(out[0]!);
  const err = (t: number) => x.reduce((e, v) => e + (Math.abs(v) - t) ** 2, 0);
  assert.ok(err(s) < err(s * 1.01) && err(s) < err(s * 0.99));
});
