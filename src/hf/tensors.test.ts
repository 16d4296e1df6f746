// Lazy safetensors tensors: a plain matrix is one read straight into the caller's memory; a permuted one
// reads each head once; partial reads equal slices of the whole; vectors widen to f32 with their shift.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ArgumentError, FileFormatError } from '../errors.js';
import { encode } from '../formats/codec.js';
import { GGML } from '../gguf/types.js';
import { readSafetensorsFrom } from './safetensors.js';
import { interleavedHalvesSource, matrixTensor, vectorTensor } from './tensors.js';
import { encodeSafetensors, f32Bytes } from '../../test/fixtures/safetensors-writer.js';
import { spy } from '../../test/fixtures/spy-source.js';

/** A [rows, cols] F32 matrix whose value at (r, c) is 100 r + c, plus small vectors in each dtype. */
function file() {
  const rows = 8;
  const cols = 3;
  const m = Float32Array.from({ length: rows * cols }, (_, i) => 100 * Math.floor(i / cols) + (i % cols));
  const v = Float32Array.from([0.5, -1.25, 2, 0.125]);
  const bytes = encodeSafetensors([
    { name: 'm', dtype: 'F32', shape: [rows, cols], data: f32Bytes(m) },
    { name: 'm16', dtype: 'BF16', shape: [rows, cols], data: encode('bf16', m) },
    { name: 'v32', dtype: 'F32', shape: [4], data: f32Bytes(v) },
    { name: 'v16', dtype: 'F16', shape: [4], data: encode('f16', v) },
    { name: 'vb16', dtype: 'BF16', shape: [4], data: encode('bf16', v) },
  ]);
  const src = spy(bytes);
  return { src, f: readSafetensorsFrom(src), rows, cols, v };
}

const rowsOf = (data: Uint8Array, cols: number) =>
  Array.from(new Float32Array(data.slice().buffer), (x, i) => (i % cols === 0 ? x / 100 : -1)).filter((x) => x >= 0);

test('a matrix keeps its dtype, reverses its dims, and is read once straight into the destination', () => {
  const { src, f, cols } = file();
  src.reads.length = 0;
  const t = matrixTensor(f.tensors.get('m')!);
  assert.deepEqual([t.type, t.dims, t.nbytes], [GGML.F32, [3, 8], 96]);
  const dst = new Uint8Array(96);
  t.readInto!(dst);
  assert.deepEqual(
    src.intos.map(([o, n]) => [o, n]),
    [[f.tensors.get('m')!.offset, 96]],
  );
  assert.deepEqual(src.reads, []);
  assert.deepEqual(rowsOf(dst, cols), [0, 1, 2, 3, 4, 5, 6, 7]);
  assert.equal(matrixTensor(f.tensors.get('m16')!).type, GGML.BF16);
  // Trimmed to the first rows (gemma3's embedding beyond its vocabulary).
  const trimmed = matrixTensor(f.tensors.get('m')!, { rows: 5 });
  assert.deepEqual(
    [trimmed.dims, rowsOf(trimmed.data, cols)],
    [
      [3, 5],
      [0, 1, 2, 3, 4],
    ],
  );
  assert.throws(
    () => t.readInto!(new Uint8Array(8), 92),
    (e: unknown) => e instanceof ArgumentError && /outside tensor 'm'/.test(e.message),
  );
});

test('llama q/k permutation: within each head, output rows (2i, 2i+1) are stored rows (i, half + i)', () => {
  const { src, f, cols } = file();
  const perm = { groupRows: 4, source: interleavedHalvesSource };
  const t = matrixTensor(f.tensors.get('m')!, { perm });
  src.intos.length = 0;
  const whole = t.data;
  assert.deepEqual(rowsOf(whole, cols), [0, 2, 1, 3, 4, 6, 5, 7]);
  assert.equal(src.intos.length, 2, 'one read per head');
  // Any byte range equals the same slice of the whole, across head boundaries too.
  for (const [at, n] of [
    [0, 96],
    [4, 8],
    [40, 20],
    [44, 52],
    [95, 1],
  ] as const) {
    const part = new Uint8Array(n);
    t.readInto!(part, at);
    assert.deepEqual(part, whole.subarray(at, at + n), `bytes ${at}..${at + n}`);
  }
  assert.throws(() => matrixTensor(f.tensors.get('m')!, { perm: { ...perm, groupRows: 3 } }), FileFormatError);
});

test('vectors widen to f32 from every dtype, with the shift and the permutation applied', () => {
  const { f, v } = file();
  for (const name of ['v32', 'v16', 'vb16']) {
    const t = vectorTensor(f.tensors.get(name)!, { shift: 1 });
    assert.deepEqual([t.type, t.dims, t.nbytes], [GGML.F32, [4], 16]);
    assert.deepEqual(
      new Float32Array(t.data.slice().buffer),
      v.map((x) => x + 1),
      name,
    );
  }
  const p = vectorTensor(f.tensors.get('v32')!, { perm: { groupRows: 4, source: interleavedHalvesSource } });
  assert.deepEqual(new Float32Array(p.data.slice().buffer), Float32Array.from([v[0]!, v[2]!, v[1]!, v[3]!]));
  const part = new Uint8Array(8);
  p.readInto!(part, 4);
  assert.deepEqual(part, p.data.subarray(4, 12));
  assert.throws(() => vectorTensor(f.tensors.get('m')!), /expected a vector/);
  assert.throws(() => matrixTensor(f.tensors.get('v32')!), /expected a matrix/);
});
