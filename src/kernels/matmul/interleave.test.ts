// The four-row group layouts (q4_0x4, q8_0x4, q4_Kx4, and the grouped q4_0g4 / q5_1g4 / ...): the TS definition round-trips and puts fields where the kernels
// read them, the wasm repack at load writes exactly its bytes, and a weight is repacked only where the build,
// the row count, the scales and the setting allow.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Weight } from '../../model/forward-weights.js';
import { encode } from '../../formats/codec.js';
import { ShapeError } from '../../errors.js';
import { GGML } from '../../gguf/types.js';
import { kernelBuild, wasmFailure } from '../runtime/wasm.js';
import { Prng } from '../../numeric/prng.js';
import { configureMatmul } from './config.js';
import { groupedRow, interleavedLayout, interleaveRows } from './interleave.js';
import { KERNEL_LAYOUT, weightType, weightTypeName } from './table.js';

const skip = wasmFailure() ? `wasm kernels unavailable: ${wasmFailure()}` : false;
const relaxed = !skip && kernelBuild()!.relaxed;

/** The arena bytes of a packed weight. */
function arenaBytes(w: Weight): Uint8Array {
  const p = w.packedWeight!;
  return new Uint8Array(p.space.arena.memory.buffer, p.ptr, p.rows * p.rowBytes).slice();
}

/** [rows, cols] random q4_K blocks: random bytes, d and dmin finite f16 of moderate size. */
function randomQ4K(rows: number, cols: number, rng: Prng): Uint8Array {
  const bytes = Uint8Array.from({ length: (cols / 256) * 144 * rows }, () => rng.int(256));
  for (let b = 0; b < bytes.length; b += 144) for (const at of [b + 1, b + 3]) bytes[at] = 0x1c + rng.int(8);
  return bytes;
}

// Per layout: its file type and name, block bytes and values, a cols count of whole blocks and an encoder (the
// builds that repack to it: the table row's repackIn).
const CASES = [
  {
    id: KERNEL_LAYOUT.Q4_0X4,
    type: GGML.Q4_0,
    name: 'q4_0',
    block: 18,
    values: 32,
    cols: 96,
    enc: (v: Float32Array, rows: number, cols: number, _rng: Prng) => encode('q4_0', v, [rows, cols]),
  },
  {
    id: KERNEL_LAYOUT.Q8_0X4,
    type: GGML.Q8_0,
    name: 'q8_0',
    block: 34,
    values: 32,
    cols: 96,
    enc: (v: Float32Array, rows: number, cols: number, _rng: Prng) => encode('q8_0', v, [rows, cols]),
  },
  {
    id: KERNEL_LAYOUT.Q4_0G4,
    type: GGML.Q4_0,
    name: 'q4_0 (grouped)',
    block: 18,
    values: 32,
    cols: 96,
    enc: (v: Float32Array, rows: number, cols: number, _rng: Prng) => encode('q4_0', v, [rows, cols]),
  },
  {
    id: KERNEL_LAYOUT.Q5_1G4,
    type: GGML.Q5_1,
    name: 'q5_1',
    block: 24,
    values: 32,
    cols: 96,
    enc: (v: Float32Array, rows: number, cols: number, _rng: Prng) => encode('q5_1', v, [rows, cols]),
  },
  {
    id: KERNEL_LAYOUT.Q4_KX4,
    type: GGML.Q4_K,
    name: 'q4_K',
    block: 144,
    values: 256,
    cols: 512,
    enc: (_v: Float32Array, rows: number, cols: number, rng: Prng) => randomQ4K(rows, cols, rng),
  },
] as const;

test('q4_0x4 / q8_0x4 / q4_Kx4 / grouped: every row comes back as its file bytes; each field lies unit by unit, rows 0..3 in turn', () => {
  const rng = new Prng(5);
  for (const c of CASES) {
    const l = interleavedLayout(c.id)!;
    const rows = 8,
      rowBytes = c.block * 3;
    const src = Uint8Array.from({ length: rows * rowBytes }, () => rng.int(256));
    const packed = interleaveRows(l, src, rowBytes, rows);
    assert.notDeepEqual(packed, src);
    const row = new Uint8Array(rowBytes);
    for (let r = 0; r < rows; r++) {
      groupedRow(l, packed, rowBytes, r, row);
      assert.deepEqual(row, src.subarray(r * rowBytes, (r + 1) * rowBytes), `${c.id} row ${r}`);
    }
    assert.throws(() => interleaveRows(l, src, rowBytes, 6), ShapeError);
  }
  // q4_0x4, group 1, block 2: row 2's d, then its qs bytes 4..7 at vector 1.
  const q40 = interleavedLayout(KERNEL_LAYOUT.Q4_0X4)!;
  const src = Uint8Array.from({ length: 8 * 54 }, (_, i) => (i * 7 + 3) & 255);
  const p0 = interleaveRows(q40, src, 54, 8);
  const g = 4 * 54 + 2 * 72;
  assert.deepEqual(p0.subarray(g + 4, g + 6), src.subarray(6 * 54 + 36, 6 * 54 + 38));
  assert.deepEqual(p0.subarray(g + 8 + 16 + 8, g + 8 + 16 + 12), src.subarray(6 * 54 + 36 + 2 + 4, 6 * 54 + 36 + 2 + 8));
  // q8_0x4, group 1, block 1 (136 B on), row 1: d at 2, qs bytes 0..31 at 8 + 32.
  const q80 = interleavedLayout(KERNEL_LAYOUT.Q8_0X4)!;
  const s8 = Uint8Array.from({ length: 8 * 68 }, (_, i) => (i * 11 + 5) & 255);
  const p8 = interleaveRows(q80, s8, 68, 8);
  const g8 = 4 * 68 + 136;
  assert.deepEqual(p8.subarray(g8 + 2, g8 + 4), s8.subarray(5 * 68 + 34, 5 * 68 + 36));
  assert.deepEqual(p8.subarray(g8 + 40, g8 + 72), s8.subarray(5 * 68 + 36, 5 * 68 + 68));
  // q5_1g4, group 1, block 2 (2 x 96 B on), row 3: its whole 24-byte block at 72.
  const g51 = interleavedLayout(KERNEL_LAYOUT.Q5_1G4)!;
  const s51 = Uint8Array.from({ length: 8 * 72 }, (_, i) => (i * 5 + 9) & 255);
  const p51 = interleaveRows(g51, s51, 72, 8);
  assert.deepEqual(p51.subarray(4 * 72 + 2 * 96 + 72, 4 * 72 + 2 * 96 + 96), s51.subarray(7 * 72 + 48, 7 * 72 + 72));
  // q4_Kx4, group 0, block 1 (576 B on), row 3: dmin at 8 + 6, scale word C (block bytes 12..15) at 48 + 12,
  // qs bytes 40..43 (vector 10) at 64 + 160 + 12.
  const q4k = interleavedLayout(KERNEL_LAYOUT.Q4_KX4)!;
  const ks = Uint8Array.from({ length: 4 * 288 }, (_, i) => (i * 13 + 1) & 255);
  const pk = interleaveRows(q4k, ks, 288, 4);
  const row3 = 3 * 288 + 144;
  assert.deepEqual(pk.subarray(576 + 14, 576 + 16), ks.subarray(row3 + 2, row3 + 4));
  assert.deepEqual(pk.subarray(576 + 60, 576 + 64), ks.subarray(row3 + 12, row3 + 16));
  assert.deepEqual(pk.subarray(576 + 64 + 160 + 12, 576 + 64 + 160 + 16), ks.subarray(row3 + 16 + 40, row3 + 16 + 44));
});

for (const c of CASES) {
  const name = c.name;
  const builds = weightType(c.id)!.repackIn!;
  test(`${builds} builds repack ${name} weights of whole row groups at load to exactly the TS ${weightTypeName(c.id)} layout; decodeRows reads either`, {
    skip,
  }, () => {
    const repacks = builds === 'all' || (builds === 'relaxed') === relaxed;
    const rng = new Prng(6);
    const cols = c.cols;
    const rowBytes = (cols / c.values) * c.block;
    const make = (rows: number, repack = true, data?: Uint8Array) => {
      const bytes = data ?? c.enc(rng.normals(rows * cols), rows, cols, rng);
      configureMatmul({ repack });
      try {
        return { w: new Weight('w', { type: c.type, dims: [cols, rows], data: bytes }), bytes };
      } finally {
        configureMatmul({ repack: true });
      }
    };
    const { w, bytes } = make(12);
    const plain = make(12, false, bytes).w;
    assert.equal(plain.packedWeight!.type, c.type);
    assert.deepEqual(arenaBytes(plain), bytes);
    if (repacks) {
      assert.equal(w.packedWeight!.type, c.id);
      assert.deepEqual(arenaBytes(w), interleaveRows(interleavedLayout(c.id)!, bytes, rowBytes, 12));
    } else assert.notEqual(w.packedWeight!.type, c.id, `a ${relaxed ? 'relaxed' : 'baseline'} build does not repack to ${weightTypeName(c.id)}`);
    const a = new Float32Array(5 * cols),
      b = new Float32Array(5 * cols);
    w.decodeRows(3, 8, a);
    plain.decodeRows(3, 8, b);
    assert.deepEqual(a, b);
    // Not whole groups, or a non-finite scale (row 5, block 1; q4_K: its dmin): kept as they are.
    assert.equal(make(6).w.packedWeight!.type, c.type);
    const inf = c.enc(rng.normals(8 * cols), 8, cols, rng);
    inf.set([0x00, 0x7c], 5 * rowBytes + c.block + (c.type === GGML.Q4_K ? 2 : 0));
    assert.equal(make(8, true, inf).w.packedWeight!.type, c.type);
  });
}
