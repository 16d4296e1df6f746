// Decode scratch holds one block: formats are bounded to MAX_BLOCK_VALUES values per block, and a format
// built around defineFormat with longer blocks is refused when read, never decoded into a short buffer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defineFormat, MAX_BLOCK_VALUES, type KvFormat } from '../../formats/format.js';
import { formats } from '../../formats/registry.js';
import { readStored } from './dequantize.js';
import { attendReference } from './reference.js';
import type { MixedView } from './view.js';
import { ShapeError } from '../../errors.js';

/** Plain f32 values in blocks of `B` (4 bytes each). */
function wideF32(B: number): KvFormat {
  return {
    id: `wide${B}`,
    description: 'test',
    axis: 'token',
    blockValues: B,
    blockBytes: 4 * B,
    layout: [{ name: 'x', bytes: 4 * B, what: 'f32 values' }],
    rule: 'f32 little-endian',
    exact: true,
    encodeBlock(src, so, dst, d) {
      for (let j = 0; j < B; j++) new DataView(dst.buffer, dst.byteOffset + d + 4 * j).setFloat32(0, src[so + j]!, true);
    },
    decodeBlock(src, so, dst, d) {
      for (let j = 0; j < B; j++) dst[d + j] = new DataView(src.buffer, src.byteOffset + so + 4 * j).getFloat32(0, true);
    },
  };
}

function view(f: KvFormat, D: number, values: Float32Array): MixedView {
  const bytes = new Uint8Array(values.length * 4);
  for (let i = 0; i < values.length; i += f.blockValues) f.encodeBlock(values, i, bytes, i * 4);
  const run = { format: f, bytes, offset: 0, headStride: bytes.length, first: 0 };
  return { headDim: D, kvHeads: 1, length: values.length / D, segments: [{ start: 0, count: values.length / D, k: run, v: run, region: 'bulk' }] };
}

test('defineFormat bounds blockValues (decode scratch is sized for one block); every registered format is inside', () => {
  assert.throws(() => defineFormat(wideF32(MAX_BLOCK_VALUES * 2)), /blockValues/);
  assert.throws(() => defineFormat(wideF32(0)), /blockValues/);
  assert.doesNotThrow(() => defineFormat(wideF32(MAX_BLOCK_VALUES)));
  for (const f of formats.values()) assert.ok(f.blockValues <= MAX_BLOCK_VALUES, f.id);
});

test('reading a format with longer blocks than the scratch is a ShapeError, the longest allowed block decodes right', () => {
  const x = Float32Array.from({ length: 2 * 512 }, (_, i) => i - 300.5);
  assert.throws(() => readStored(view(wideF32(512), 512, x), 'k'), ShapeError);
  const q = new Float32Array(512).fill(0.01);
  assert.throws(() => attendReference({ view: view(wideF32(512), 512, x), q, heads: 1, out: new Float32Array(512) }), ShapeError);
  const y = Float32Array.from({ length: 2 * MAX_BLOCK_VALUES }, (_, i) => i - 100.25);
  assert.deepEqual(readStored(view(wideF32(MAX_BLOCK_VALUES), MAX_BLOCK_VALUES, y), 'k'), y);
});
