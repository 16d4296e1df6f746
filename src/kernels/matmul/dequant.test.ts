// dequantize(): supported types decode (bit-exactness vs ggml is in test/golden/kquants.test.ts);
// unsupported types and wrong sizes are errors naming the tensor and type.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FileFormatError } from '../../errors.js';
import { encode } from '../../formats/codec.js';
import { Prng } from '../../numeric/prng.js';
import { canDequantize, dequantize, dequantizeTensor, dequantTypes } from './dequant.js';
import { GGML } from '../../gguf/types.js';

test('every weight type the loader promises is dequantizable', () => {
  const want = [GGML.F32, GGML.F16, GGML.BF16, GGML.Q8_0, GGML.Q4_0, GGML.Q4_1, GGML.Q5_0, GGML.Q5_1, GGML.IQ4_NL, GGML.Q4_K, GGML.Q5_K, GGML.Q6_K];
  assert.deepEqual(
    dequantTypes(),
    [...want].sort((a, b) => a - b),
  );
});

test('f32 passes through; q8_0 decodes what the q8_0 format encoded', () => {
  const x = new Prng(3).normals(64);
  assert.deepEqual(dequantize(GGML.F32, new Uint8Array(x.buffer), 64), x);
  const y = dequantizeTensor({ name: 'w', type: GGML.Q8_0, dims: [32, 2] }, encode('q8_0', x, [2, 32]));
  for (let i = 0; i < 64; i++) assert.ok(Math.abs(y[i]! - x[i]!) <= 0.02 * Math.max(...x.map(Math.abs)));
});

test('unsupported or unknown types name the tensor and the type', () => {
  assert.equal(canDequantize(16), false);
  assert.throws(
    () => dequantize(16, new Uint8Array(66), 256, 'blk.0.attn_q.weight'),
    (e: unknown) =>
      e instanceof FileFormatError &&
      /tensor 'blk.0.attn_q.weight': weight type iq2_xxs \(id 16\) is not supported \(supported: f32, f16, q4_0/.test(e.message),
  );
  assert.throws(() => dequantize(99, new Uint8Array(4), 1, 'x'), /tensor 'x': weight type unknown \(id 99\) is not supported/);
});

test('sizes that do not match the type are errors, not garbage', () => {
  assert.throws(() => dequantize(GGML.Q4_K, new Uint8Array(144), 255, 't'), /255 values is not a whole number of q4_K blocks of 256/);
  assert.throws(() => dequantize(GGML.Q6_K, new Uint8Array(200), 256, 't'), /q6_K data is 200 B, 256 values need 210 B/);
});
