import { test } from 'node:test';
import assert from 'node:assert/strict';
import { nf4, NF4_LEVELS } from './nf4.js';
import { bitsPerValue } from './format.js';
import { codeAt } from './packbits.js';
import { normalQuantile } from '../../test/numeric/gaussian.js';
import { Prng } from '../numeric/prng.js';

const fr = Math.fround;

test('nf4 is 34 bytes per 64 values: 4.25 bits/value', () => {
  assert.equal(nf4.blockBytes, 34);
  assert.equal(bitsPerValue(nf4), 4.25);
});

test('NF4_LEVELS re-derive from QLoRA construction: N(0,1) quantiles normalized to [-1, 1]', () => {
  // bitsandbytes' create_normal_map: offset = 1 - (1/30 + 1/32)/2; 8 positive quantiles on
  // linspace(offset, 1/2, 9) and 7 negative on linspace(offset, 1/2, 8), last point dropped, plus 0.
  const offset = 1 - (1 / 30 + 1 / 32) / 2;
  const lin = (n: number) => Array.from({ length: n - 1 }, (_, i) => offset + ((0.5 - offset) * i) / (n - 1));
  const pos = lin(9).map(normalQuantile);
  const neg = lin(8).map((p) => -normalQuantile(p));
  const all = [...pos, 0, ...neg].sort((a, b) => a - b);
  const max = Math.max(...all);
  all.forEach((v, i) => assert.ok(Math.abs(v / max - NF4_LEVELS[i]!) < 1e-6, `level ${i}: ${v / max}`));
});

test('nf4 is exact on its levels and stores element 2i in the low nibble', () => {
  const d = 0.75; // an f16 value
  const x = new Float32Array(64);
  for (let j = 0; j < 64; j++) x[j] = fr(NF4_LEVELS[(j * 7) % 16]! * d);
  const block = new Uint8Array(34);
  nf4.encodeBlock(x, 0, block, 0);
  assert.equal(block[0]! | (block[1]! << 8), 0x3a00); // f16 0.75
  for (let j = 0; j < 64; j++) assert.equal(codeAt(block, 2, j, 4), (j * 7) % 16);
  assert.equal(block[2], 0 | (7 << 4));
  const out = new Float32Array(64);
  nf4.decodeBlock(block, 0, out, 0);
  assert.deepEqual([...out], [...x]);
});

test('nf4 rounds the absmax scale up, so the largest value is never clipped', () => {
  const x = new Float32Array(64).fill(0.01);
  x[5] = -1.0001; // not an f16 value
  const block = new Uint8Array(34);
  nf4.encodeBlock(x, 0, block, 0);
  const out = new Float32Array(64);
  nf4.decodeBlock(block, 0, out, 0);
  assert.ok(out[5]! <= -1.0001 && out[5]! > -1.0011);
  assert.equal(codeAt(block, 2, 5, 4), 0);
});

test('nf4 error stays within half the widest level gap times the scale', () => {
  const rng = new Prng(11);
  for (let it = 0; it < 100; it++) {
    const x = rng.normals(64, 0.01 * (it + 1));
    const block = new Uint8Array(34);
    nf4.encodeBlock(x, 0, block, 0);
    const out = new Float32Array(64);
    nf4.decodeBlock(block, 0, out, 0);
    const bound = nf4.errorBound!(x, 0);
    const amax = Math.max(...x.map(Math.abs));
    assert.ok(bound < 0.16 * amax * 1.001, 'bound is half the widest gap (0.152) times absmax');
    for (let j = 0; j < 64; j++) assert.ok(Math.abs(out[j]! - x[j]!) <= bound);
  }
});
