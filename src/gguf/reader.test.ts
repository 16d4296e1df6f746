// The hardened GGUF reader: valid files parse; malformed ones (truncated at every cut, wrong magic,
// bad versions, huge counts/strings/arrays/dims, bad alignment, offsets past EOF, overlaps) are each a
// FileFormatError naming the problem, and no read is larger than the file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileFormatError } from '../errors.js';
import { HEADER_CHUNK_BYTES, MAX_ARRAY_LENGTH, MAX_STRING_BYTES, MAX_TENSORS } from './limits.js';
import { parseGguf, readGguf, readGgufFrom } from './reader.js';
import { memorySource, type ByteSource } from './source.js';
import { GGML } from './types.js';
import { gv } from './values.js';
import { encodeGguf } from './writer.js';

/** Little-endian raw header builder, for files our writer would refuse to produce. */
class Raw {
  private parts: number[] = [];
  u8(x: number): this {
    this.parts.push(x & 0xff);
    return this;
  }
  u32(x: number): this {
    for (let i = 0; i < 4; i++) this.parts.push((x >>> (8 * i)) & 0xff);
    return this;
  }
  u64(x: bigint | number): this {
    const v = BigInt.asUintN(64, BigInt(x));
    for (let i = 0n; i < 8n; i++) this.parts.push(Number((v >> (8n * i)) & 0xffn));
    return this;
  }
  str(s: string): this {
    const b = Buffer.from(s, 'utf8');
    this.u64(b.length);
    for (const x of b) this.parts.push(x);
    return this;
  }
  zeros(n: number): this {
    for (let i = 0; i < n; i++) this.parts.push(0);
    return this;
  }
  /** Magic, version, counts. */
  head(nTensors: bigint | number, nKv: bigint | number, version = 3): this {
    return this.u32(0x46554747).u32(version).u64(nTensors).u64(nKv);
  }
  /** One tensor info. */
  tensor(name: string, dims: (bigint | number)[], type: number, offset: bigint | number): this {
    this.str(name).u32(dims.length);
    for (const d of dims) this.u64(d);
    return this.u32(type).u64(offset);
  }
  /** Pads to 32 then appends `n` data bytes. */
  data(n: number): this {
    while (this.parts.length % 32) this.parts.push(0);
    return this.zeros(n);
  }
  bytes(): Uint8Array {
    return Uint8Array.from(this.parts);
  }
}

/** A source that records the largest single read, to show no hostile length drives a big allocation. */
function spy(bytes: Uint8Array): ByteSource & { maxRead: number } {
  const inner = memorySource(bytes);
  const s = {
    size: inner.size,
    name: 'spy',
    maxRead: 0,
    read: (o: number, n: number) => {
      s.maxRead = Math.max(s.maxRead, n);
      return inner.read(o, n);
    },
  };
  return s;
}

function rejects(bytes: Uint8Array, pattern: RegExp): void {
  const src = spy(bytes);
  assert.throws(
    () => readGgufFrom(src),
    (e: unknown) => {
      assert.ok(e instanceof FileFormatError, `expected FileFormatError, got ${String(e)}`);
      assert.match(e.message, pattern);
      return true;
    },
  );
  assert.ok(src.maxRead <= Math.max(bytes.length, 0), `read ${src.maxRead} B from a ${bytes.length} B file`);
}

/** A valid file exercising strings, arrays, and three tensor types. */
function sample(): Uint8Array {
  const q8 = new Uint8Array(34 * 2); // 2 blocks of q8_0
  q8[0] = 0x00;
  q8[1] = 0x3c; // d = 1.0
  return encodeGguf({
    metadata: [
      ['general.architecture', gv.str('llama')],
      ['llama.block_count', gv.u32(2)],
      ['tokenizer.ggml.tokens', gv.strings(['<unk>', 'a', 'bé'])],
      ['tokenizer.ggml.scores', gv.f32s([0, -1, -2])],
    ],
    tensors: [
      { name: 'a', type: GGML.F32, dims: [3, 2], data: new Uint8Array(new Float32Array([1, 2, 3, 4, 5, 6]).buffer) },
      { name: 'b', type: GGML.Q8_0, dims: [64], data: q8 },
      { name: 'c', type: GGML.F16, dims: [5], data: new Uint8Array(10).fill(0x3c) },
    ],
  });
}

test('a valid file parses: metadata, tensor table, data views', () => {
  const f = parseGguf(sample());
  assert.equal(f.version, 3);
  assert.equal(f.alignment, 32);
  assert.equal(f.getString('general.architecture'), 'llama');
  assert.equal(f.getU32('llama.block_count'), 2);
  assert.deepEqual(f.getArray('tokenizer.ggml.tokens', 'string'), ['<unk>', 'a', 'bé']);
  assert.deepEqual(
    [...f.tensors.map((t) => [t.name, t.dims, t.bytes])],
    [
      ['a', [3, 2], 24],
      ['b', [64], 68],
      ['c', [5], 10],
    ],
  );
  assert.deepEqual([...new Float32Array(f.tensorData('a').slice().buffer)], [1, 2, 3, 4, 5, 6]);
  for (const t of f.tensors) assert.equal((t.offset - f.dataStart) % 32, 0);
  assert.throws(() => f.tensorData('missing'), /no tensor named 'missing'/);
});

test('typed getters: missing and mistyped keys are clear errors, fallbacks only for missing keys', () => {
  const f = parseGguf(sample());
  assert.throws(() => f.getU32('llama.nope'), /metadata 'llama.nope': missing \(expected u32\)/);
  assert.throws(() => f.getU32('general.architecture'), /'general.architecture': expected u32, found string/);
  assert.throws(() => f.getF32('llama.block_count', 1), /expected f32, found u32/);
  assert.throws(() => f.getArray('tokenizer.ggml.scores', 'string'), /expected array of string, found array of f32/);
  assert.equal(f.getU32('llama.nope', 7), 7);
  assert.equal(f.getInt('llama.block_count'), 2);
});

test('truncation at every cut point is a FileFormatError (data cuts included)', () => {
  const bytes = sample();
  const f = parseGguf(bytes);
  const lastDataEnd = Math.max(...f.tensors.map((t) => t.offset + t.bytes));
  for (let cut = 0; cut < bytes.length; cut++) {
    const part = bytes.slice(0, cut);
    if (cut >= lastDataEnd) {
      parseGguf(part); // only trailing padding is missing: every tensor is still whole
      continue;
    }
    assert.throws(() => parseGguf(part), FileFormatError, `cut at ${cut} of ${bytes.length}`);
  }
});

test('wrong magic and unsupported versions', () => {
  rejects(new Uint8Array(0), /truncated: magic/);
  rejects(Buffer.from('GGML\x03\x00\x00\x00'), /bad magic 0x4c4d4747/);
  rejects(new Raw().u32(0).u32(3).bytes(), /bad magic/);
  rejects(new Raw().head(0, 0, 1).bytes(), /GGUF v1/);
  rejects(new Raw().head(0, 0, 4).bytes(), /unsupported GGUF version 4/);
  rejects(new Raw().head(0, 0, 0x03000000).bytes(), /big-endian/);
  // v2 has the same little-endian layout as v3.
  assert.equal(parseGguf(new Raw().head(1, 0, 2).tensor('t', [8], GGML.F32, 0).data(32).bytes()).version, 2);
});

test('huge counts are refused before any loop or allocation', () => {
  rejects(new Raw().head(2n ** 63n, 0).bytes(), /tensor count 9223372036854775808 exceeds MAX_TENSORS/);
  rejects(new Raw().head(MAX_TENSORS, 0).bytes(), /truncated: tensor count/);
  rejects(new Raw().head(0, 2n ** 64n - 1n).bytes(), /metadata kv count .* exceeds MAX_KV/);
  rejects(new Raw().head(0, 1000).zeros(64).bytes(), /truncated: metadata kv count 1000/);
});

test('hostile string and array lengths', () => {
  rejects(
    new Raw()
      .head(0, 1)
      .u64(2n ** 64n - 1n)
      .zeros(8)
      .bytes(),
    /metadata key #0 length 18446744073709551615 exceeds MAX_STRING_BYTES/,
  );
  rejects(
    new Raw()
      .head(0, 1)
      .u64(MAX_STRING_BYTES + 1)
      .zeros(8)
      .bytes(),
    /exceeds MAX_STRING_BYTES/,
  );
  rejects(new Raw().head(0, 1).u64(100).zeros(10).bytes(), /truncated: metadata key #0 needs 100 B/);
  rejects(
    new Raw()
      .head(0, 1)
      .str('k')
      .u32(8)
      .u64(2n ** 40n)
      .bytes(),
    /metadata 'k' value length .* exceeds MAX_STRING_BYTES/,
  );
  rejects(
    new Raw()
      .head(0, 1)
      .str('k')
      .u32(9)
      .u32(6)
      .u64(2n ** 62n)
      .bytes(),
    /'k' array length .* exceeds MAX_ARRAY_LENGTH/,
  );
  rejects(new Raw().head(0, 1).str('k').u32(9).u32(6).u64(MAX_ARRAY_LENGTH).zeros(16).bytes(), /truncated: metadata 'k' array length/);
  rejects(
    new Raw().head(0, 1).str('k').u32(9).u32(8).u64(1_000_000).zeros(16).bytes(),
    /truncated: metadata 'k' array length 1000000 needs at least 8000000 B/,
  );
  rejects(
    new Raw()
      .head(0, 1)
      .str('k')
      .u32(9)
      .u32(8)
      .u64(2)
      .str('a')
      .u64(2n ** 50n)
      .bytes(),
    /'k' array item 1 length .* exceeds MAX_STRING_BYTES/,
  );
});

test('bad value types, nested arrays, bools, duplicate keys', () => {
  rejects(new Raw().head(0, 1).str('k').u32(13).bytes(), /metadata 'k' has unknown value type 13/);
  rejects(new Raw().head(0, 1).str('k').u32(9).u32(77).u64(0).bytes(), /'k' array has unknown item type 77/);
  rejects(new Raw().head(0, 1).str('k').u32(9).u32(9).u64(0).bytes(), /nested arrays/);
  rejects(new Raw().head(0, 1).str('k').u32(7).u8(2).bytes(), /bool byte 2/);
  rejects(new Raw().head(0, 2).str('k').u32(4).u32(1).str('k').u32(4).u32(1).bytes(), /duplicate metadata key 'k'/);
});

test('general.alignment must be a u32 power of two within MAX_ALIGNMENT', () => {
  for (const a of [0, 3, 48, 1 << 20]) rejects(new Raw().head(0, 1).str('general.alignment').u32(4).u32(a).bytes(), /general.alignment .* not a power of two/);
  rejects(new Raw().head(0, 1).str('general.alignment').u32(10).u64(32).bytes(), /general.alignment must be u32, found u64/);
  const ok = parseGguf(new Raw().head(1, 1).str('general.alignment').u32(4).u32(64).tensor('t', [16], GGML.F32, 0).zeros(128).bytes());
  assert.equal(ok.alignment, 64);
  assert.equal(ok.dataStart % 64, 0);
});

test('absurd tensor shapes and types', () => {
  const one = (dims: (bigint | number)[], type: number = GGML.F32, name = 't') => new Raw().head(1, 0).tensor(name, dims, type, 0).data(64).bytes();
  rejects(one([]), /tensor 't' has 0 dims/);
  rejects(one([1, 1, 1, 1, 1]), /has 5 dims/);
  rejects(one([2n ** 40n]), /tensor 't' dim 0 = 1099511627776 exceeds MAX_DIM/);
  rejects(one([2n ** 64n - 1n]), /exceeds MAX_DIM/);
  rejects(one([2 ** 31 - 1, 2 ** 31 - 1, 2 ** 31 - 1, 2 ** 31 - 1]), /needs 85070591\d+ B .* past the end of the file/);
  rejects(one([33], GGML.Q4_0), /tensor 't' \(q4_0\) ne0 = 33 is not a multiple of its block size 32/);
  rejects(one([16], 4), /unknown or removed ggml type 4/);
  rejects(one([16], 99), /unknown or removed ggml type 99/);
  rejects(one([16], GGML.F32, 'x'.repeat(64)), /longer than MAX_TENSOR_NAME_BYTES/);
});

test('tensor offsets: unaligned, past EOF, overlapping, duplicate names', () => {
  rejects(new Raw().head(1, 0).tensor('t', [4], GGML.F32, 8).data(64).bytes(), /offset 8 is not a multiple of the alignment 32/);
  rejects(
    new Raw()
      .head(1, 0)
      .tensor('t', [4], GGML.F32, 2n ** 60n)
      .data(64)
      .bytes(),
    /tensor 't' .* past the end of the file/,
  );
  rejects(new Raw().head(1, 0).tensor('t', [64], GGML.F32, 0).data(100).bytes(), /needs 256 B at data offset 0, ending at .* past the end/);
  rejects(new Raw().head(2, 0).tensor('a', [16], GGML.F32, 0).tensor('b', [16], GGML.F32, 32).data(128).bytes(), /tensors 'a' \[\d+, \d+\) and 'b' .* overlap/);
  rejects(new Raw().head(2, 0).tensor('a', [8], GGML.F32, 0).tensor('a', [8], GGML.F32, 32).data(64).bytes(), /duplicate tensor name 'a'/);
  // Out of order but disjoint is fine.
  const f = parseGguf(new Raw().head(2, 0).tensor('a', [8], GGML.F32, 32).tensor('b', [8], GGML.F32, 0).data(64).bytes());
  assert.deepEqual(
    f.tensors.map((t) => t.offset - f.dataStart),
    [32, 0],
  );
});

test('header reads stay chunked: a 40 MB tensor is not read while parsing', () => {
  const big = new Raw()
    .head(1, 0)
    .tensor('big', [10 << 20], GGML.F32, 0)
    .data(40 << 20)
    .bytes();
  const src = spy(big);
  const f = readGgufFrom(src);
  assert.ok(src.maxRead <= HEADER_CHUNK_BYTES);
  assert.equal(f.tensorData('big').length, 40 << 20);
});

test('readGguf from a path: positioned reads, fresh arrays per tensor', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kvpack-gguf-'));
  try {
    const path = join(dir, 'x.gguf');
    writeFileSync(path, sample());
    const f = readGguf(path);
    const a = f.tensorData('a');
    assert.equal(a.byteOffset, 0);
    assert.equal(a.buffer.byteLength, 24);
    writeFileSync(path, sample().slice(0, 100));
    assert.throws(() => f.tensorData('a'), FileFormatError);
    assert.throws(() => readGguf(path), FileFormatError);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('random byte corruption of a valid header: parses or FileFormatError, never another exception', async () => {
  const { Prng } = await import('../numeric/prng.js');
  const rng = new Prng(4);
  const base = sample();
  const f = parseGguf(base);
  for (let i = 0; i < 3000; i++) {
    const b = base.slice();
    for (let k = 1 + rng.int(3); k > 0; k--) b[rng.int(f.dataStart)] = rng.int(256);
    try {
      parseGguf(b);
    } catch (e) {
      if (!(e instanceof FileFormatError)) assert.fail(`mutation ${i}: ${String(e)}`);
    }
  }
});
