// The hardened safetensors reader: valid files parse lazily; malformed ones (truncated, header too long,
// bad JSON, bad offsets, overlaps, unsupported dtypes, shape/size mismatches) are FileFormatErrors naming
// the problem, and no read is larger than the file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FileFormatError } from '../errors.js';
import { memorySource, type ByteSource } from '../gguf/source.js';
import { MAX_HEADER_BYTES, readSafetensorsFrom } from './safetensors.js';
import { encodeSafetensors, f32Bytes, withHeader } from '../../test/fixtures/safetensors-writer.js';

/** Records the largest read, to show a hostile length never drives a big allocation. */
function spy(bytes: Uint8Array): ByteSource & { maxRead: number; reads: number } {
  const inner = memorySource(bytes, 'spy.safetensors');
  const s = {
    size: inner.size,
    name: inner.name,
    maxRead: 0,
    reads: 0,
    read: (o: number, n: number) => {
      s.reads++;
      s.maxRead = Math.max(s.maxRead, n);
      return inner.read(o, n);
    },
  };
  return s;
}

function sample(): Uint8Array {
  return encodeSafetensors(
    [
      { name: 'a.weight', dtype: 'F32', shape: [2, 3], data: f32Bytes([1, 2, 3, 4, 5, 6]) },
      { name: 'b.bias', dtype: 'BF16', shape: [4], data: new Uint8Array(8).fill(0x3f) },
      { name: 'c', dtype: 'F16', shape: [0, 5], data: new Uint8Array(0) },
    ],
    { metadata: { format: 'pt' } },
  );
}

function rejects(bytes: Uint8Array, pattern: RegExp): void {
  const src = spy(bytes);
  assert.throws(
    () => readSafetensorsFrom(src),
    (e: unknown) => {
      assert.ok(e instanceof FileFormatError, `expected FileFormatError, got ${String(e)}`);
      assert.match(e.message, pattern);
      return true;
    },
  );
  assert.ok(src.maxRead <= bytes.length, `read ${src.maxRead} B from a ${bytes.length} B file`);
}

test('a valid file parses: dtypes, shapes, absolute offsets, __metadata__; no tensor is read', () => {
  const bytes = sample();
  const src = spy(bytes);
  const f = readSafetensorsFrom(src);
  assert.equal(src.reads, 2, 'length + header only');
  assert.deepEqual([...f.tensors.keys()], ['a.weight', 'b.bias', 'c']);
  assert.deepEqual(f.metadata, { format: 'pt' });
  const a = f.tensors.get('a.weight')!;
  assert.deepEqual([a.dtype, a.shape, a.nbytes], ['F32', [2, 3], 24]);
  assert.deepEqual(new Float32Array(bytes.slice(a.offset, a.offset + 24).buffer), Float32Array.from([1, 2, 3, 4, 5, 6]));
  assert.equal(f.tensors.get('b.bias')!.offset, a.offset + 24);
  assert.equal(f.tensors.get('c')!.nbytes, 0);
});

test('truncated files, at every cut, are errors', () => {
  const bytes = sample();
  rejects(bytes.slice(0, 5), /shorter than the 8 B header length/);
  const headerLen = Number(new DataView(bytes.buffer).getBigUint64(0, true));
  for (const cut of [8, 9, 8 + headerLen - 1]) rejects(bytes.slice(0, cut), /header of \d+ B runs past the end/);
  for (const cut of [8 + headerLen, bytes.length - 1]) rejects(bytes.slice(0, cut), /run past the \d+ B data section/);
});

test('a header longer than MAX_HEADER_BYTES is refused before any allocation', () => {
  const b = new Uint8Array(16);
  new DataView(b.buffer).setBigUint64(0, BigInt(MAX_HEADER_BYTES) + 1n, true);
  rejects(b, /exceeds MAX_HEADER_BYTES/);
  new DataView(b.buffer).setBigUint64(0, 2n ** 64n - 1n, true);
  rejects(b, /exceeds MAX_HEADER_BYTES/);
});

test('headers that are not a JSON object of well-formed entries', () => {
  rejects(withHeader('{"a": '), /not valid JSON/);
  rejects(withHeader('[1, 2]'), /not a JSON object/);
  const bad = new Uint8Array([...withHeader('{}')]);
  bad[8] = 0xff;
  rejects(bad, /not valid UTF-8/);
  rejects(withHeader('{"x": 3}'), /tensor 'x': entry is not an object/);
  rejects(withHeader('{"__metadata__": {"k": 1}}'), /__metadata__.k is not a string/);
  rejects(withHeader('{"x": {"shape": [1], "data_offsets": [0, 4]}}', [new Uint8Array(4)]), /dtype is missing/);
});

test('unsupported dtypes are named', () => {
  for (const dtype of ['F64', 'I64', 'BOOL', 'F8_E4M3', 'Q4']) {
    const bytes = encodeSafetensors([{ name: 'w', dtype, shape: [1], data: new Uint8Array(8) }]);
    rejects(bytes, new RegExp(`tensor 'w': dtype ${dtype} is not supported \\(supported: F32, F16, BF16\\)`));
  }
});

test('bad shapes and data_offsets', () => {
  const one = (edit: (e: Record<string, unknown>) => void, pattern: RegExp, data = new Uint8Array(16)) =>
    rejects(encodeSafetensors([{ name: 'w', dtype: 'F32', shape: [2, 2], data }], { header: (h) => edit(h['w'] as Record<string, unknown>) }), pattern);
  one((e) => {
    e['shape'] = [2, -2];
  }, /non-integer or negative dim/);
  one((e) => {
    e['shape'] = [2.5];
  }, /non-integer or negative dim/);
  one((e) => {
    e['shape'] = 'big';
  }, /shape must be an array/);
  one((e) => {
    e['shape'] = new Array(9).fill(1);
  }, /at most 8 dims/);
  one((e) => {
    e['shape'] = [2 ** 30, 2 ** 30];
  }, /too large/);
  one((e) => {
    e['shape'] = [2, 3];
  }, /hold 16 B, shape \[2, 3\] F32 needs 24 B/);
  one((e) => {
    e['shape'] = [3];
  }, /hold 16 B, shape \[3\] F32 needs 12 B/);
  one((e) => {
    e['data_offsets'] = [0];
  }, /data_offsets must be \[begin, end\]/);
  one((e) => {
    e['data_offsets'] = [-4, 12];
  }, /data_offsets must be/);
  one((e) => {
    e['data_offsets'] = [16, 0];
  }, /end before they begin/);
  one((e) => {
    e['data_offsets'] = [8, 24];
  }, /run past the 16 B data section/);
  one((e) => {
    e['data_offsets'] = [0, 2 ** 53];
  }, /data_offsets must be|run past/);
});

test('overlapping tensors are refused', () => {
  const bytes = encodeSafetensors(
    [
      { name: 'a', dtype: 'F32', shape: [4], data: new Uint8Array(16) },
      { name: 'b', dtype: 'F32', shape: [2], data: new Uint8Array(8) },
    ],
    {
      header: (h) => {
        (h['b'] as { data_offsets: number[] }).data_offsets = [12, 20];
      },
    },
  );
  rejects(bytes, /tensors 'a' and 'b' overlap/);
});
