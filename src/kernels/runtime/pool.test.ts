import { test } from 'node:test';
import assert from 'node:assert/strict';
import { attend, PARALLEL_MIN_WORK } from '../attention/attend.js';
import { attendReference } from '../attention/reference.js';
import { getThreads, holdWorkers, poolFailure, poolStats, releaseWorkers, runCalls, SPIN_MS } from './pool.js';
import { wasmKernels } from './wasm.js';
import { sharedArena } from './arena.js';
import { getFormat } from '../../formats/registry.js';
import { bytesFor } from '../../formats/format.js';
import { encodeRows } from '../attention/encode.js';
import { Prng } from '../../numeric/prng.js';
import { PoolError } from '../../errors.js';
import type { MixedView } from '../attention/view.js';

/** One bulk segment of `id` K/V, kvHeads x L tokens, in arena memory. */
function bulkView(id: string, kvHeads: number, L: number, D: number, rng: Prng): { view: MixedView; free: () => void } {
  const f = getFormat(id);
  const a = sharedArena();
  const stride = bytesFor(f, L, D);
  const k = a.alloc(kvHeads * stride);
  const v = a.alloc(kvHeads * stride);
  for (const off of [k, v]) for (let h = 0; h < kvHeads; h++) encodeRows(f, rng.normals(L * D), 0, D, L, D, a.u8(), off + h * stride);
  const bytes = a.u8();
  const run = (off: number) => ({ format: f, bytes, offset: off, headStride: stride, first: 0 });
  return {
    view: { headDim: D, kvHeads, length: L, segments: [{ start: 0, count: L, k: run(k), v: run(v), region: 'bulk' }] },
    free: () => {
      a.free(k);
      a.free(v);
    },
  };
}

function maxDiff(a: Float32Array, b: Float32Array): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

test("pool: two threads (split sequences, merged softmax) give one thread's result", (t) => {
  if (!wasmKernels()) return t.skip('wasm kernels unavailable');
  if (getThreads() < 2) return t.skip(`one core or no worker_threads (${poolFailure() || 'threads = 1'})`);
  const rng = new Prng(11);
  const D = 64;
  const L = 5000; // not a multiple of 32: the last split ends mid-group
  const heads = 16;
  const { view, free } = bulkView('q4_0', 2, L, D, rng);
  assert.ok(heads * L >= PARALLEL_MIN_WORK, 'the case must be big enough to use the pool');
  for (const nq of [1, 3]) {
    const q = rng.normals(nq * heads * D);
    const positions = nq === 1 ? undefined : [L - 3, L - 2, L - 1];
    const one = new Float32Array(q.length);
    const two = new Float32Array(q.length);
    const ref = new Float32Array(q.length);
    attend({ view, q, heads, out: one, positions, threads: 1 });
    attend({ view, q, heads, out: two, positions, threads: 2 });
    attendReference({ view, q, heads, out: ref, positions });
    assert.equal(poolFailure(), '', 'the pool started');
    assert.ok(maxDiff(one, two) < 1e-5, `1 vs 2 threads differ by ${maxDiff(one, two)}`);
    assert.ok(maxDiff(two, ref) < 1e-4, `2 threads vs reference differ by ${maxDiff(two, ref)}`);
  }
  free();
});

test('pool: small calls stay on the calling thread and match the reference', (t) => {
  if (!wasmKernels()) return t.skip('wasm kernels unavailable');
  const rng = new Prng(12);
  const { view, free } = bulkView('q8_0', 1, 40, 32, rng);
  const q = rng.normals(4 * 32);
  const got = new Float32Array(q.length);
  const want = new Float32Array(q.length);
  attend({ view, q, heads: 4, out: got, threads: 2 });
  attendReference({ view, q, heads: 4, out: want });
  assert.ok(maxDiff(got, want) < 1e-5);
  free();
});

test('attend: a long prefill run in query batches (small partial budget) gives the one-batch result', (t) => {
  if (!wasmKernels()) return t.skip('wasm kernels unavailable');
  const rng = new Prng(13);
  const D = 32;
  const L = 300;
  const heads = 8; // G = 4: 16 queries per unit
  const { view, free } = bulkView('q8_0', 2, L, D, rng);
  const nq = 70;
  const q = rng.normals(nq * heads * D);
  const positions = Array.from({ length: nq }, (_, i) => L - nq + i);
  const one = new Float32Array(q.length);
  const batched = new Float32Array(q.length);
  const ref = new Float32Array(q.length);
  attend({ view, q, heads, out: one, positions, threads: 1 });
  attend({ view, q, heads, out: batched, positions, threads: 1, partBudget: 1 }); // one query chunk per batch
  attendReference({ view, q, heads, out: ref, positions });
  assert.equal(maxDiff(one, batched), 0, 'batching changes nothing but scheduling');
  assert.ok(maxDiff(one, ref) < 1e-4, `vs reference ${maxDiff(one, ref)}`);
  free();
});

test('pool: kernel calls and attention units share the workers; interleaved jobs stay correct', (t) => {
  const k = wasmKernels();
  if (!k) return t.skip('wasm kernels unavailable');
  if (getThreads() < 2) return t.skip(`one core or no worker_threads (${poolFailure() || 'threads = 1'})`);
  const rng = new Prng(14);
  const { view, free } = bulkView('q4_0', 2, 3000, 64, rng);
  const heads = 16;
  const q = rng.normals(heads * 64);
  const want = new Float32Array(q.length);
  attend({ view, q, heads, out: want, threads: 1 });
  const n = 4096;
  const buf = k.arena.alloc(2 * n * 4);
  const got = new Float32Array(q.length);
  // Alternate job kinds back to back: a worker that wakes late for one must never act on the next.
  for (let i = 0; i < 200; i++) {
    new Float32Array(k.arena.memory.buffer, buf, 2 * n).fill(1);
    runCalls(k, [
      ['scaleF32', [buf, n, 3]],
      ['scaleF32', [buf + n * 4, n, 5]],
    ]);
    const y = new Float32Array(k.arena.memory.buffer, buf, 2 * n);
    assert.ok(y[0] === 3 && y[n - 1] === 3 && y[n] === 5 && y[2 * n - 1] === 5, `call round ${i}: both halves scaled once`);
    attend({ view, q, heads, out: got, threads: 2 });
    assert.ok(maxDiff(got, want) < 1e-5, `attend round ${i} differs by ${maxDiff(got, want)}`);
  }
  assert.throws(
    () =>
      runCalls(k, [
        ['scaleF32', [buf, n, 3]],
        ['noSuchKernel', []],
      ]),
    /noSuchKernel/,
  );
  k.arena.free(buf);
  free();
});

test('pool: a post wakes a worker asleep on the job word; a held worker spins through idle gaps; released, it sleeps again', (t) => {
  const k = wasmKernels();
  if (!k) return t.skip('wasm kernels unavailable');
  if (getThreads() < 2) return t.skip(`one core or no worker_threads (${poolFailure() || 'threads = 1'})`);
  const n = 4096;
  const buf = k.arena.alloc(2 * n * 4);
  const call = (i: number) => {
    new Float32Array(k.arena.memory.buffer, buf, 2 * n).fill(1);
    runCalls(k, [
      ['scaleF32', [buf, n, 3]],
      ['scaleF32', [buf + n * 4, n, 5]],
    ]);
    const y = new Float32Array(k.arena.memory.buffer, buf, 2 * n);
    assert.ok(y[0] === 3 && y[n] === 5 && y[2 * n - 1] === 5, `round ${i}: both halves scaled once`);
  };
  call(-1);
  const wakes0 = poolStats().wakes;
  // Idle well past the spin, so the worker sleeps: a post that failed to wake it would hang here.
  for (let i = 0; i < 5; i++) {
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20 * SPIN_MS + 5);
    call(i);
  }
  assert.ok(poolStats().wakes - wakes0 >= 1, 'a post found the worker asleep and woke it');
  // Held (from the first post on), the worker spins through the same gaps: no post needs a wake.
  holdWorkers();
  try {
    call(10);
    const wakes1 = poolStats().wakes;
    for (let i = 0; i < 5; i++) {
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20 * SPIN_MS + 5);
      call(11 + i);
    }
    assert.equal(poolStats().wakes - wakes1, 0, 'a held worker never slept');
  } finally {
    releaseWorkers();
  }
  // Released, it sleeps again after its spin.
  const wakes2 = poolStats().wakes;
  for (let i = 0; i < 5; i++) {
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20 * SPIN_MS + 5);
    call(20 + i);
  }
  assert.ok(poolStats().wakes - wakes2 >= 1, 'a released worker sleeps again');
  k.arena.free(buf);
});

test("pool: a worker's exception is the cause of the caller's error, not swallowed", (t) => {
  const k = wasmKernels();
  if (!k) return t.skip('wasm kernels unavailable');
  if (getThreads() < 2) return t.skip(`one core or no worker_threads (${poolFailure() || 'threads = 1'})`);
  const buf = k.arena.alloc(64);
  // The second call runs on a worker and reads far outside arena memory: the module traps there.
  assert.throws(
    () =>
      runCalls(k, [
        ['scaleF32', [buf, 16, 3]],
        ['scaleF32', [0xfffff000, 1024, 2]],
      ]),
    (e: unknown) =>
      e instanceof PoolError &&
      e.cause instanceof Error &&
      /RuntimeError: memory access out of bounds/.test(e.cause.message) &&
      /out of bounds/.test(e.message),
  );
  // The pool stays usable.
  runCalls(k, [
    ['scaleF32', [buf, 16, 1]],
    ['scaleF32', [buf, 16, 1]],
  ]);
  k.arena.free(buf);
});

test('pool: shared jobs (threaded matmuls, units from their own counter; prefetches cut short) interleaved with attention units and kernel calls stay correct', async (t) => {
  const k = wasmKernels();
  if (!k) return t.skip('wasm kernels unavailable');
  if (getThreads() < 2) return t.skip(`one core or no worker_threads (${poolFailure() || 'threads = 1'})`);
  const { configureMatmul, matmulConfig } = await import('../matmul/config.js');
  const { matmulPrefetch, matmulSplitStats } = await import('../matmul/job.js');
  const { Weight } = await import('../../model/forward-weights.js');
  const { encode } = await import('../../formats/codec.js');
  const rng = new Prng(15);
  const { view, free } = bulkView('q8_0', 2, 3000, 64, rng);
  const heads = 16;
  const q = rng.normals(heads * 64);
  const wantAttn = new Float32Array(q.length);
  attend({ view, q, heads, out: wantAttn, threads: 1 });
  // Two weights of different types and shapes, so a late worker acting on the wrong job would show.
  const ws = [
    [8, 512, 768],
    [2, 260, 512],
  ].map(
    ([type, rows, cols]) =>
      new Weight('w', { type: type!, dims: [cols!, rows!], data: encode(type === 8 ? 'q8_0' : 'q4_0', rng.normals(rows! * cols!), [rows!, cols!]) }),
  );
  const xs = ws.map((w) => rng.normals(w.cols));
  const before = matmulConfig();
  configureMatmul({ threads: 1 });
  const wantMm = ws.map((w, i) => {
    const y = new Float32Array(w.rows);
    w.matmul(xs[i]!, 1, y);
    return y;
  });
  configureMatmul({ threads: 2, threadChoice: 'always' });
  const n = 4096;
  const buf = k.arena.alloc(2 * n * 4);
  const got = new Float32Array(q.length);
  const stats0 = matmulSplitStats();
  try {
    for (let i = 0; i < 200; i++) {
      for (let j = 0; j < ws.length; j++) {
        // A prefetch the workers may still be running when the next job (or attention) is posted.
        if (i % 2) matmulPrefetch(ws.map((w) => w.packedWeight!));
        const y = new Float32Array(ws[j]!.rows);
        ws[j]!.matmul(xs[j]!, 1, y);
        assert.deepEqual(y, wantMm[j], `matmul ${j} round ${i}`);
      }
      matmulPrefetch(ws.map((w) => w.packedWeight!));
      attend({ view, q, heads, out: got, threads: 2 });
      assert.ok(maxDiff(got, wantAttn) < 1e-5, `attend round ${i} differs by ${maxDiff(got, wantAttn)}`);
      new Float32Array(k.arena.memory.buffer, buf, 2 * n).fill(1);
      runCalls(k, [
        ['scaleF32', [buf, n, 3]],
        ['scaleF32', [buf + n * 4, n, 5]],
      ]);
      const y = new Float32Array(k.arena.memory.buffer, buf, 2 * n);
      assert.ok(y[0] === 3 && y[n - 1] === 3 && y[n] === 5 && y[2 * n - 1] === 5, `call round ${i}: both halves scaled once`);
    }
    const stats = matmulSplitStats();
    assert.equal(stats.calls - stats0.calls, 400, 'every matmul took the shared-job path');
    assert.equal(stats.prefetches - stats0.prefetches, 400, 'every prefetch was posted');
    assert.ok(stats.prefetchUnits > stats0.prefetchUnits, 'the workers took prefetch units before they were cut short');
  } finally {
    configureMatmul(before);
    k.arena.free(buf);
    free();
  }
});

test('pool: jobs whose formats change from one to the next each run their own kernels on the workers', (t) => {
  if (!wasmKernels()) return t.skip('wasm kernels unavailable');
  if (getThreads() < 2) return t.skip(`one core or no worker_threads (${poolFailure() || 'threads = 1'})`);
  // The workers parse a job's strings (formats, kernel keys) only when they change: a stale list would read
  // q8_0 bytes with the f16 kernels. Formats alternate job by job (4 kv heads x 3 splits: 12 units a job,
  // workers held spinning) until the workers have run units of each format; every result is checked.
  const rng = new Prng(12);
  const D = 64;
  const L = 2 * 4096 + 100;
  const heads = 8;
  const views = ['f16', 'q8_0', 'q4_0'].map((id) => ({ id, ran: 0, ...bulkView(id, 4, L, D, rng) }));
  const q = rng.normals(heads * D);
  holdWorkers();
  try {
    for (let call = 0; call < 300 && views.some((v) => v.ran < 2); call++) {
      const v = views[call % views.length]!;
      const one = new Float32Array(q.length);
      const two = new Float32Array(q.length);
      attend({ view: v.view, q, heads, out: one, threads: 1 });
      const before = poolStats().workerUnits;
      attend({ view: v.view, q, heads, out: two, threads: 2 });
      if (poolStats().workerUnits > before) v.ran++;
      assert.deepEqual(two, one, `${v.id}, call ${call}: 2 threads differ from 1`);
    }
  } finally {
    releaseWorkers();
  }
  for (const v of views) assert.ok(v.ran >= 2, `the workers ran units of ${v.id} jobs in ${v.ran} calls`);
  for (const v of views) v.free();
});
