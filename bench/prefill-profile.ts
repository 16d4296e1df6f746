// Where a prefill's time goes: the bench's synthetic model (bench/engine.ts), a prompt of --prompt tokens into
// a fresh cache through model.forward, alternated with the same pass run op by op (the llama path of
// forward.ts's blocks, no QK-norm, no bias) with a timer around each part; then each weight's tiled matmul
// alone (activation packing timed apart), 1 and N threads, as GMAC/s (weights warm in cache).
// Run: npm run build && node dist-test/bench/prefill-profile.js [--weights q8_0 | --model GGUF] [--prompt 128] [--threads N] [--runs 9] [--kv f16] [--no-prefetch] [--repack off]
import { performance } from 'node:perf_hooks';
import { loadModel } from '../src/model/model.js';
import { schemePolicy } from '../src/cache/schemes.js';
import { ForwardBuffers } from '../src/model/forward-buffers.js';
import { addInPlace, applyRope, gatedAct, rmsNorm } from '../src/kernels/ops/ops.js';
import { matmulShared, type Weight } from '../src/model/forward-weights.js';
import { MatmulStep } from '../src/kernels/matmul/step.js';
import { configureMatmul } from '../src/kernels/matmul/config.js';
import { layoutBytes, plan } from '../src/kernels/matmul/plan.js';
import { workspace, type PackedWeight } from '../src/kernels/matmul/weights.js';
import { kernelBuild } from '../src/kernels/runtime/wasm.js';
import { availableCores } from '../src/kernels/runtime/threads.js';
import { declareOptions, flag, median, option, printTable, timeInterleaved } from './harness.js';
import { syntheticModel } from './engine.js';

declareOptions('bench:prefill', "where a prefill's time goes, op by op, on the synthetic model", {
  '--threads': { kind: 'int', min: 1, help: 'matmul threads (capped at available cores)', default: 'available cores' },
  '--prompt': { kind: 'int', min: 1, help: 'prompt tokens', default: 128 },
  '--runs': { kind: 'int', min: 1, help: 'passes of each kind (median)', default: 9 },
  '--weights': { kind: 'str', help: 'weight type of the synthetic model', default: 'q8_0' },
  '--model': { kind: 'str', help: "profile this GGUF (a llama) instead of the synthetic model, e.g. bench:big's 8B files" },
  '--kv': { kind: 'str', help: 'cache scheme', default: 'f16' },
  '--no-prefetch': { kind: 'switch', help: 'the op-by-op pass posts no weight prefetch (forward.ts does)' },
  '--repack': {
    kind: 'str',
    choices: ['on', 'off'],
    help: "repack weights into the kernels' interleaved layout at load (off: the file layout, for A/B runs)",
    default: 'on',
  },
});
const threads = Math.min(Number(option('--threads') ?? availableCores()), availableCores());
const prompt = Number(option('--prompt') ?? 128);
const runs = Number(option('--runs') ?? 9);
const wt = option('--weights') ?? 'q8_0';
const kv = option('--kv') ?? 'f16';
/** --no-prefetch: the op-by-op pass posts no weight prefetch before rope/attention (forward.ts does). */
const prefetch = !flag('--no-prefetch');
configureMatmul({ threads, repack: option('--repack') !== 'off' });
const model = loadModel(option('--model') ?? syntheticModel(wt, (s) => process.stderr.write(`${s}\n`)), { expand: false });
const hp = model.hp;
const cache = model.createCache({ policy: schemePolicy(kv), capacity: prompt + 16 });
const tokens = Array.from({ length: prompt }, (_, i) => 300 + ((i * 7919 + 104729) % (hp.nVocab - 300)));

const parts = new Map<string, number[]>();
let cur = new Map<string, number>();
function timed(name: string, fn: () => void): void {
  const t0 = performance.now();
  fn();
  cur.set(name, (cur.get(name) ?? 0) + performance.now() - t0);
}

/** The prefill op by op, into `cache` from position 0; returns the last token's logits. */
function opByOp(): Float32Array {
  cur = new Map();
  const t0 = performance.now();
  const n = prompt;
  const dim = hp.nEmbd,
    hd = hp.headDim,
    nh = hp.nHead,
    nkv = hp.nHeadKv,
    ff = hp.nFf,
    eps = hp.rmsEps;
  const positions = Int32Array.from({ length: n }, (_, i) => i);
  const half = model.ropeGlobal.dims / 2;
  const B = ForwardBuffers.acquire({
    x: n * dim, // [n, dim]
    xb: n * dim, // [n, dim]
    q: n * nh * hd, // [n, nHead, headDim]
    k: n * nkv * hd, // [n, nKvHead, headDim]
    v: n * nkv * hd,
    att: n * nh * hd, // [n, nHead, headDim]
    gate: n * ff, // [n, ff]
    up: n * ff,
    logits: hp.nVocab, // [vocab]: the last token's
    cosG: n * half, // [n, ropeDim/2]
    sinG: n * half,
    cosL: 0,
    sinL: 0,
  });
  let logits = new Float32Array(0);
  const kstep = MatmulStep.begin();
  try {
    timed('setup (rope table, embed)', () => {
      model.ropeGlobal.table(positions, { cos: B.get('cosG'), sin: B.get('sinG') });
      for (let t = 0; t < n; t++) model.tokenEmbd.decodeRows(tokens[t]!, tokens[t]! + 1, B.x, t * dim);
    });
    for (let l = 0; l < hp.nLayer; l++) {
      const L = model.layers[l]!;
      timed('rmsnorm', () => rmsNorm(B.xb, B.x, L.attnNorm, n, dim, eps));
      timed('matmul q/k/v', () => matmulShared([L.wq, L.wk, L.wv], B.xb, n, [B.q, B.k, B.v]));
      if (prefetch) timed('prefetch post', () => kstep.prefetch([L.wo, L.wGate, L.wUp]));
      timed('rope', () => {
        const tab = { cos: B.get('cosG'), sin: B.get('sinG') };
        applyRope(model.ropeGlobal, B.q, n, nh, hd, tab);
        applyRope(model.ropeGlobal, B.k, n, nkv, hd, tab);
      });
      timed('kv append', () => cache.append(l, B.k, B.v));
      timed('attention', () => cache.attend(l, B.q, B.att, { positions, scale: hp.attnScale }));
      timed('matmul o', () => (L.wo as Weight).matmul(B.att, n, B.xb));
      timed('add', () => addInPlace(B.x, B.xb, n * dim));
      timed('rmsnorm', () => rmsNorm(B.xb, B.x, L.ffnNorm, n, dim, eps));
      timed('matmul gate/up', () => matmulShared([L.wGate, L.wUp], B.xb, n, [B.gate, B.up]));
      timed('silu*up', () => gatedAct(model.spec.act, B.gate, B.up, n * ff));
      timed('matmul down', () => L.wDown.matmul(B.gate, n, B.xb));
      timed('add', () => addInPlace(B.x, B.xb, n * dim));
    }
    timed('rmsnorm', () => rmsNorm(B.xb, B.x.subarray((n - 1) * dim), model.outputNorm, 1, dim, eps));
    timed('matmul output', () => model.output.matmul(B.xb, 1, B.logits));
    logits = B.logits.slice();
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
  return logits;
}

// Whole prefills through model.forward (what bench:engine reports) alternate with op-by-op ones.
const whole: number[] = [];
let same = true;
for (let i = 0; i < runs + 1; i++) {
  cache.rewind(0);
  const t0 = performance.now();
  const a = model.forward(tokens, cache).slice();
  if (i > 0) whole.push(performance.now() - t0);
  cache.rewind(0);
  const b = opByOp();
  if (i === 0) parts.clear();
  same &&= Buffer.compare(Buffer.from(a.buffer), Buffer.from(b.buffer)) === 0;
}
cache.rewind(0);

const load = (await import('node:os')).loadavg();
console.log(
  `\nprefill of ${prompt} tokens, ${option('--model') ?? `${wt} weights`}, ${kv} KV, ${threads} threads, ${kernelBuild()?.note ?? 'no wasm'}, ${runs} runs; load average ${load.map((x) => x.toFixed(2)).join(' ')}`,
);
const wm = median(whole);
console.log(`model.forward: median ${wm.toFixed(1)} ms = ${((1000 * prompt) / wm).toFixed(1)} tok/s; op-by-op logits ${same ? 'same bits' : 'DIFFER'}`);
const totalMed = median(parts.get('total')!);
printTable(
  ['part', 'ms/prefill (median)', 'share'],
  [...parts].map(([k, v]) => [k, median(v).toFixed(2), `${((100 * median(v)) / totalMed).toFixed(1)}%`]),
);

/** One weight group's activation packing alone (the layouts its plans need, as matmul.ts runGroup lays them out). */
function packOnly(ws: readonly PackedWeight[], n: number, xPtr: number): () => void {
  const k = ws[0]!.space;
  const e = k.exports;
  const cols = ws[0]!.cols;
  const layouts = [...new Set(ws.map((w) => plan(e, w, n, 'q8').layout))];
  const wsp = workspace(k);
  return () => {
    for (const layout of layouts) {
      const [q, d, s] = layoutBytes(layout, n, cols);
      const p = { q: wsp.get(`prof:${layout}:q`, q || 16), d: wsp.get(`prof:${layout}:d`, d || 16), s: wsp.get(`prof:${layout}:s`, s || 16) };
      if (layout === 'tiles32' || layout === 'tiles256') e['packActQ8']!(xPtr, n, cols, layout === 'tiles32' ? 32 : 256, p.q, p.d, p.s);
      else if (layout === 'tiles32b' || layout === 'tiles256b') {
        const staged = p.q + Math.ceil(n / 4) * cols * 4;
        e['packActQ8']!(xPtr, n, cols, layout === 'tiles32b' ? 32 : 256, staged, p.d, p.s);
        e['narrowActQ8']!(staged, n, cols, p.q);
      } else if (layout !== 'raw') e['packActVecN']!(xPtr, n, cols, Number(layout[3]), p.q, p.d, p.s);
    }
  };
}

// Each weight group alone at the prompt's n: input and outputs in the arena (as in the pass).
const L0 = model.layers[0]!;
const cases: [string, Weight[], number][] = [
  ['q/k/v', [L0.wq, L0.wk, L0.wv], prompt],
  ['o', [L0.wo], prompt],
  ['gate/up', [L0.wGate, L0.wUp], prompt],
  ['down', [L0.wDown], prompt],
  ['output (1 token)', [model.output], 1],
];
const rows: string[][] = [];
for (const [name, ws, n] of cases) {
  const macs = ws.reduce((a, w) => a + w.rows * w.cols, 0) * n;
  const cols = ws[0]!.cols;
  const B = ForwardBuffers.acquire({
    x: n * cols,
    xb: 0,
    q: 0,
    k: 0,
    v: 0,
    att: 0,
    gate: n * ws.reduce((a, w) => a + w.rows, 0),
    up: 0,
    logits: 0,
    cosG: 0,
    sinG: 0,
    cosL: 0,
    sinL: 0,
  });
  const x = B.x;
  for (let i = 0; i < x.length; i++) x[i] = Math.sin(i * 0.37);
  const ys: Float32Array[] = [];
  for (let i = 0, off = 0; i < ws.length; off += n * ws[i]!.rows, i++) ys.push(B.gate.subarray(off, off + n * ws[i]!.rows));
  const fn = () => matmulShared(ws, x, n, ys);
  const pack = packOnly(
    ws.map((w) => w.packedWeight!),
    n,
    x.byteOffset,
  );
  const t1 = () => {
    configureMatmul({ threads: 1 });
    fn();
  };
  const tN = () => {
    configureMatmul({ threads, threadChoice: 'always' });
    fn();
  };
  const [p, a, b] = timeInterleaved([pack, t1, tN], 0.3);
  B.release();
  const kernel = plan(ws[0]!.packedWeight!.space.exports, ws[0]!.packedWeight!, n, 'q8').kernel;
  rows.push([
    name,
    kernel,
    `${n}`,
    (p! * 1e3).toFixed(3),
    (a! * 1e3).toFixed(3),
    (macs / a! / 1e9).toFixed(2),
    (b! * 1e3).toFixed(3),
    (macs / b! / 1e9).toFixed(2),
  ]);
}
configureMatmul({ threads, threadChoice: 'measured' });
console.log(
  '\neach weight group alone (arena input and outputs, weights warm), median per call; pack: the activation layout alone (included in the matmul times)',
);
printTable(['matmul', 'kernel', 'n', 'pack ms', '1 thread ms', 'GMAC/s', `${threads} threads ms`, 'GMAC/s'], rows);
process.exit(0);
