// The non-ggml packed formats (q2c_0, nf4, affine, int2s, tern, sign) against frozen vectors written by
// scripts/gen-seed-golden.ts: encode() must give the frozen bytes and decode() the frozen float32 bits.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { fromRoot } from '../paths.js';
import { encode, decode } from '../../src/formats/codec.js';
import { getFormat } from '../../src/formats/registry.js';
import { SEED_FORMAT_IDS, seedCases } from './seed-cases.js';

interface GoldenCase {
  name: string;
  n: number;
  input: string[];
  bytes: string;
  decoded: string[];
}
interface GoldenFile {
  format: string;
  axis: string;
  blockValues: number;
  blockBytes: number;
  cases: GoldenCase[];
}

const DIR = fromRoot('test', 'golden', 'seed');
const floatsFromBits = (hex: readonly string[]) => new Float32Array(new Uint32Array(hex.map((h) => parseInt(h, 16))).buffer);
const bitsHex = (x: Float32Array) => [...new Uint32Array(x.buffer, x.byteOffset, x.length)].map((u) => u.toString(16).padStart(8, '0'));

test('a seed golden file exists for every seed format and for nothing else', () => {
  const files = readdirSync(DIR).filter((f) => f.endsWith('.json')).map((f) => f.slice(0, -5)).sort();
  assert.deepEqual(files, [...SEED_FORMAT_IDS].sort());
});

for (const id of SEED_FORMAT_IDS) {
  test(`${id}: encode and decode reproduce the frozen vectors`, () => {
    const golden = JSON.parse(readFileSync(`${DIR}/${id}.json`, 'utf8')) as GoldenFile;
    const f = getFormat(id);
    assert.deepEqual([golden.axis, golden.blockValues, golden.blockBytes], [f.axis, f.blockValues, f.blockBytes]);
    // The frozen inputs are the ones the case generator makes today (guards against editing one side only).
    assert.deepEqual(golden.cases.map((c) => c.name), seedCases(f.blockValues).map((c) => c.name));
    for (const c of golden.cases) {
      const input = floatsFromBits(c.input);
      assert.equal(input.length, c.n);
      assert.equal(Buffer.from(encode(id, input)).toString('hex'), c.bytes, `${id}/${c.name}: bytes`);
      const out = decode(id, new Uint8Array(Buffer.from(c.bytes, 'hex')), c.n);
      assert.deepEqual(bitsHex(out), c.decoded, `${id}/${c.name}: decoded`);
      if (c.name === 'zeros') assert.ok(out.every((v) => v === 0), `${id}: zeros stay zeros`);
    }
  });
}
