// The parity gate at a small size inside npm test (the full grid is `npm run gate`).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runGate, SMALL_GRID, nmse } from './gate.js';

test('gate: every format x op on the small grid passes (encode bit-exact, outputs within tolerance)', () => {
  const lines: string[] = [];
  const r = runGate(SMALL_GRID, (l) => lines.push(l));
  assert.ok(r.passed > 0, 'the gate ran no checks');
  assert.equal(r.failed, 0, `gate failures:\n${r.failures.join('\n')}`);
  assert.match(lines.at(-1)!, /^\d+ passed, 0 failed/);
});

test('gate: nmse is zero for equal arrays and grows with the error', () => {
  assert.equal(nmse([1, 2, 3], [1, 2, 3]), 0);
  assert.ok(nmse([1, 2, 3.3], [1, 2, 3]) > nmse([1, 2, 3.03], [1, 2, 3]));
  assert.equal(nmse([1], [0]), Infinity);
});
