// The q4_0x4 layout: the TS definition round-trips, the wasm repack at load writes exactly its bytes, and a
// weight is repacked only where the build, the row count, the scales and the setting allow.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Weight } from '../../model/forward-weights.js';
import { encode } from '../../formats/codec.js';
import { ShapeError } from '../../errors.js';
import { GGML } from '../../gguf/types.js';
import { kernelBuild, wasmFailure } from '../runtime/wasm.js';
import { Prng } from '../../numeric/prng.js';
import { configureMatmul } from './config.js';
import { interleaveQ4x4, q4x4Row } from './interleave.js';
import { KERNEL_LAYOUT } from './table.js';

const skip = wasmFailure() ? `wasm kernels unavailable: ${wasmFailure()}` : false;
const relaxed = !skip && kernelBuild()!.relaxed;

/** The arena bytes of a packed weight. */
function arenaBytes(w: Weight): Uint8Array {
  const p = w.packedWeight!;
  return new Uint8Array(p.space.arena.memory.buffer, p.ptr, p.rows * p.rowBytes).slice();
}

test('q4_0x4: every row comes back as its q4_0 bytes; groups hold d first, then 4 qs bytes per row per vector', () => {
  const rng = new Prng(5);
  const rows = 8,
    rowBytes = 18 * 3;
  const src = Uint8Array.from({ length: rows * rowBytes }, () => rng.int(256));
  const packed = interleaveQ4x4(src, rowBytes, rows);
  assert.notDeepEqual(packed, src);
  const row = new Uint8Array(rowBytes);
  for (let r = 0; r < rows; r++) {
    q4x4Row(packed, rowBytes, r, row);
    assert.deepEqual(row, src.subarray(r * rowBytes, (r + 1) * rowBytes), `row ${r}`);
  }
  // Group 1, block 2: row 2's d, then its qs bytes 4..7 at vector 1.
  const g = 4 * rowBytes + 2 * 72;
  assert.deepEqual(packed.subarray(g + 4, g + 6), src.subarray(6 * rowBytes + 36, 6 * rowBytes + 38));
  assert.deepEqual(packed.subarray(g + 8 + 16 + 8, g + 8 + 16 + 12), src.subarray(6 * rowBytes + 36 + 2 + 4, 6 * rowBytes + 36 + 2 + 8));
  assert.throws(() => interleaveQ4x4(src, rowBytes, 6), ShapeError);
});

test('a relaxed build repacks q4_0 weights of whole row groups at load to exactly the TS layout; decodeRows reads either', { skip }, () => {
  const rng = new Prng(6);
  const cols = 96;
  const make = (rows: number, repack = true, data?: Uint8Array) => {
    const bytes = data ?? encode('q4_0', rng.normals(rows * cols), [rows, cols]);
    configureMatmul({ repack });
    try {
      return { w: new Weight('w', { type: GGML.Q4_0, dims: [cols, rows], data: bytes }), bytes };
    } finally {
      configureMatmul({ repack: true });
    }
  };
  const { w, bytes } = make(12);
  const plain = make(12, false, bytes).w;
  assert.equal(plain.packedWeight!.type, GGML.Q4_0);
  assert.deepEqual(arenaBytes(plain), bytes);
  if (relaxed) {
    assert.equal(w.packedWeight!.type, KERNEL_LAYOUT.Q4_0X4);
    assert.deepEqual(arenaBytes(w), interleaveQ4x4(bytes, 54, 12));
  } else assert.equal(w.packedWeight!.type, GGML.Q4_0, 'a baseline build keeps the file layout');
  const a = new Float32Array(5 * cols),
    b = new Float32Array(5 * cols);
  w.decodeRows(3, 8, a);
  plain.decodeRows(3, 8, b);
  assert.deepEqual(a, b);
  // Not whole groups, or a non-finite scale (row 5, block 1): kept as they are.
  assert.equal(make(6).w.packedWeight!.type, GGML.Q4_0);
  const inf = encode('q4_0', rng.normals(8 * cols), [8, cols]);
  inf.set([0x00, 0x7c], 5 * 54 + 18);
  assert.equal(make(8, true, inf).w.packedWeight!.type, GGML.Q4_0);
});
