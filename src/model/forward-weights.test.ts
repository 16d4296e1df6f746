import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Weight } from './forward-weights.js';
import { dequantize } from '../kernels/matmul/dequant.js';
import { GGML, ggmlType } from '../gguf/types.js';
import { Prng } from '../numeric/prng.js';
import { FileFormatError } from '../errors.js';
import { configureMatmul } from '../kernels/matmul/config.js';

// These tests check float-level agreement: pin f32 activations (q8 activations are tested in kernels/matmul/matmul.test.ts).
configureMatmul({ activations: 'f32' });

/** Random blocks with their f16 scale fields set to finite values (offsets per ggml's block structs). */
function randomTensor(type: number, rows: number, cols: number, rng: Prng): Uint8Array {
  const t = ggmlType(type)!;
  const bytes = new Uint8Array((cols / t.blockValues) * t.blockBytes * rows);
  for (let i = 0; i < bytes.length; i++) bytes[i] = rng.int(256);
  const f16 = (at: number) => {
    bytes[at] = rng.int(256);
    bytes[at + 1] = 0x2c + rng.int(8);
  };
  for (let b = 0; b < bytes.length; b += t.blockBytes) {
    if (type === GGML.Q8_0) f16(b);
    if (type === GGML.Q4_K || type === GGML.Q5_K) {
      f16(b);
      f16(b + 2);
    }
    if (type === GGML.Q6_K) f16(b + 208);
    if (type === GGML.F16) f16(b);
  }
  return bytes;
}

for (const type of [GGML.F16, GGML.Q8_0, GGML.Q4_K, GGML.Q5_K, GGML.Q6_K]) {
  test(`${ggmlType(type)!.name}: blocked matmul equals dequantize-then-multiply, batch and single`, () => {
    const rng = new Prng(type + 1);
    // 37 rows: not a multiple of any row block.
    const rows = 37,
      cols = 512,
      n = 3;
    const data = randomTensor(type, rows, cols, rng);
    const w = new Weight('w', { type, dims: [cols, rows], data });
    const full = dequantize(type, data, rows * cols, 'w');
    const x = rng.normals(n * cols);
    const y = new Float32Array(n * rows);
    w.matmul(x, n, y);
    for (let t = 0; t < n; t++) {
      const one = new Float32Array(rows);
      w.matmul(x.subarray(t * cols, (t + 1) * cols), 1, one);
      for (let r = 0; r < rows; r++) {
        let s = 0;
        for (let c = 0; c < cols; c++) s += full[r * cols + c]! * x[t * cols + c]!;
        assert.ok(Math.abs(y[t * rows + r]! - s) <= 1e-4 * (1 + Math.abs(s)), `t ${t} r ${r}: ${y[t * rows + r]} vs ${s}`);
        assert.ok(Math.abs(one[r]! - y[t * rows + r]!) <= 1e-4 * (1 + Math.abs(s)), `single vs batch t ${t} r ${r}`);
      }
    }
    assert.equal(w.nbytes, data.length);
  });
}

test('an unsupported weight type is an error naming the tensor and type', () => {
  const data = new Uint8Array(84);
  assert.throws(
    () => new Weight('blk.0.attn_q.weight', { type: 10, dims: [256, 1], data }),
    (e: unknown) => e instanceof FileFormatError && /attn_q.*q2_K/.test(e.message),
  );
});
