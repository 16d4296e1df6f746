// Loading holds the weights once: every matrix's bytes go from the source straight into the wasm arena
// (or, expanded, through a bounded chunk), never through a tensor-sized `read` allocation.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HEADER_CHUNK_BYTES } from '../gguf/limits.js';
import { modelFromGguf, type LoadedModel } from '../gguf/model.js';
import { parseGguf, readGgufFrom } from '../gguf/reader.js';
import { tinyLlama } from '../../test/fixtures/tiny.js';
import { encodeGguf } from '../gguf/writer.js';
import { schemePolicy } from '../cache/schemes.js';
import { wasmFailure } from '../kernels/runtime/wasm.js';
import { modelFromLoaded } from './model.js';
import { spy } from '../../test/fixtures/spy-source.js';

const overlaps = (a0: number, a1: number, b0: number, b1: number) => a0 < b1 && b0 < a1;

/** The same tensors as plain in-memory arrays (the pre-lazy loader's shape), for a reference forward pass. */
function eager(bytes: Uint8Array): LoadedModel {
  const m = modelFromGguf(parseGguf(bytes));
  const tensors = new Map([...m.tensors].map(([k, t]) => [k, { type: t.type, dims: t.dims, data: t.data.slice() }]));
  return { ...m, tensors };
}

const skip = wasmFailure() ? `wasm kernels unavailable: ${wasmFailure()}` : false;

for (const expand of [false, true]) {
  test(`loading (expand ${expand}) reads each matrix once into its final place, never via a tensor-sized read`, { skip }, () => {
    const bytes = encodeGguf(tinyLlama({ weightType: 'q8_0', separateOutput: true }));
    const src = spy(bytes);
    const file = readGgufFrom(src);
    const model = modelFromLoaded(modelFromGguf(file), { expand });
    const matrices = file.tensors.filter((t) => t.dims.length === 2);
    assert.ok(matrices.length >= 9);
    // The header parser reads bounded chunks starting inside the header (in a small file they reach past it).
    const header = src.reads.filter(([o]) => o < file.dataStart);
    for (const [, n] of header) assert.ok(n <= HEADER_CHUNK_BYTES, `header read of ${n} B`);
    const reads = src.reads.filter(([o]) => o >= file.dataStart);
    for (const t of matrices) {
      const end = t.offset + t.bytes;
      const bad = reads.filter(([o, n]) => overlaps(o, o + n, t.offset, end));
      assert.deepEqual(bad, [], `${t.name}: read() touched its bytes`);
      const into = src.intos.filter(([o, n]) => overlaps(o, o + n, t.offset, end));
      // Packed: one read into the arena. Expanded: chunks into a transient buffer, decoded into the arena.
      assert.equal(
        into.reduce((a, [, n]) => a + n, 0),
        t.bytes,
        `${t.name}: bytes read once`,
      );
      if (!expand) assert.deepEqual(into, [[t.offset, t.bytes, true]], `${t.name}: one read into the arena`);
    }
    assert.equal(
      model.weightBytes,
      matrices.reduce((a, t) => a + (expand ? 4 * t.elements : t.bytes), 0),
    );
    // Same logits as a model built from plain in-memory tensors.
    const ref = modelFromLoaded(eager(bytes), { expand });
    const cacheA = model.createCache({ policy: schemePolicy('f16'), capacity: 128 });
    const cacheB = ref.createCache({ policy: schemePolicy('f16'), capacity: 128 });
    assert.deepEqual(model.forward([1, 5, 9, 200], cacheA), ref.forward([1, 5, 9, 200], cacheB));
    cacheA.dispose();
    cacheB.dispose();
  });
}
