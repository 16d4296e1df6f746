// The one thread budget: KVPACK_THREADS and the CLI's -t set what the matmuls and attention both use,
// measured in a child process per setting (the budget is read once per process).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { ArgumentError } from '../../errors.js';
import { availableCores, setThreadBudget, threadBudget } from './threads.js';
import { wasmKernels } from './wasm.js';
import { getThreads, poolFailure } from './pool.js';
import type { ThreadsResult } from '../../../test/fixtures/threads-workload.js';

const workload = fileURLToPath(new URL('../../../test/fixtures/threads-workload.js', import.meta.url));

function runWith(env: string, ...args: string[]): ThreadsResult & { error?: string } {
  const child = spawnSync(process.execPath, [workload, ...args], { encoding: 'utf8', env: { ...process.env, KVPACK_THREADS: env } });
  assert.equal(child.status, 0, child.stderr);
  return JSON.parse(child.stdout);
}

const skip = !wasmKernels() ? 'wasm kernels unavailable' : availableCores() < 2 || getThreads() < 2 ? `needs 2 cores and workers (${poolFailure()})` : false;

test('KVPACK_THREADS sets the threads of both the matmuls and attention; -t wins over it', { skip }, () => {
  // The control: at 2 both really split their work, so 1 below is the budget, not a call too small to split.
  const two = runWith('2');
  assert.deepEqual({ ...two, matmulParallelCalls: two.matmulParallelCalls > 0 }, { budget: 2, matmulThreads: 2, matmulParallelCalls: true, attendThreads: 2 });
  assert.deepEqual(runWith('1'), { budget: 1, matmulThreads: 1, matmulParallelCalls: 0, attendThreads: 1 });
  assert.deepEqual(runWith('2', '--flag', '1'), { budget: 1, matmulThreads: 1, matmulParallelCalls: 0, attendThreads: 1 });
  const flagged = runWith('1', '--flag', '2');
  assert.deepEqual([flagged.budget, flagged.attendThreads], [2, 2]);
});

test('a KVPACK_THREADS that is not a positive integer is refused by name, not read as another count', {
  skip: wasmKernels() ? false : 'wasm kernels unavailable',
}, () => {
  for (const bad of ['two', '0', '1.5', '-3']) assert.match(runWith(bad).error ?? '', /^KVPACK_THREADS must be a positive integer, got '/, bad);
  // -t given: the variable is not consulted.
  assert.equal(runWith('two', '--flag', '1').budget, 1);
});

test('setThreadBudget refuses a non-positive or fractional count and caps at the cores', () => {
  const before = threadBudget();
  try {
    for (const bad of [0, -1, 1.5, Number.NaN]) assert.throws(() => setThreadBudget(bad), ArgumentError);
    setThreadBudget(availableCores() + 5);
    assert.equal(threadBudget(), availableCores());
  } finally {
    setThreadBudget(before);
  }
});
