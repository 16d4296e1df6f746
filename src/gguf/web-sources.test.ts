// The browser byte sources' common part in Node: reads are split into pieces of at most READ_STEP bytes
// that land in the caller's buffer, so a tensor read into the arena never takes a copy of its full size.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { READ_STEP, arrayBufferSource, pieceSource } from './web-sources.js';
import { FileFormatError } from '../errors.js';

function counting(bytes: Uint8Array) {
  const pieces: [number, number][] = [];
  const src = pieceSource('spy', bytes.length, (offset, length) => {
    pieces.push([offset, length]);
    return bytes.slice(offset, offset + length);
  });
  return { src, pieces };
}

test('pieceSource: readInto moves a big range in READ_STEP pieces straight into dst', () => {
  const n = 2 * READ_STEP + 12345;
  const bytes = new Uint8Array(n + 100);
  for (let i = 0; i < bytes.length; i += 4096) bytes[i] = (i >> 12) & 255;
  const { src, pieces } = counting(bytes);
  const dst = new Uint8Array(n);
  src.readInto!(100, dst);
  assert.deepEqual(pieces, [
    [100, READ_STEP],
    [100 + READ_STEP, READ_STEP],
    [100 + 2 * READ_STEP, 12345],
  ]);
  assert.deepEqual(dst, bytes.subarray(100));
  assert.deepEqual(src.read(5, 10), bytes.subarray(5, 15));
  assert.throws(() => src.read(n, 101), FileFormatError);
});

test('pieceSource: a short piece is an error, not silent zeros', () => {
  const src = pieceSource('short', 100, (_o, length) => new Uint8Array(length - 1));
  assert.throws(() => src.readInto!(0, new Uint8Array(10)), /returned 9 B/);
});

test("arrayBufferSource: views of the buffer, or of a view's window", () => {
  const buf = Uint8Array.from([0, 1, 2, 3, 4, 5, 6, 7]);
  const s = arrayBufferSource(buf.subarray(2, 6));
  assert.equal(s.size, 4);
  assert.deepEqual(s.read(1, 2), Uint8Array.from([3, 4]));
  assert.equal(s.read(0, 1).buffer, buf.buffer);
});
