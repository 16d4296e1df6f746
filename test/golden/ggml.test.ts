// Our ggml-compatible formats against frozen vectors from REAL ggml (tools/golden/ggml_golden.c):
// encode() must give ggml's bytes and decode() ggml's float32 bits, case by case.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { fromRoot } from '../paths.js';
import { encode, decode } from '../../src/formats/codec.js';
import { formats } from '../../src/formats/registry.js';
import type { KvFormat } from '../../src/formats/format.js';

interface GoldenCase {
  name: string;
  n: number;
  input: string[];
  bytes: string;
  decoded: string[];
  /** [start, end) byte ranges ggml leaves undefined (iq4_nl's qs for blocks below 1e-15): not compared. */
  unspecifiedBytes?: [number, number][];
}
interface GoldenFile {
  format: string;
  ggmlType: number;
  cases: GoldenCase[];
}

const DIR = fromRoot('test', 'golden', 'ggml');

function floatsFromBits(hex: readonly string[]): Float32Array {
  return new Float32Array(new Uint32Array(hex.map((h) => parseInt(h, 16))).buffer);
}

function bitsHex(x: Float32Array): string[] {
  return [...new Uint32Array(x.buffer, x.byteOffset, x.length)].map((u) => u.toString(16).padStart(8, '0'));
}

function toHex(b: Uint8Array): string {
  return Buffer.from(b.buffer, b.byteOffset, b.length).toString('hex');
}

/** Hex of the bytes with the ranges ggml leaves undefined blanked out (same in both sides). */
function maskedHex(b: Uint8Array, ranges: readonly [number, number][] = []): string {
  const copy = Uint8Array.from(b);
  for (const [start, end] of ranges) copy.fill(0, start, end);
  return toHex(copy);
}

/** Block-by-block reference encode without codec's finiteness check (for f16/bf16/f32 NaN/Inf cases). */
function encodeBlocksRaw(f: KvFormat, input: Float32Array): Uint8Array {
  const out = new Uint8Array((input.length / f.blockValues) * f.blockBytes);
  for (let ib = 0; ib * f.blockValues < input.length; ib++) {
    f.encodeBlock(input, ib * f.blockValues, out, ib * f.blockBytes);
  }
  return out;
}

// JS numbers do not carry NaN sign or payload (x86 makes 0*Inf a negative NaN), so any NaN matches any NaN.
function sameBits(ours: string, theirs: string): boolean {
  const isNaN32 = (h: string) => (parseInt(h, 16) & 0x7fffffff) > 0x7f800000;
  return ours === theirs || (isNaN32(ours) && isNaN32(theirs));
}

const files = readdirSync(DIR).filter((f) => f.endsWith('.json'));

// The formats tools/golden/ggml_golden.c writes (k-quants have their own suite in test/golden/kquants).
const GGML_IDS = ['f32', 'f16', 'bf16', 'q8_0', 'q4_0', 'q4_1', 'q5_0', 'q5_1', 'iq4_nl'];

test('every ggml-compatible format is registered and has a golden file', () => {
  const have = new Set(files.map((f) => f.replace(/\.json$/, '')));
  for (const id of GGML_IDS) {
    assert.ok(formats.get(id)?.ggmlType !== undefined, `${id} missing from the registry or without ggmlType`);
    assert.ok(have.has(id), `missing test/golden/ggml/${id}.json (regenerate: tools/golden/README.md)`);
  }
});

for (const file of files) {
  const golden = JSON.parse(readFileSync(`${DIR}/${file}`, 'utf8')) as GoldenFile;
  const format = formats.get(golden.format);
  test(`${golden.format}: ggml type id matches`, () => {
    assert.ok(format, `format ${golden.format} is not registered`);
    assert.equal(format.ggmlType, golden.ggmlType);
  });
  for (const c of golden.cases) {
    test(`${golden.format} / ${c.name}: encode == ggml bytes, decode == ggml floats`, () => {
      assert.ok(format);
      const input = floatsFromBits(c.input);
      assert.equal(input.length, c.n);
      // encode() refuses NaN/Inf by contract; for those conversion cases check the block encoder itself.
      const ours = input.every(Number.isFinite) ? encode(golden.format, input) : encodeBlocksRaw(format, input);
      const ggmlBytes = Uint8Array.from(Buffer.from(c.bytes, 'hex'));
      assert.equal(maskedHex(ours, c.unspecifiedBytes), maskedHex(ggmlBytes, c.unspecifiedBytes));
      const decoded = bitsHex(decode(golden.format, ggmlBytes, c.n));
      const bad = decoded.findIndex((h, i) => !sameBits(h, c.decoded[i]!));
      assert.equal(bad, -1, `element ${bad}: ours ${decoded[bad]}, ggml ${c.decoded[bad]}`);
    });
  }
}
