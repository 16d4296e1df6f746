// Where a decode step's time goes: the bench's synthetic q8_0 model (bench/engine.ts), a q8_0 cache filled
// with a 128-token prompt, then decode steps through model.forward alternated with the same step run op by op
// (the llama path of forward.ts's blocks, no QK-norm, no bias) with a timer around each part; and each
// weight's matmul alone, 1 vs N threads, as GB/s of weights, warm in cache and from DRAM (as in a step).
// --context N --scheme S: a cache of N positions of synthetic K/V in scheme S instead (bench:big's decode rows).
// Run: npm run bench:decode -- [--threads N] [--steps 48] [--weights q8_0] [--choice measured|always]
import { performance } from 'node:perf_hooks';
import { loadModel } from '../src/model/model.js';
import { schemePolicy } from '../src/cache/schemes.js';
import { ForwardBuffers } from '../src/model/forward-buffers.js';
import { addInPlace, applyRope, gatedAct, rmsNorm } from '../src/kernels/ops/ops.js';
import { matmulShared, type Weight } from '../src/model/forward-weights.js';
import { MatmulStep } from '../src/kernels/matmul/step.js';
import { configureMatmul } from '../src/kernels/matmul/config.js';
import { matmulSplitStats } from '../src/kernels/matmul/job.js';
import { availableCores } from '../src/kernels/runtime/threads.js';
import { poolStats } from '../src/kernels/runtime/pool.js';
import { declareOptions, median, option, printTable, timeInterleaved } from './harness.js';
import { syntheticModel } from './engine.js';
import { filledCache, parseScheme } from './engine-long.js';
import type { KvCache } from '../src/cache/kvcache.js';

declareOptions('bench:decode', "where a decode step's time goes, op by op, on the synthetic model", {
  '--threads': { kind: 'int', min: 1, help: 'matmul threads (capped at available cores)', default: 'available cores' },
  '--steps': { kind: 'int', min: 1, help: 'decode steps', default: 48 },
  '--weights': { kind: 'str', help: 'weight type of the synthetic model', default: 'q8_0' },
  '--model': { kind: 'str', help: "a GGUF file to profile instead of the synthetic model (e.g. bench:big's 8B one)" },
  '--context': { kind: 'int', min: 1, help: 'cache positions before the timed steps (synthetic K/V past 128)', default: 128 },
  '--scheme': { kind: 'str', help: "the cache's scheme (engine-long's names, e.g. q2k or q8_0:int8)", default: 'q8_0' },
  '--choice': { kind: 'str', choices: ['measured', 'always'], help: 'matmul thread choice', default: 'measured' },
  '--repack': {
    kind: 'str',
    choices: ['on', 'off'],
    help: "repack weights into the kernels' interleaved layout at load (off: the file layout, for A/B runs)",
    default: 'on',
  },
});
const threads = Math.min(Number(option('--threads') ?? availableCores()), availableCores());
const steps = Number(option('--steps') ?? 48);
const wt = option('--weights') ?? 'q8_0';
const choice = (option('--choice') ?? 'measured') as 'measured' | 'always';
configureMatmul({ threads, threadChoice: choice, repack: option('--repack') !== 'off' });
const modelPath = option('--model');
const model = loadModel(modelPath ?? syntheticModel(wt, (s) => process.stderr.write(`${s}\n`)), { expand: false });
const hp = model.hp;
const context = Number(option('--context') ?? 128);
const scheme = option('--scheme') ?? 'q8_0';
// Up to 128 positions come from a prompt; longer contexts append synthetic K/V as bench:big does (a 32K
// prefill takes an hour at 8B). Every timed step is rewound back to `base`.
let cache: KvCache;
if (context > 128) cache = filledCache(model, scheme, context, 64).cache;
else {
  const { name, attention } = parseScheme(scheme);
  cache = model.createCache({ policy: schemePolicy(name), capacity: context + 64, attention });
  const prompt = Array.from({ length: context }, (_, i) => 300 + ((i * 7919 + 104729) % (hp.nVocab - 300)));
  model.forward(prompt, cache);
}
const base = cache.length;

function argmax(a: Float32Array): number {
  let b = 0;
  for (let i = 1; i < a.length; i++) if (a[i]! > a[b]!) b = i;
  return b;
}

// The same step op by op.
const parts = new Map<string, number[]>();
let cur = new Map<string, number>();
function timed(name: string, fn: () => void): void {
  const t0 = performance.now();
  fn();
  cur.set(name, (cur.get(name) ?? 0) + performance.now() - t0);
}
function step(token: number): number {
  cur = new Map();
  const t0 = performance.now();
  const dim = hp.nEmbd,
    hd = hp.headDim,
    nh = hp.nHead,
    nkv = hp.nHeadKv,
    ff = hp.nFf,
    eps = hp.rmsEps;
  const pos = Int32Array.of(cache.length);
  const half = model.ropeGlobal.dims / 2;
  const B = ForwardBuffers.acquire({
    x: dim,
    xb: dim,
    q: nh * hd,
    k: nkv * hd,
    v: nkv * hd,
    att: nh * hd,
    gate: ff,
    up: ff,
    logits: hp.nVocab,
    cosG: half,
    sinG: half,
    cosL: 0,
    sinL: 0,
  });
  let next = 0;
  const kstep = MatmulStep.begin();
  try {
    timed('setup (rope table, embed)', () => {
      model.ropeGlobal.table(pos, { cos: B.get('cosG'), sin: B.get('sinG') });
      model.tokenEmbd.decodeRows(token, token + 1, B.x, 0);
    });
    for (let l = 0; l < hp.nLayer; l++) {
      const L = model.layers[l]!;
      timed('rmsnorm', () => rmsNorm(B.xb, B.x, L.attnNorm, 1, dim, eps));
      timed('matmul q/k/v', () => matmulShared([L.wq, L.wk, L.wv], B.xb, 1, [B.q, B.k, B.v]));
      timed('prefetch post', () => kstep.prefetch([L.wo, L.wGate, L.wUp]));
      timed('rope', () => {
        const tab = { cos: B.get('cosG'), sin: B.get('sinG') };
        applyRope(model.ropeGlobal, B.q, 1, nh, hd, tab);
        applyRope(model.ropeGlobal, B.k, 1, nkv, hd, tab);
      });
      timed('kv append', () => cache.append(l, B.k, B.v));
      timed('attention', () => cache.attend(l, B.q, B.att, { positions: pos, scale: hp.attnScale }));
      timed('matmul o', () => (L.wo as Weight).matmul(B.att, 1, B.xb));
      timed('add', () => addInPlace(B.x, B.xb, dim));
      timed('rmsnorm', () => rmsNorm(B.xb, B.x, L.ffnNorm, 1, dim, eps));
      timed('matmul gate/up', () => matmulShared([L.wGate, L.wUp], B.xb, 1, [B.gate, B.up]));
      timed('silu*up', () => gatedAct(model.spec.act, B.gate, B.up, ff));
      timed('matmul down', () => L.wDown.matmul(B.gate, 1, B.xb));
      timed('add', () => addInPlace(B.x, B.xb, dim));
    }
    timed('rmsnorm', () => rmsNorm(B.xb, B.x, model.outputNorm, 1, dim, eps));
    timed('matmul output', () => model.output.matmul(B.xb, 1, B.logits));
    timed('argmax', () => (next = argmax(B.logits)));
  } finally {
    kstep.end();
    B.release();
  }
  const total = performance.now() - t0;
  let known = 0;
  for (const v of cur.values()) known += v;
  cur.set('other (JS between ops)', total - known);
  cur.set('total', total);
  for (const [k, v] of cur) {
    if (!parts.has(k)) parts.set(k, []);
    parts.get(k)!.push(v);
  }
  return next;
}
const split0 = matmulSplitStats();
const pool0 = poolStats();
// Whole steps through model.forward (the figure bench:engine reports) alternate with op-by-op ones.
let tok = 300;
const whole: number[] = [];
for (let i = 0; i < steps; i++) {
  // (Each goes first every other step: the one that follows the other finds different cache contents.)
  if (i % 2) {
    tok = step(tok);
    cache.rewind(base);
  }
  const t0 = performance.now();
  tok = argmax(model.forward([tok], cache));
  whole.push(performance.now() - t0);
  cache.rewind(base);
  if (i % 2 === 0) {
    tok = step(tok);
    cache.rewind(base);
  }
}
const split1 = matmulSplitStats();
const pool1 = poolStats();

const load = (await import('node:os')).loadavg();
console.log(
  `\ndecode after ${base} ${scheme} KV positions, ${modelPath ?? `${wt} weights`}, ${threads} threads (${choice}), ${steps} steps; load average ${load.map((x) => x.toFixed(2)).join(' ')}`,
);
console.log(`model.forward: median ${median(whole).toFixed(2)} ms/token = ${(1000 / median(whole)).toFixed(1)} tok/s`);
const totalMed = median(parts.get('total')!);
printTable(
  ['part', 'ms/token (median)', 'share'],
  [...parts].map(([k, v]) => [k, median(v).toFixed(3), `${((100 * median(v)) / totalMed).toFixed(1)}%`]),
);
const calls = split1.calls - split0.calls;
console.log(
  `parallel matmul jobs per step (whole and op-by-op steps together): ${(calls / steps).toFixed(1)}; caller's share of units ${((split1.callerUnits - split0.callerUnits) / Math.max(1, split1.units - split0.units)).toFixed(2)}; posts that woke a sleeping worker per step: ${(((pool1.wakes ?? NaN) - (pool0.wakes ?? NaN)) / steps).toFixed(1)}; prefetch units (64 KiB) read per step: ${(((split1.prefetchUnits ?? NaN) - (split0.prefetchUnits ?? NaN)) / steps).toFixed(1)}`,
);

// Each weight alone, 1 thread vs N, interleaved; GB/s of weight bytes read.
const L0 = model.layers[0]!;
const x = new Float32Array(hp.nFf).map((_, i) => Math.sin(i));
const group = (ws: Weight[]) => {
  const ys = ws.map((w) => new Float32Array(w.rows));
  return () => matmulShared(ws, x.subarray(0, ws[0]!.cols), 1, ys);
};
const cases: [string, Weight[]][] = [
  ['q/k/v', [L0.wq, L0.wk, L0.wv]],
  ['o', [L0.wo]],
  ['gate/up', [L0.wGate, L0.wUp]],
  ['down', [L0.wDown]],
  ['output', [model.output]],
];
// Weights from DRAM, as a step finds them (56 MB of other weights read since): a 96 MiB sweep (past L3, as
// matmul-ab --cold) before each timed call; only the call is timed.
const evict = new Float64Array(96 << 17).fill(1);
let evictSink = 0;
function coldMedian(fn: () => void, reps = 15): number {
  const t: number[] = [];
  for (let r = 0; r < reps; r++) {
    let s = 0;
    for (let i = 0; i < evict.length; i += 8) s += evict[i]!;
    evictSink += s;
    const t0 = performance.now();
    fn();
    t.push((performance.now() - t0) / 1000);
  }
  return median(t);
}
const rows: string[][] = [];
const coldRows: string[][] = [];
for (const [name, ws] of cases) {
  const bytes = ws.reduce((a, w) => a + w.nbytes, 0);
  const fn = group(ws);
  const tN = () => {
    configureMatmul({ threads, threadChoice: 'always' });
    fn();
  };
  const t1 = () => {
    configureMatmul({ threads: 1 });
    fn();
  };
  // Alternating single calls let the workers fall asleep between N-thread calls (one wake each, ~40-100 us);
  // in a step MatmulStep holds them awake, so the held figure is the one a step sees.
  const [a, b] = timeInterleaved([t1, tN], 0.3);
  const hold = MatmulStep.begin();
  const [, c] = timeInterleaved([t1, tN], 0.3);
  hold.end();
  const ms = (t: number) => (t * 1e3).toFixed(3);
  const gbs = (t: number) => (bytes / t / 1e9).toFixed(2);
  rows.push([name, `${(bytes / 1e6).toFixed(2)}`, ms(a!), gbs(a!), ms(b!), gbs(b!), ms(c!), gbs(c!)]);
  const d1 = coldMedian(t1);
  const held = MatmulStep.begin();
  const dN = coldMedian(tN);
  held.end();
  coldRows.push([name, `${(bytes / 1e6).toFixed(2)}`, ms(d1), gbs(d1), ms(dN), gbs(dN), (d1 / a!).toFixed(2), (dN / c!).toFixed(2)]);
}
if (evictSink === 0) throw new Error('bench:decode: the eviction sweep read nothing');
configureMatmul({ threads, threadChoice: choice });
console.log('\neach weight alone (arena input), median per call, weights read from memory (not cached between calls unless they fit)');
printTable(['matmul', 'MB', '1 thread ms', 'GB/s', `${threads} threads ms`, 'GB/s', 'workers held ms', 'GB/s'], rows);
console.log(`\neach weight alone from DRAM (a 96 MiB sweep before each call, as a step finds its weights), median of 15`);
printTable(['matmul', 'MB', '1 thread ms', 'GB/s', `${threads} threads held ms`, 'GB/s', 'x warm 1 thread', 'x warm held'], coldRows);
