// The matmul parity gate at a small size inside npm test (the full grid runs in `npm run gate`).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runMatmulGate, SMALL_MATMUL_GRID, worstError } from './matmul-gate.js';
import { matmulTolerance } from './matmul-weights.js';
import { Prng } from '../../src/numeric/prng.js';
import { wasmFailure } from '../../src/kernels/runtime/wasm.js';

test('matmul gate: every weight type x token path on the small grid matches the reference, every fast kernel ran', {
  skip: wasmFailure() ? `wasm kernels unavailable: ${wasmFailure()}` : false,
}, () => {
  const lines: string[] = [];
  const r = runMatmulGate(SMALL_MATMUL_GRID, (l) => lines.push(l));
  assert.ok(r.passed > 0, 'the gate ran no checks');
  assert.equal(r.failed, 0, `matmul gate failures:\n${r.failures.join('\n')}`);
  assert.match(lines.at(-1)!, /^matmul: \d+ passed, 0 failed/);
});

test('matmul gate: the bound check fails an output off by more than its bound (negative control)', () => {
  const rng = new Prng(3);
  const rows = 3,
    cols = 64;
  const full = rng.normals(rows * cols);
  const x = rng.normals(cols);
  const ref = new Float32Array(rows);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) ref[r]! += full[r * cols + c]! * x[c]!;
  const tol = matmulTolerance(full, x, rows, cols, 32);
  const y = ref.slice();
  assert.ok(worstError(y, ref, full, x, 1, rows, cols, 32).worst <= 1);
  y[1]! += 1.5 * tol[1]!;
  assert.ok(worstError(y, ref, full, x, 1, rows, cols, 32).worst > 1, 'an error of 1.5x the bound fails');
  y[1] = NaN;
  assert.equal(worstError(y, ref, full, x, 1, rows, cols, 32).worst, Infinity, 'a NaN output fails');
});
