import { test } from 'node:test';
import assert from 'node:assert/strict';
import { affineFormats, int4_g32, int4c_g32, int2_g32 } from './affine.js';
import { bitsPerValue, bytesFor } from './format.js';
import { codeAt } from './packbits.js';
import { Prng } from '../numeric/prng.js';
import { FP16_TABLE } from '../numeric/half.js';

const fr = Math.fround;

test('affine sizes: f16 scale + f16 min + packed codes', () => {
  const want: Record<string, [number, number]> = {
    int4_g32: [20, 5],
    int4_g64: [36, 4.5],
    int4_g128: [68, 4.25],
    int2_g32: [12, 3],
    int2_g64: [20, 2.5],
    int2_g128: [36, 2.25],
    int4c_g32: [20, 5],
    int2c_g32: [12, 3],
  };
  assert.deepEqual(affineFormats.map((f) => f.id).sort(), Object.keys(want).sort());
  for (const f of affineFormats) {
    assert.equal(f.blockBytes, want[f.id]![0], f.id);
    assert.equal(bitsPerValue(f), want[f.id]![1], f.id);
    assert.equal(f.axis, f.id.includes('c_') ? 'channel' : 'token');
  }
});

test("seed 003's byte audit: K int4 per channel + V int4 per token, group 32, float32 residual window", () => {
  // N = 128 tokens, 32 dims (full float32 K+V = 32,768 B); seed totals also hold 16 B of array shapes.
  const dims = 32;
  const SHAPES = 16;
  const payload = (R: number) => bytesFor(int4c_g32, 128 - R, dims) + bytesFor(int4_g32, 128 - R, dims) + R * dims * 4 * 2 + SHAPES;
  assert.equal(2 * 128 * dims * 4, 32768);
  assert.equal(payload(0), 5136);
  assert.equal(payload(16), 8912); // 112 tokens: K pads to 4 groups of 32, V does not pad
  assert.equal(payload(64), 18960);
});

test('affine packs codes low bits first and decodes min + code * scale', () => {
  // Values on the grid 0.5 + k * 0.25 (f16-exact) come back exactly, with code k at element j.
  const x = new Float32Array(32);
  for (let j = 0; j < 32; j++) x[j] = 0.5 + ((j * 5) % 16) * 0.25;
  x[0] = 0.5;
  x[1] = 0.5 + 15 * 0.25;
  const block = new Uint8Array(20);
  int4_g32.encodeBlock(x, 0, block, 0);
  assert.equal(block[0]! | (block[1]! << 8), 0x3400); // scale 0.25
  assert.equal(block[2]! | (block[3]! << 8), 0x3800); // min 0.5
  assert.equal(block[4], 0 | (15 << 4)); // element 0 low nibble, element 1 high nibble
  for (let j = 2; j < 32; j++) assert.equal(codeAt(block, 4, j, 4), (j * 5) % 16);
  const out = new Float32Array(32);
  int4_g32.decodeBlock(block, 0, out, 0);
  assert.deepEqual([...out], [...x]);

  const y = new Float32Array(32).fill(-1);
  y[5] = 2; // int2: scale = 1, element 5 = code 3 in byte 1 at bits 2
  const b2 = new Uint8Array(12);
  int2_g32.encodeBlock(y, 0, b2, 0);
  assert.equal(b2[4 + 1], 3 << 2);
});

test('affine error is within half a step; a constant block decodes within its f16 spacing', () => {
  const rng = new Prng(5);
  for (const f of affineFormats) {
    for (let it = 0; it < 40; it++) {
      const x = rng.normals(f.blockValues, 0.001 * 10 ** (it % 6));
      if (it % 3 === 0) x[it % f.blockValues] = 50 * (x[0]! + 0.1); // an outlier stretches the range
      const block = new Uint8Array(f.blockBytes);
      f.encodeBlock(x, 0, block, 0);
      const out = new Float32Array(f.blockValues);
      f.decodeBlock(block, 0, out, 0);
      const bound = f.errorBound!(x, 0);
      const step = FP16_TABLE[block[0]! | (block[1]! << 8)]!;
      assert.ok(bound <= step / 2 + 1e-6 * Math.max(...x.map(Math.abs)), `${f.id}: bound is half a step`);
      for (let j = 0; j < f.blockValues; j++) assert.ok(Math.abs(out[j]! - x[j]!) <= bound, `${f.id} ${it} ${j}`);
    }
  }
  const c = new Float32Array(32).fill(fr(1000.3));
  const block = new Uint8Array(20);
  int4_g32.encodeBlock(c, 0, block, 0);
  const out = new Float32Array(32);
  int4_g32.decodeBlock(block, 0, out, 0);
  assert.ok(out.every((v) => Math.abs(v - c[0]!) <= int4_g32.errorBound!(c, 0)));
  assert.ok(int4_g32.errorBound!(c, 0) < 0.02, 'min rounds down, scale covers the remainder finely');
});
