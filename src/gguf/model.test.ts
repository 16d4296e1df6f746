// File-backed tensors: modelFromGguf reads nothing until asked; readTensorInto lands bytes in the caller's
// memory (a SharedArrayBuffer like the wasm arena) and refuses ranges outside the tensor.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ArgumentError } from '../errors.js';
import { modelFromGguf, readTensor, tensorBytes } from './model.js';
import { readGguf, readGgufFrom } from './reader.js';
import { memorySource, type ByteSource } from './source.js';
import { tinyLlama } from '../../test/fixtures/tiny.js';
import { encodeGguf, writeGguf } from './writer.js';

/** Counts bytes returned by `read` (each a fresh allocation from a file) past the header. */
function counting(bytes: Uint8Array, from: number): ByteSource & { readBytes: number } {
  const inner = memorySource(bytes);
  const s = {
    size: inner.size,
    name: 'counting',
    readBytes: 0,
    read: (o: number, n: number) => {
      if (o >= from) s.readBytes += n;
      return inner.read(o, n);
    },
    readInto: (o: number, dst: Uint8Array) => inner.readInto!(o, dst),
  };
  return s;
}

test('modelFromGguf reads no tensor data until a tensor is asked for', () => {
  const bytes = encodeGguf(tinyLlama({ weightType: 'q8_0' }));
  const dataStart = readGgufFrom(memorySource(bytes)).dataStart;
  const src = counting(bytes, dataStart);
  const m = modelFromGguf(readGgufFrom(src));
  assert.equal(src.readBytes, 0);
  const t = m.tensors.get('blk.0.attn_q.weight')!;
  assert.equal(tensorBytes(t), ((64 * 64) / 32) * 34);
  assert.equal(src.readBytes, 0);
  assert.equal(t.data.length, tensorBytes(t));
  assert.equal(src.readBytes, tensorBytes(t));
});

test('readTensorInto fills a SharedArrayBuffer view from a file, at any offset, and checks the range', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kvpack-gguf-'));
  try {
    const path = join(dir, 'm.gguf');
    writeGguf(path, tinyLlama({ weightType: 'q4_0' }));
    const f = readGguf(path);
    const name = 'blk.1.ffn_down.weight';
    const whole = f.tensorData(name);
    const shared = new Uint8Array(new SharedArrayBuffer(whole.length + 64), 64, whole.length);
    f.readTensorInto(name, shared);
    assert.deepEqual(shared.slice(), whole);
    const part = new Uint8Array(37);
    readTensor(modelFromGguf(f).tensors.get(name)!, part, 100);
    assert.deepEqual(part, whole.subarray(100, 137));
    assert.throws(() => f.readTensorInto(name, new Uint8Array(2), whole.length - 1), ArgumentError);
    assert.throws(() => f.readTensorInto(name, new Uint8Array(1), -1), ArgumentError);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
