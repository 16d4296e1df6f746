// The parity gate at a small size inside npm test (the full grid is `npm run gate`).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runGate, SMALL_GRID, nmse } from '../../src/parity/gate.js';
import { wasmKernels, wasmFailure } from '../../src/kernels/runtime/wasm.js';

test('gate: the wasm kernel module loaded (only KVPACK_NO_WASM=1 runs the suite without it)', (t) => {
  if (process.env['KVPACK_NO_WASM'] === '1') return t.skip('KVPACK_NO_WASM=1: the reference-only configuration was asked for');
  assert.ok(wasmKernels(), `the wasm kernels did not load: ${wasmFailure()}`);
});

test('gate: every format x op on the small grid passes (encode bit-exact, outputs within tolerance), wasm ran wherever registered', () => {
  const lines: string[] = [];
  const r = runGate(SMALL_GRID, (l) => lines.push(l));
  assert.ok(r.passed > 0, 'the gate ran no checks');
  assert.equal(r.failed, 0, `gate failures:\n${r.failures.join('\n')}`);
  assert.deepEqual(r.neverRan, [], 'registered wasm kernels the grid never ran');
  assert.equal(r.fallback, 0, 'ops without a wasm kernel');
  // Negative control: at head dim 64 the 128-value-row kernels must be reported as not taking the shape.
  if (wasmKernels())
    assert.ok(
      lines.some((l) => /^N\/A {2}scores int4_g128 D=64/.test(l)),
      'int4_g128 at D=64 was not reported as n/a',
    );
  assert.match(lines.at(-1)!, /^\d+ passed, 0 failed \(0 ref fallback, \d+ n\/a by shape\)/);
});

test('gate: nmse is zero for equal arrays and grows with the error', () => {
  assert.equal(nmse([1, 2, 3], [1, 2, 3]), 0);
  assert.ok(nmse([1, 2, 3.3], [1, 2, 3]) > nmse([1, 2, 3.03], [1, 2, 3]));
  assert.equal(nmse([1], [0]), Infinity);
});
