// The in-arena matmul entry points: activations already in the arena are read and written in place, with
// the same bytes as the staged (copying) path.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { matmulShared, Weight } from '../../model/forward-weights.js';
import { allocInArena, freeInArena } from './weights.js';
import { wasmMatmulGroup, wasmMatmulGroupAt } from './matmul.js';
import { encode } from '../../formats/codec.js';
import { ArgumentError } from '../../errors.js';
import { GGML, ggmlType } from '../../gguf/types.js';
import { wasmFailure } from '../runtime/wasm.js';
import { Prng } from '../../numeric/prng.js';

const skip = wasmFailure() ? `wasm kernels unavailable: ${wasmFailure()}` : false;

/** An arena view holding a copy of `a` (caller frees .ptr). */
function arenaCopy(a: Float32Array): { ptr: number; view: Float32Array } {
  const { ptr, view } = allocInArena('test', a.length * 4);
  const f = new Float32Array(view.buffer, ptr, a.length);
  f.set(a);
  return { ptr, view: f };
}

test('arena views in, arena views out: the same bytes as staged arrays (row and tiled kernels, f32 and q8 acts, biases)', { skip }, () => {
  const rng = new Prng(21);
  const cols = 96;
  const ws = [GGML.Q8_0, GGML.F16, GGML.Q4_0].map((type, i) => {
    const rows = 13 + i;
    return new Weight(`w${i}`, { type, dims: [cols, rows], data: encode(ggmlType(type)!.name, rng.normals(rows * cols), [rows, cols]) });
  });
  const biases = ws.map((w, i) => (i === 1 ? undefined : rng.normals(w.rows)));
  for (const acts of ['f32', 'q8'] as const) {
    for (const n of [1, 3, 9]) {
      const x = rng.normals(n * cols);
      const staged = ws.map((w) => new Float32Array(n * w.rows));
      wasmMatmulGroup(
        ws.map((w) => w.packedWeight!),
        x,
        n,
        staged,
        acts,
      );
      const xa = arenaCopy(x);
      const ya = ws.map((w) => arenaCopy(new Float32Array(n * w.rows)));
      wasmMatmulGroup(
        ws.map((w) => w.packedWeight!),
        xa.view,
        n,
        ya.map((y) => y.view),
        acts,
      );
      ya.forEach((y, i) => assert.deepEqual(y.view.slice(), staged[i], `${acts} n ${n} weight ${i}`));
      // The address entry point, and a mix: arena input, plain output.
      const yb = ws.map((w) => arenaCopy(new Float32Array(n * w.rows)));
      wasmMatmulGroupAt(
        ws.map((w) => w.packedWeight!),
        xa.ptr,
        n,
        yb.map((y) => y.ptr),
        acts,
      );
      yb.forEach((y, i) => assert.deepEqual(y.view.slice(), staged[i], `At ${acts} n ${n} weight ${i}`));
      const plain = new Float32Array(n * ws[0]!.rows);
      wasmMatmulGroup([ws[0]!.packedWeight!], xa.view, n, [plain], acts);
      assert.deepEqual(plain, staged[0]);
      for (const r of [xa, ...ya, ...yb]) freeInArena(r.ptr);
    }
  }
  // Biases through matmulShared land the same in arena outputs as in plain ones.
  const n = 4;
  const x = rng.normals(n * cols);
  const plainOut = ws.map((w) => new Float32Array(n * w.rows));
  matmulShared(ws, x, n, plainOut, biases);
  const xa = arenaCopy(x);
  const ya = ws.map((w) => arenaCopy(new Float32Array(n * w.rows)));
  matmulShared(
    ws,
    xa.view,
    n,
    ya.map((y) => y.view),
    biases,
  );
  ya.forEach((y, i) => assert.deepEqual(y.view.slice(), plainOut[i], `bias weight ${i}`));
  for (const r of [xa, ...ya]) freeInArena(r.ptr);
});

test('an output overlapping the input is an ArgumentError; short arrays are ShapeErrors', { skip }, () => {
  const rng = new Prng(22);
  const cols = 32;
  const w = new Weight('w', { type: GGML.F32, dims: [cols, 8], data: new Uint8Array(rng.normals(8 * cols).buffer) });
  const xa = arenaCopy(rng.normals(2 * cols));
  try {
    assert.throws(() => wasmMatmulGroupAt([w.packedWeight!], xa.ptr, 2, [xa.ptr + 16]), ArgumentError);
    assert.throws(() => wasmMatmulGroup([w.packedWeight!], xa.view, 3, [new Float32Array(24)]), /too short/);
  } finally {
    freeInArena(xa.ptr);
  }
});
