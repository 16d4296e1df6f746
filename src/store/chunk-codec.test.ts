import test from 'node:test';
import assert from 'node:assert/strict';
import { decodeChunk, encodeChunk } from './chunk-codec.js';
import { FileFormatError } from '../errors.js';

const bytes = (n: number, seed: number) => Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) & 255);
const layers = [
  [bytes(96, 1), bytes(96, 2), bytes(0, 0), bytes(8, 3)],
  [bytes(33, 4), bytes(1, 5), bytes(0, 0), bytes(0, 0)],
];

test('chunk codec round-trips per-layer parts (empty parts and odd lengths included)', () => {
  const back = decodeChunk(encodeChunk(layers));
  assert.deepEqual(
    back.map((l) => l.map((p) => [...p])),
    layers.map((l) => l.map((p) => [...p])),
  );
  assert.deepEqual(decodeChunk(encodeChunk([])), []);
});

test('malformed chunks: a typed error, never parts', () => {
  const good = encodeChunk(layers);
  const bad = (b: Uint8Array, re: RegExp) =>
    assert.throws(
      () => decodeChunk(b),
      (e: unknown) => e instanceof FileFormatError && re.test(e.message),
    );
  bad(good.subarray(0, 5), /truncated/);
  bad(Buffer.concat([Buffer.from('NOPE'), good.subarray(4)]), /magic/);
  for (const n of [good.length - 1, 20, 12]) bad(good.subarray(0, n), /truncated|lengths add up/);
  bad(Buffer.concat([good, Buffer.alloc(3)]), /lengths add up/);
  const v = Buffer.from(good);
  v.writeUInt16LE(9, 4);
  bad(v, /version 9/);
  const huge = Buffer.from(good);
  huge.writeUInt32LE(0xffffffff, 8);
  bad(huge, /layers exceed/);
  const len = Buffer.from(good);
  len.writeUInt32LE(0xfffffff0, 12);
  bad(len, /lengths add up/);
  assert.throws(() => encodeChunk([[bytes(1, 0)], []]), /layer 1 has 0 parts/);
});
