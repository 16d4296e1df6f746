import { test } from 'node:test';
import assert from 'node:assert/strict';
import { q2c_0 } from './q2c_0.js';
import { bitsPerValue } from './format.js';
import { codeAt } from './packbits.js';
import { roundFp16 } from '../numeric/half.js';
import { Prng } from '../numeric/prng.js';

const fr = Math.fround;

function encodeOne(values: number[]): Uint8Array {
  const out = new Uint8Array(q2c_0.blockBytes);
  q2c_0.encodeBlock(Float32Array.from(values), 0, out, 0);
  return out;
}

test('q2c_0 is 10 bytes per 32 tokens of one channel: 2.5 bits/value', () => {
  assert.equal(q2c_0.axis, 'channel');
  assert.equal(q2c_0.blockBytes, 10);
  assert.equal(bitsPerValue(q2c_0), 2.5);
});

test('q2c_0 packs element j in byte j>>2 at bits 2*(j&3), codes 0..3 = -1.51, -0.45, +0.45, +1.51', () => {
  // One outlier among zeros: rms = 10/sqrt(32) ~ 1.77, so the outlier is code 3 (or 0) and zeros are code 2.
  for (const [j, v, byte, expect] of [
    [0, 10, 0, 0b10_10_10_11],
    [13, 10, 3, 0b10_10_11_10],
    [6, -10, 1, 0b10_00_10_10],
    [31, -10, 7, 0b00_10_10_10],
  ] as const) {
    const x = new Array<number>(32).fill(0);
    x[j] = v;
    const out = encodeOne(x);
    assert.equal(out[2 + byte], expect, `outlier at ${j}`);
    for (let b = 0; b < 8; b++) if (b !== byte) assert.equal(out[2 + b], 0b10101010);
    assert.equal(codeAt(out, 2, j, 2), v > 0 ? 3 : 0);
  }
});

test('q2c_0 decodes hand-written bytes to level * d', () => {
  const block = new Uint8Array(10);
  block[0] = 0x00;
  block[1] = 0x40; // f16 2.0
  block[2] = 0b00_01_10_11; // elements 0..3: codes 3, 2, 1, 0
  const out = new Float32Array(32);
  q2c_0.decodeBlock(block, 0, out, 0);
  assert.deepEqual([...out.subarray(0, 4)], [fr(1.5104) * 2, fr(0.4528) * 2, -fr(0.4528) * 2, -fr(1.5104) * 2].map(fr));
  assert.ok(out.subarray(4).every((v) => v === -fr(fr(1.5104) * 2)));
});

test('q2c_0 constant block: rms = |c|, every value decodes to sign(c) * 1.5104 * f16(|c|)', () => {
  for (const c of [0.3, -2.75, 1000.1, 1e-3]) {
    const out = new Float32Array(32);
    q2c_0.decodeBlock(encodeOne(new Array(32).fill(c)), 0, out, 0);
    const want = fr(Math.sign(c) * fr(1.5104) * roundFp16(Math.abs(fr(c))));
    assert.ok(
      out.every((v) => v === want),
      `c=${c}: ${out[0]} vs ${want}`,
    );
  }
});

test('q2c_0 error is within the codebook half-cell (0.5288 d) for Gaussian blocks without far tails', () => {
  const rng = new Prng(3);
  for (let it = 0; it < 200; it++) {
    const x = rng.normals(32, 0.1 + it);
    const out = new Float32Array(32);
    q2c_0.decodeBlock(encodeOne([...x]), 0, out, 0);
    const rms = Math.sqrt(x.reduce((s, v) => s + v * v, 0) / 32);
    const d = roundFp16(rms);
    const bound = q2c_0.errorBound!(x, 0);
    for (let j = 0; j < 32; j++) {
      const err = Math.abs(out[j]! - x[j]!);
      assert.ok(err <= bound, `block ${it} elem ${j}: ${err} > ${bound}`);
      if (Math.abs(x[j]!) <= 1.5104 * d) assert.ok(err <= 0.5289 * d);
    }
  }
});
