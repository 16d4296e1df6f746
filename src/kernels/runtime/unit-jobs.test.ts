import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DefinitionError, PoolError } from '../../errors.js';
import { ATTENTION_UNITS } from '../attention/unit-jobs.js';
import { registerUnitJobs, unitJobs, unitScratchBytes, type UnitJobs } from './unit-jobs.js';
import { runJob } from './pool.js';
import { wasmKernels } from './wasm.js';

test('unit jobs: attention registers the one kind on import; another kind is refused, and the pool runs no job of one', () => {
  assert.equal(unitJobs(), ATTENTION_UNITS);
  assert.equal(unitScratchBytes(), ATTENTION_UNITS.scratchBytes);
  registerUnitJobs(ATTENTION_UNITS); // the same kind again: a no-op
  const other = { ...ATTENTION_UNITS };
  assert.throws(() => registerUnitJobs(other), DefinitionError);
  const k = wasmKernels();
  if (!k) return;
  let ran = 0;
  const counting: UnitJobs = { ...other, segments: () => 1, run: () => void ran++ };
  assert.throws(() => runJob(k, counting, { units: 3 }, null, 2), PoolError);
  assert.equal(ran, 0);
});
