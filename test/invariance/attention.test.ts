// Attention rows have the same bits for a query computed alone, in a batch of 7 or 64 or all, on 1 or 2
// threads: over cache views with many segments (sinks, anchors, bulk chunks, staging, ring wrap, a batch's
// spill), on sliding-window attention, softcap and the integer q / V precisions.
import test from 'node:test';
import assert from 'node:assert/strict';
import { KvCache } from '../../src/cache/kvcache.js';
import { schemePolicy } from '../../src/cache/schemes.js';
import type { CachePolicy } from '../../src/cache/policy.js';
import { attend, type FastAttendArgs } from '../../src/kernels/attention/attend.js';
import { wasmKernels } from '../../src/kernels/runtime/wasm.js';
import { getThreads } from '../../src/kernels/runtime/pool.js';
import { Prng } from '../../src/numeric/prng.js';

const H = 2;
const D = 64;
const PROMPT = 200;
const N = 300;

/** A 2-layer cache: a 200-position prompt in one batch, decode begun (anchors), 100 more in one batch. */
function cacheOf(policy: CachePolicy): KvCache {
  const c = new KvCache({ layers: 1, kvHeads: H, headDim: D, capacity: 512, policy, chunkTokens: 64 });
  const k = new Prng(1).normals(N * H * D);
  const v = new Prng(2).normals(N * H * D);
  c.append(0, k.subarray(0, PROMPT * H * D), v.subarray(0, PROMPT * H * D));
  c.beginDecode();
  c.append(0, k.subarray(PROMPT * H * D), v.subarray(PROMPT * H * D));
  return c;
}

type Opts = Pick<FastAttendArgs, 'slidingWindow' | 'softcap' | 'qPrecision' | 'vPrecision'>;

/** Rows of the queries at `positions` (q rows of queries `index`), computed in calls of `batch` queries. */
function run(cache: KvCache, q: Float32Array, heads: number, positions: number[], batch: number, threads: number, opts: Opts): Float32Array {
  const row = heads * D;
  const out = new Float32Array(positions.length * row);
  for (let i = 0; i < positions.length; i += batch) {
    const n = Math.min(batch, positions.length - i);
    const o = out.subarray(i * row, (i + n) * row);
    const r = attend({
      view: cache.view(0),
      q: q.subarray(i * row, (i + n) * row),
      heads,
      out: o,
      positions: positions.slice(i, i + n),
      threads,
      minParallelWork: 0,
      ...opts,
    });
    assert.equal(r.path, 'fast');
  }
  return out;
}

function firstDiff(a: Float32Array, b: Float32Array, row: number): number {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return Math.floor(i / row);
  return -1;
}

const CASES: { scheme: string; opts: Opts }[] = [
  { scheme: 'f16', opts: {} },
  { scheme: 'q8_0', opts: {} },
  { scheme: 'q8_0', opts: { qPrecision: 'int8' } },
  { scheme: 'q4_0', opts: {} },
  { scheme: 'q4_0', opts: { qPrecision: 'int16', softcap: 20 } },
  { scheme: 'q4_0', opts: { vPrecision: 'int16' } },
  { scheme: 'q2k', opts: {} },
  { scheme: 'q2k', opts: { slidingWindow: 90 } },
  { scheme: 'nf4', opts: { softcap: 30 } },
  { scheme: 'kivi4', opts: {} },
  { scheme: 'tern', opts: {} },
  { scheme: 'sign', opts: { slidingWindow: 50 } },
  { scheme: 'int2s', opts: {} },
];

for (const { scheme, opts } of CASES) {
  test(`attention rows are batch- and thread-invariant: ${scheme} ${JSON.stringify(opts)}`, (t) => {
    if (!wasmKernels()) return t.skip('wasm kernels unavailable');
    for (const windowMode of ['overlay', 'residual'] as const) {
      const cache = cacheOf(schemePolicy(scheme, { window: 40, sinks: 4, windowMode, anchors: { count: 6 } }));
      // Every position of the last batch (its spill in use) and some of the prompt's.
      const positions = [...Array.from({ length: 12 }, (_, i) => i * 17), ...Array.from({ length: N - PROMPT }, (_, i) => PROMPT + i)];
      for (const G of [1, 3, 4]) {
        const heads = H * G;
        const row = heads * D;
        const q = new Prng(3 + G).normals(positions.length * row);
        const where = `${scheme} ${windowMode} G=${G}`;
        const all = run(cache, q, heads, positions, positions.length, 1, opts);
        for (const [batch, threads] of [
          [1, 1],
          [7, 1],
          [64, 1],
          [positions.length, 2],
          [7, 2],
        ] as const) {
          if (threads > getThreads()) continue;
          const got = run(cache, q, heads, positions, batch, threads, opts);
          const at = firstDiff(got, all, row);
          assert.equal(at, -1, `${where}: batches of ${batch} on ${threads} thread(s) differ at the query at ${positions[at]}`);
        }
      }
      cache.dispose();
    }
  });
}

test('attention rows are batch- and thread-invariant across position splits (a 9000-position cache: 3 splits)', (t) => {
  if (!wasmKernels()) return t.skip('wasm kernels unavailable');
  for (const scheme of ['q4_0', 'q2k']) {
    const L = 9000;
    const c = new KvCache({ layers: 1, kvHeads: H, headDim: D, capacity: L, policy: schemePolicy(scheme, { window: 40, sinks: 4 }), chunkTokens: 256 });
    c.append(0, new Prng(11).normals((L - 64) * H * D), new Prng(12).normals((L - 64) * H * D));
    c.append(0, new Prng(13).normals(64 * H * D), new Prng(14).normals(64 * H * D));
    // Queries before, at and past split boundaries, and the last batch's 64.
    const positions = [100, 4094, 4095, 4096, 4097, 8191, 8192, ...Array.from({ length: 64 }, (_, i) => L - 64 + i)];
    const heads = H * 4;
    const row = heads * D;
    const q = new Prng(15).normals(positions.length * row);
    const all = run(c, q, heads, positions, positions.length, 1, {});
    for (const [batch, threads] of [
      [1, 1],
      [7, 1],
      [positions.length, 2],
      [1, 2],
    ] as const) {
      if (threads > getThreads()) continue;
      const at = firstDiff(run(c, q, heads, positions, batch, threads, {}), all, row);
      assert.equal(at, -1, `${scheme}: batches of ${batch} on ${threads} thread(s) differ at the query at ${positions[at]}`);
    }
    c.dispose();
  }
});
