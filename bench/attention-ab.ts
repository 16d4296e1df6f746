// The cost of batch-invariant attention: the current attend() (fixed chunk and split positions, per-row
// bounds with the band read both ways) against the scheduler of 315f2e2 (bench/baseline/attend-old.ts), in
// one process, calls alternated, on one thread (the baseline has no pool workers). Timed in CPU seconds of
// this process (process.cpuUsage), not wall time: on a shared, oversubscribed machine wall time mostly
// measures waiting for a core.
// Cache views from KvCache (window 128 + 4 sinks, 8 kv heads x 32 query heads, D 128). The baseline reads the
// view cut at the last query's bound (its batch-dependent rule); the current scheduler runs on that same view
// too ("same reads": the scheduler's own cost) and on the real one (each query its own window exact: in a
// prefill, W exact positions per query where the old rule read most of them packed).
// Usage: npm run build && node dist-test/bench/attention-ab.js [--formats q4_0,q2k,f16] [--contexts 1024,4096,16384]
//   [--kinds decode,prefill] [--budget 1] (prefill: the last 512 positions as one batch of queries)
import { KvCache } from '../src/cache/kvcache.js';
import { schemePolicy } from '../src/cache/schemes.js';
import type { MixedView, Segment } from '../src/kernels/attention/view.js';
import { attend } from '../src/kernels/attention/attend.js';
import { wasmKernels } from '../src/kernels/runtime/wasm.js';
import { Prng } from '../src/numeric/prng.js';
import { attendOld } from './baseline/attend-old.js';
import { declareOptions, median, option, printTable } from './harness.js';

declareOptions('attention-ab', 'in-process A/B of attention: this build against bench/baseline/attend-old.ts', {
  '--formats': { kind: 'strs', help: 'cache formats', default: 'q4_0,q2k,f16' },
  '--contexts': { kind: 'ints', min: 1, help: 'positions', default: '1024,4096,16384' },
  '--budget': { kind: 'num', help: 'seconds per case', default: 1 },
  '--kinds': { kind: 'strs', choices: ['decode', 'prefill'], help: 'query kinds', default: 'decode,prefill' },
});

const KV = 8;
const HEADS = 32;
const D = 128;
const formats = (option('--formats') ?? 'q4_0,q2k,f16').split(',');
const contexts = (option('--contexts') ?? '1024,4096,16384').split(',').map(Number);
const budget = Number(option('--budget') ?? 1);
const PREFILL = 512;
const kinds = (option('--kinds') ?? 'decode,prefill').split(',');

/** The view as the old rule read it: every query with the last query's bound, one segment per position. */
function oldView(v: MixedView, last: number): MixedView {
  const x = v.exactFrom ? v.exactFrom(last) : last + 1;
  const segs: Segment[] = [];
  for (const s of v.segments) {
    const a = s.read === 'exact' ? Math.max(s.start, x) : s.start;
    const b = s.read === 'packed' ? Math.min(s.start + s.count, x) : s.start + s.count;
    if (a >= b) continue;
    const shift = (r: Segment['k']) => ({ ...r, first: r.first + (a - s.start) });
    segs.push({ start: a, count: b - a, k: shift(s.k), v: shift(s.v), region: s.region });
  }
  segs.sort((p, q) => p.start - q.start);
  return { headDim: v.headDim, kvHeads: v.kvHeads, length: v.length, start: v.start, segments: segs };
}

/** Median CPU seconds per call of each fn, called in turn: warm up, then until budget x fns.length CPU seconds (>= 7 rounds). */
function cpuInterleaved(fns: ReadonlyArray<() => void>, budget: number): number[] {
  const cpu = () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1e6;
  };
  // A sample is `reps` calls of >= 50 ms in all: CPU accounting is coarse (a scheduler tick, ~4 ms).
  const w0 = cpu();
  for (const fn of fns) fn();
  const reps = Math.max(1, Math.ceil(0.05 / Math.max(1e-4, (cpu() - w0) / fns.length)));
  const times = fns.map(() => [] as number[]);
  const start = cpu();
  while (times[0]!.length < 7 || (times[0]!.length < 400 && cpu() - start < budget * fns.length)) {
    fns.forEach((fn, i) => {
      const t0 = cpu();
      for (let r = 0; r < reps; r++) fn();
      times[i]!.push((cpu() - t0) / reps);
    });
  }
  return times.map(median);
}

const k = wasmKernels();
if (!k) throw new Error('attention-ab: wasm kernels unavailable');
const rows: string[][] = [];
for (const f of formats) {
  for (const n of contexts) {
    const cache = new KvCache({ layers: 1, kvHeads: KV, headDim: D, capacity: n, policy: schemePolicy(f, { window: 128, sinks: 4 }) });
    const rng = new Prng(n);
    // All but the last 512 positions in 4096-position appends, then the last 512 as one batch (prefill).
    for (let p = 0; p < n - PREFILL; p += 4096) {
      const m = Math.min(4096, n - PREFILL - p);
      cache.append(0, rng.normals(m * KV * D), rng.normals(m * KV * D));
    }
    cache.append(0, rng.normals(PREFILL * KV * D), rng.normals(PREFILL * KV * D));
    const view = cache.view(0);
    for (const [kind, nq] of [
      ['decode', 1],
      ['prefill', PREFILL],
    ] as const) {
      if (!kinds.includes(kind)) continue;
      const positions = Array.from({ length: nq }, (_, i) => n - nq + i);
      const q = rng.normals(nq * HEADS * D);
      const out = new Float32Array(q.length);
      const old = oldView(view, n - 1);
      const [tNew, tSame, tOld] = cpuInterleaved(
        [
          () => attend({ view, q, heads: HEADS, out, positions, threads: 1 }),
          () => attend({ view: old, q, heads: HEADS, out, positions, threads: 1 }),
          () => attendOld(k, { view: old, q, heads: HEADS, out, positions, threads: 1 }),
        ],
        budget,
      );
      const ms = (x: number) => (x * 1e3).toFixed(3);
      rows.push([f, `${n}`, kind, ms(tOld!), ms(tSame!), (tSame! / tOld!).toFixed(3), ms(tNew!), (tNew! / tOld!).toFixed(3)]);
      process.stderr.write(`${rows.at(-1)!.join(' ')}\n`);
    }
    cache.dispose();
  }
}
console.log(`\nattention, ${KV} kv x ${HEADS} query heads, D ${D}, 1 thread, calls alternated (median CPU ms per call)`);
printTable(['format', 'context', 'queries', 'baseline ms', 'same reads ms', 'ratio', 'own windows ms', 'ratio'], rows);
