import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeCapture, readCapture, CAPTURE_MAGIC, type Capture } from './capture.js';
import { FileFormatError } from '../errors.js';
import { Prng } from '../numeric/prng.js';

function sample(): Capture {
  const r = new Prng(5);
  const layer = (n: number) => ({
    layer: n,
    tokens: 33,
    heads: 4,
    kvHeads: 2,
    headDim: 8,
    q: r.normals(33 * 4 * 8),
    k: r.normals(2 * 33 * 8),
    v: r.normals(2 * 33 * 8),
  });
  return { meta: { model: 'tiny.gguf', prompt: 'hello' }, layers: [layer(3), layer(11)] };
}

test('capture files round-trip exactly, data 4-byte aligned', () => {
  const c = sample();
  const bytes = writeCapture(c);
  assert.equal(Buffer.from(bytes.subarray(0, 8)).toString('latin1'), CAPTURE_MAGIC);
  assert.equal((12 + new DataView(bytes.buffer).getUint32(8, true)) % 4, 0);
  const back = readCapture(bytes);
  assert.deepEqual(back.meta, c.meta);
  assert.equal(back.layers.length, 2);
  for (let i = 0; i < 2; i++) {
    assert.equal(back.layers[i]!.layer, c.layers[i]!.layer);
    assert.deepEqual(back.layers[i]!.q, c.layers[i]!.q);
    assert.deepEqual(back.layers[i]!.v, c.layers[i]!.v);
  }
});

test('malformed capture files throw FileFormatError', () => {
  const good = writeCapture(sample());
  const wrongMagic = good.slice();
  wrongMagic[0] = 0x58;
  assert.throws(() => readCapture(wrongMagic), FileFormatError);
  assert.throws(() => readCapture(good.subarray(0, good.length - 4)), FileFormatError); // truncated data
  assert.throws(() => readCapture(good.subarray(0, 10)), FileFormatError);
  const hugeHeader = good.slice();
  new DataView(hugeHeader.buffer).setUint32(8, 0xffffffff, true);
  assert.throws(() => readCapture(hugeHeader), FileFormatError);
  const c = sample();
  assert.throws(() => writeCapture({ ...c, layers: [{ ...c.layers[0]!, heads: 3 }] }), FileFormatError); // not a multiple of kvHeads
});
