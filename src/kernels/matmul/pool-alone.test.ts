// Imports the matmul path only (no attention, no model): the pool's workers must still start for it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ALWAYS_POOL_MACS, configureMatmul } from './config.js';
import { wasmMatmul } from './matmul.js';
import { matmulSplitStats } from './job.js';
import { availableCores } from '../runtime/threads.js';
import { poolFailure, poolStats } from '../runtime/pool.js';
import { wasmKernels, wasmFailure } from '../runtime/wasm.js';
import { Weight } from '../../model/forward-weights.js';
import { GGML } from '../../gguf/types.js';
import { Prng } from '../../numeric/prng.js';

test('matmul alone: a two-thread matmul runs units on a pool worker, not all on the caller', (t) => {
  if (!wasmKernels()) return t.skip(`wasm kernels unavailable: ${wasmFailure()}`);
  if (availableCores() < 2) return t.skip('one core: no worker to run on');
  const rows = 512;
  const cols = 512;
  const n = 64;
  const rng = new Prng(3);
  const data = new Uint8Array(new Float32Array(rows * cols).map(() => rng.normal()).buffer);
  const w = new Weight('w', { type: GGML.F32, dims: [cols, rows], data }).packedWeight!;
  const x = new Float32Array(n * cols).map(() => rng.normal());
  const y = new Float32Array(n * rows);
  configureMatmul({ threads: 2, threadChoice: 'always' });
  try {
    const before = matmulSplitStats();
    for (let i = 0; i < 4; i++) wasmMatmul(w, x, n, y);
    const after = matmulSplitStats();
    const units = after.units - before.units;
    const callers = after.callerUnits - before.callerUnits;
    assert.equal(poolFailure(), '', 'the pool did not start');
    assert.ok(poolStats().workers >= 1, 'no worker');
    assert.ok(units > 0 && callers < units, `the caller ran ${callers} of ${units} units: no worker took any`);
  } finally {
    configureMatmul({ threadChoice: 'measured' });
  }
});

test('matmul: calls of ALWAYS_POOL_MACS and more run on the pool from the first call, never probed on one thread', (t) => {
  if (!wasmKernels()) return t.skip(`wasm kernels unavailable: ${wasmFailure()}`);
  if (availableCores() < 2) return t.skip('one core: no worker to run on');
  const rows = 2048;
  const cols = 2048;
  const n = ALWAYS_POOL_MACS / (rows * cols);
  // q8_0 rows of random int8 values with d = 1/64 (f16 0x2400).
  const rng = new Prng(5);
  const data = new Uint8Array(rows * (cols / 32) * 34);
  for (let b = 0; b < data.length; b += 34) {
    data[b] = 0x00;
    data[b + 1] = 0x24;
    for (let i = 2; i < 34; i++) data[b + i] = rng.int(256);
  }
  const w = new Weight('w8', { type: GGML.Q8_0, dims: [cols, rows], data }).packedWeight!;
  const x = new Float32Array(n * cols).map(() => rng.normal());
  const y = new Float32Array(n * rows);
  configureMatmul({ threads: 2, threadChoice: 'measured' });
  const before = matmulSplitStats().calls;
  // The chooser would time one thread on the 8th call of a size class (after 3 pool times and a warm-up).
  const calls = 12;
  for (let i = 0; i < calls; i++) wasmMatmul(w, x, n, y);
  assert.equal(matmulSplitStats().calls - before, calls, 'a big call ran on one thread (the chooser probed it)');
});
