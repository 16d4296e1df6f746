import { test } from 'node:test';
import assert from 'node:assert/strict';
import { halfUp, halfDown, halfNearest, halfValue, F16_MAX } from './scale16.js';
import { packCodes, codeAt } from './packbits.js';

test('halfUp / halfDown bracket x and are adjacent halves', () => {
  for (const x of [0, 1, 1.0001, -1.0001, 0.1, -0.1, 3e-8, -3e-8, 1000.3, -1000.3, 65504, -65504, 65000.5]) {
    const up = halfValue(halfUp(x));
    const down = halfValue(halfDown(x));
    assert.ok(up >= x && down <= x, `x=${x}: ${down} .. ${up}`);
    if (up !== down) assert.ok(halfValue(halfNearest(x)) === up || halfValue(halfNearest(x)) === down);
  }
  assert.equal(halfValue(halfUp(1)), 1);
  assert.equal(halfValue(halfUp(1.0001)), 1 + 2 ** -10);
  assert.equal(halfValue(halfDown(-1.0001)), -(1 + 2 ** -10));
});

test('half scales saturate at 65504 instead of Inf', () => {
  assert.equal(halfValue(halfNearest(1e9)), F16_MAX);
  assert.equal(halfValue(halfUp(70000)), F16_MAX);
  assert.equal(halfValue(halfDown(-1e9)), -F16_MAX);
});

test('packCodes puts element j at byte (j*k)>>3, bit (j*k)&7', () => {
  const codes = [3, 0, 1, 2, 2, 1, 0, 3];
  const out = new Uint8Array(2);
  packCodes(codes, 8, 2, out, 0);
  assert.deepEqual([...out], [0b10_01_00_11, 0b11_00_01_10]);
  codes.forEach((c, j) => assert.equal(codeAt(out, 0, j, 2), c));
  const nib = new Uint8Array(1);
  packCodes([0xa, 0x5], 2, 4, nib, 0);
  assert.equal(nib[0], 0x5a);
});
