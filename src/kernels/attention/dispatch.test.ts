// The kernel table is the only dispatch: rows are data, attention and lookups resolve through them, and
// kernels given to registerKernel are the ones attention calls.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { sep } from 'node:path';
import { KvpackError } from '../../errors.js';
import { hasKernel, lookupKernel, registerKernel, unregisterKernel, registeredKernels } from './registry.js';
import { KERNEL_TABLE } from './table.js';
import { attend, FREE_POOL_MIN_WORK, integerQPrecisions, hasIntegerV, PARALLEL_MIN_WORK, setForceReference } from './attend.js';
import { notePoolFaster, poolLatelyFaster } from '../runtime/pool-verdict.js';
import { wasmKernels } from '../runtime/wasm.js';
import { getThreads, poolFailure } from '../runtime/pool.js';
import { formats, getFormat } from '../../formats/registry.js';
import { Prng } from '../../numeric/prng.js';
import type { MixedView } from './view.js';
import { fromRoot } from '../../../test/paths.js';
import { buildView, freeAll, type Allocations } from '../../parity/build-view.js';

// First in the file: nothing has looked a kernel up yet (no lazy registration has happened).
test('registry: a key the kernel table holds is refused at once, before any lookup; lookups still work after', () => {
  const fn = () => {};
  assert.throws(
    () => registerKernel('q8_0', 'scores', 'wasm', fn),
    (e: unknown) => e instanceof KvpackError && e.code === 'DUPLICATE_KERNEL',
  );
  assert.doesNotThrow(() => lookupKernel('q8_0', 'scores'));
  assert.throws(
    () => registerKernel('q8_0', 'scores', 'wasm', fn),
    (e: unknown) => e instanceof KvpackError && e.code === 'DUPLICATE_KERNEL',
  );
});

/** One bulk segment of `id` K/V, kvHeads x L tokens, in arena memory (channel formats in whole groups). */
function bulkView(id: string, kvHeads: number, L: number, D: number, rng: Prng): { view: MixedView; free: () => void } {
  const f = getFormat(id);
  const allocs: Allocations = [];
  const run = () => ({ format: f, tokens: L, values: rng.normals(kvHeads * L * D) });
  const view = buildView([run(), run()], [{ region: 'bulk', count: L, k: { run: 0, first: 0 }, v: { run: 1, first: 0 } }], kvHeads, D, allocs);
  return { view, free: () => freeAll(allocs) };
}

test('registry: a kernel given to registerKernel after the first lookups is the one attention calls; attend reports it', (t) => {
  if (!wasmKernels()) return t.skip('wasm kernels unavailable: attention takes the reference path');
  assert.equal(lookupKernel('q4_0', 'scores').impl, 'wasm');
  const ref = lookupKernel('q4_0', 'scores', 'ref').fn;
  let calls = 0;
  registerKernel('q4_0', 'scores', 'js', (...a: Parameters<typeof ref>) => {
    calls++;
    ref(...a);
  });
  try {
    const rng = new Prng(3);
    const { view, free } = bulkView('q4_0', 2, 300, 64, rng);
    const q = rng.normals(4 * 64);
    const out = new Float32Array(q.length);
    const rep = attend({ view, q, heads: 4, out, threads: 1 });
    free();
    assert.ok(calls > 0, 'the registered kernel was never called');
    assert.equal(rep.path, 'fast');
    assert.ok(rep.kernels.includes('q4_0:scores:f32:js'), `report: ${rep.kernels.join(', ')}`);
    assert.ok(rep.kernels.includes('q4_0:accumulate:f32:wasm'), `report: ${rep.kernels.join(', ')}`);
    assert.equal(lookupKernel('q4_0', 'scores').impl, 'js', 'a lookup without impl prefers the registered kernel');
  } finally {
    unregisterKernel('q4_0', 'scores', 'js');
  }
  assert.equal(lookupKernel('q4_0', 'scores').impl, 'wasm');
});

test('registry: table rows are plain data naming exports the module has; integer-q and w16 variants are rows', (t) => {
  const keys = new Set<string>();
  for (const r of KERNEL_TABLE) {
    assert.ok(formats.has(r.format), `row for unknown format ${r.format}`);
    assert.equal(r.impl, 'wasm');
    assert.equal(typeof r.export, 'string');
    assert.equal(typeof r.abi, 'string');
    const key = `${r.format}:${r.op}:${r.precision}:${r.impl}`;
    assert.ok(!keys.has(key), `two rows for ${key}`);
    keys.add(key);
  }
  // JSON round trip: nothing in a row is a function or a class instance.
  assert.deepEqual(JSON.parse(JSON.stringify(KERNEL_TABLE)), KERNEL_TABLE);
  for (const f of formats.values()) {
    const declared = KERNEL_TABLE.filter((r) => r.format === f.id && r.op === 'scores' && r.precision !== 'f32').map((r) => r.precision);
    assert.deepEqual(integerQPrecisions(f), wasmKernels() ? declared : []);
    assert.equal(hasIntegerV(f), !!wasmKernels() && KERNEL_TABLE.some((r) => r.format === f.id && r.op === 'accumulate' && r.precision === 'int16'));
  }
  const k = wasmKernels();
  if (!k) return t.skip('wasm kernels unavailable: exports not checked');
  for (const r of KERNEL_TABLE) assert.equal(typeof k.exports[r.export], 'function', `row ${r.format}:${r.op}:${r.precision} names missing export ${r.export}`);
  for (const r of KERNEL_TABLE) if (r.precision === 'f32') assert.ok(hasKernel(r.format, r.op, 'wasm'), `${r.format}:${r.op}`);
  assert.ok(registeredKernels().includes('q4_0:scores:int8:wasm'));
});

test('registry: kernels/ builds no export name from a string and tests no format id', () => {
  const dir = fromRoot('src/kernels');
  const names = readdirSync(dir, { recursive: true, encoding: 'utf8' }).map((n) => n.split(sep).join('/'));
  assert.ok(names.includes('attention/attend.ts'), 'the walk reaches the sub-folders');
  for (const name of names) {
    if (!name.endsWith('.ts') || name.endsWith('.test.ts') || name === 'attention/table.ts' || name === 'runtime/wasm-binary.ts') continue;
    const src = readFileSync(`${dir}/${name}`, 'utf8');
    assert.doesNotMatch(src, /\$\{[^}]*\}_(scores|accum|encode|decode)/, `${name} builds an export name`);
    assert.doesNotMatch(src, /\.id === '/, `${name} tests a format id`);
  }
});

test('attend: reports the kernels that ran, and the reference path when forced', (t) => {
  if (!wasmKernels()) return t.skip('wasm kernels unavailable');
  const rng = new Prng(4);
  const { view, free } = bulkView('q8_0', 1, 100, 128, rng);
  const q = rng.normals(2 * 128);
  const out = new Float32Array(q.length);
  const fast = attend({ view, q, heads: 2, out, threads: 1, qPrecision: 'int8', vPrecision: 'int16' });
  assert.deepEqual([...fast.kernels].sort(), ['q8_0:accumulate:int16:wasm', 'q8_0:scores:int8:wasm']);
  setForceReference(true);
  try {
    assert.deepEqual(attend({ view, q, heads: 2, out }), { path: 'reference', kernels: [], threads: 1 });
  } finally {
    setForceReference(false);
  }
  free();
  // int4_g128 at head dim 64: its wasm kernels need whole 128-value rows, so the reference kernels serve it.
  const g = bulkView('int4_g128', 1, 40, 64, rng);
  const r64 = attend({ view: g.view, q: rng.normals(2 * 64), heads: 2, out: new Float32Array(2 * 64), threads: 1 });
  assert.deepEqual([...r64.kernels].sort(), ['int4_g128:accumulate:f32:ref', 'int4_g128:scores:f32:ref']);
  g.free();
});

test('attend: pool workers resolve the same rows; a job with a JS kernel stays on the calling thread', (t) => {
  if (!wasmKernels()) return t.skip('wasm kernels unavailable');
  if (getThreads() < 2) return t.skip(`one core or no worker_threads (${poolFailure() || 'threads = 1'})`);
  const rng = new Prng(5);
  const { view, free } = bulkView('q2c_0', 2, 3000, 64, rng);
  const q = rng.normals(16 * 64);
  const one = new Float32Array(q.length);
  const two = new Float32Array(q.length);
  const r1 = attend({ view, q, heads: 16, out: one, threads: 1 });
  const r2 = attend({ view, q, heads: 16, out: two, threads: 2, minParallelWork: 0 });
  assert.deepEqual(r2.kernels, r1.kernels);
  assert.equal(r2.threads, 2);
  let m = 0;
  for (let i = 0; i < one.length; i++) m = Math.max(m, Math.abs(one[i]! - two[i]!));
  assert.ok(m < 1e-5, `1 vs 2 threads differ by ${m}`);
  const ref = lookupKernel('q2c_0', 'accumulate', 'ref').fn;
  let calls = 0;
  registerKernel('q2c_0', 'accumulate', 'js', (...a: Parameters<typeof ref>) => {
    calls++;
    ref(...a);
  });
  try {
    const r3 = attend({ view, q, heads: 16, out: two, threads: 2, minParallelWork: 0 });
    assert.equal(r3.threads, 1, 'a JS kernel cannot run in a worker');
    assert.ok(calls > 0 && r3.kernels.includes('q2c_0:accumulate:f32:js'));
  } finally {
    unregisterKernel('q2c_0', 'accumulate', 'js');
  }
  free();
});

test('attend: calls between the free-pool and the pool thresholds use the pool only while the matmuls find it faster, with the same bits', (t) => {
  if (!wasmKernels()) return t.skip('wasm kernels unavailable');
  if (getThreads() < 2) return t.skip(`one core or no worker_threads (${poolFailure() || 'threads = 1'})`);
  const rng = new Prng(6);
  // 12 query heads x 1000 positions: 12,000 evaluations, between the two thresholds.
  const positions = 1000;
  assert.ok(12 * positions >= FREE_POOL_MIN_WORK && 12 * positions < PARALLEL_MIN_WORK);
  const { view, free } = bulkView('q2c_0', 4, positions, 64, rng);
  const q = rng.normals(12 * 64);
  const was = poolLatelyFaster();
  try {
    notePoolFaster(false);
    const alone = new Float32Array(q.length);
    assert.equal(attend({ view, q, heads: 12, out: alone, threads: 2 }).threads, 1);
    notePoolFaster(true);
    const pooled = new Float32Array(q.length);
    assert.equal(attend({ view, q, heads: 12, out: pooled, threads: 2 }).threads, 2);
    assert.deepEqual(pooled, alone, 'the same units whatever the threads: the same bits');
    // Below the free-pool threshold, and with one thread allowed, the verdict changes nothing.
    assert.ok(4 * positions < FREE_POOL_MIN_WORK);
    assert.equal(attend({ view, q: q.subarray(0, 4 * 64), heads: 4, out: new Float32Array(4 * 64), threads: 2 }).threads, 1);
    assert.equal(attend({ view, q, heads: 12, out: pooled, threads: 1 }).threads, 1);
  } finally {
    notePoolFaster(was);
  }
  free();
});
