// GGUF writer: every value type and tensor layout round-trips through the reader; bad input is refused.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ArgumentError } from '../errors.js';
import { parseGguf, readGguf } from './reader.js';
import { GGML } from './types.js';
import { gv, type GgufValue } from './values.js';
import { encodeGguf, writeGguf, type GgufWriteInput } from './writer.js';

const everyType: [string, GgufValue][] = [
  ['u8', gv.u8(255)],
  ['i8', gv.i8(-128)],
  ['u16', gv.u16(65535)],
  ['i16', gv.i16(-32768)],
  ['u32', gv.u32(0xffffffff)],
  ['i32', gv.i32(-0x80000000)],
  ['f32', gv.f32(Math.fround(0.1))],
  ['f64', gv.f64(0.1)],
  ['u64', gv.u64(2n ** 64n - 1n)],
  ['i64', gv.i64(-(2n ** 63n))],
  ['bool', gv.bool(true)],
  ['string', gv.str('héllo ▁ 日本 \u{1F600}')],
  ['empty', gv.str('')],
  ['a.u8', { type: 'array', itemType: 'u8', value: Uint8Array.of(0, 255) }],
  ['a.i8', { type: 'array', itemType: 'i8', value: Int8Array.of(-128, 127) }],
  ['a.u16', { type: 'array', itemType: 'u16', value: Uint16Array.of(1, 65535) }],
  ['a.i16', { type: 'array', itemType: 'i16', value: Int16Array.of(-32768, 5) }],
  ['a.u32', gv.u32s([1, 0xffffffff])],
  ['a.i32', gv.i32s([-1, 2])],
  ['a.f32', gv.f32s([0.5, -0, Infinity])],
  ['a.f64', { type: 'array', itemType: 'f64', value: Float64Array.of(Math.PI, NaN) }],
  ['a.u64', { type: 'array', itemType: 'u64', value: BigUint64Array.of(0n, 2n ** 64n - 1n) }],
  ['a.i64', { type: 'array', itemType: 'i64', value: BigInt64Array.of(-(2n ** 63n), 7n) }],
  ['a.bool', { type: 'array', itemType: 'bool', value: [true, false, true] }],
  ['a.string', gv.strings(['', 'x', '▁t259'])],
  ['a.empty', gv.strings([])],
];

function tensors(): GgufWriteInput['tensors'] {
  return [
    { name: 'w.f32', type: GGML.F32, dims: [3, 2], data: new Uint8Array(new Float32Array([1, 2, 3, 4, 5, 6]).buffer) },
    { name: 'w.q4_K', type: GGML.Q4_K, dims: [256, 2], data: Uint8Array.from({ length: 288 }, (_, i) => i & 0xff) },
    { name: 'w.f16', type: GGML.F16, dims: [1, 1, 1, 3], data: Uint8Array.of(0, 60, 0, 64, 0, 66) },
  ];
}

test('every metadata value type round-trips with its wire type', () => {
  const f = parseGguf(encodeGguf({ metadata: everyType, tensors: [] }));
  assert.equal(f.version, 3);
  assert.deepEqual(
    [...f.metadata.keys()],
    everyType.map(([k]) => k),
  );
  for (const [k, v] of everyType) assert.deepEqual(f.metadata.get(k), v, k);
});

test('tensors round-trip: dims, types, bytes, aligned offsets (default and 64)', () => {
  for (const alignment of [undefined, 64, 1]) {
    const input: GgufWriteInput = { metadata: [['general.name', gv.str('t')]], tensors: tensors(), alignment };
    const bytes = encodeGguf(input);
    const f = parseGguf(bytes);
    const a = alignment ?? 32;
    assert.equal(f.alignment, a);
    assert.equal(f.metadata.has('general.alignment'), a !== 32);
    for (const t of input.tensors) {
      const info = f.tensor(t.name);
      assert.deepEqual([info.type, info.dims], [t.type, t.dims]);
      assert.equal((info.offset - f.dataStart) % a, 0);
      assert.deepEqual(f.tensorData(t.name), t.data);
    }
    // Consecutive offsets, as llama.cpp's reader requires.
    let expect = 0;
    for (const t of f.tensors) {
      assert.equal(t.offset - f.dataStart, expect);
      expect += Math.ceil(t.bytes / a) * a;
    }
    assert.equal(bytes.length, f.dataStart + expect);
  }
});

test('writeGguf to a path equals encodeGguf in memory', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kvpack-gguf-'));
  try {
    const path = join(dir, 'w.gguf');
    const input: GgufWriteInput = { metadata: everyType, tensors: tensors() };
    writeGguf(path, input);
    assert.deepEqual(new Uint8Array(readFileSync(path)), encodeGguf(input));
    assert.equal(readGguf(path).tensors.length, 3);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the writer refuses what the reader would reject', () => {
  const bad = (input: Partial<GgufWriteInput>, pattern: RegExp) =>
    assert.throws(
      () => encodeGguf({ metadata: [], tensors: [], ...input }),
      (e: unknown) => e instanceof ArgumentError && pattern.test(e.message),
    );
  const t = tensors()[0]!;
  bad({ tensors: [{ ...t, data: new Uint8Array(20) }] }, /data is 20 B, shape and type need 24 B/);
  bad({ tensors: [{ ...t, type: 4 }] }, /unknown ggml type 4/);
  bad({ tensors: [{ ...t, type: GGML.Q4_0, dims: [33] }] }, /ne0 33 is not a multiple of the q4_0 block size 32/);
  bad({ tensors: [t, t] }, /duplicate name/);
  bad({ tensors: [{ ...t, name: 'n'.repeat(64) }] }, /name longer than 63/);
  bad({ tensors: [{ ...t, dims: [1, 1, 1, 1, 6] }] }, /bad dims/);
  bad({ alignment: 48 }, /alignment 48 is not a power of two/);
  bad({ metadata: [['general.alignment', gv.u32(64)]] }, /disagrees with alignment 32/);
  bad({ metadata: [['k', gv.u8(256)]] }, /256 is not a u8/);
  bad({ metadata: [['k', gv.u32(1.5)]] }, /1.5 is not a u32/);
  bad(
    {
      metadata: [
        ['k', gv.u32(1)],
        ['k', gv.u32(2)],
      ],
    },
    /duplicate metadata key 'k'/,
  );
});
