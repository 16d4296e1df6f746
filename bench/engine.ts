// Engine benchmark: matmul kernels (TS reference vs wasm f32 / q8 activations, 1 vs N threads), then prefill
// and decode tokens/s of kvpack vs its peer node-llama-cpp (bench/engine-peer.ts: its own process, best of 1
// and N threads, load recorded) on the same synthetic GGUF and KV cache type, in one run, with native
// llama.cpp's figures for this machine kind beside; then kvpack decode tokens/s per cache scheme at long contexts.
// No mid-size real model ships with the repo: a random llama (dim 768, 12 layers, vocab 32000) is written
// once per weight type into the temp dir by our GGUF writer.
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { tinyLlama } from '../test/fixtures/tiny.js';
import { writeGguf } from '../src/gguf/writer.js';
import { GGML, ggmlTypeByName } from '../src/gguf/types.js';
import { encode } from '../src/formats/codec.js';
import { loadModel, type Model } from '../src/model/model.js';
import { Weight } from '../src/model/forward-weights.js';
import { closeMatmulThreads, configureMatmul, TILE_MIN_TOKENS_F32, TILE_MIN_TOKENS_Q8, wasmMatmul, type Activations } from '../src/model/matmul-wasm.js';
import { availableCores } from '../src/model/threads.js';
import { schemePolicy } from '../src/cache/schemes.js';
import { benchLong, type LongRow } from './engine-long.js';
import type { CachePolicy } from '../src/cache/policy.js';
import { Prng } from '../src/numeric/prng.js';
import { printTable, timeMedian } from './harness.js';
import { NATIVE_LLAMA, NATIVE_LLAMA_DEPTH, PEER_SHORTFALL, runPeer, type PeerResult } from './engine-peer.js';

/** The synthetic model: a small-Llama shape (TinyLlama-like width, GQA 12/4, head dim 64). */
const SHAPE = { dim: 768, layers: 12, heads: 12, kvHeads: 4, ff: 2048, vocab: 32000, ctx: 32768 + 512 };
const PROMPT = 128;
const DECODE = 24;
/** Weights of the long-context table (both engines): q8_0, the type the engine table's main rows use. */
const LONG_WEIGHTS = 'q8_0';

export interface EngineBenchOptions {
  threads?: number;
  /** Weight types of the synthetic model ('f16', 'q8_0', 'q4_0'). */
  weights?: string[];
  /** Context lengths for the per-scheme decode table. */
  contexts?: number[];
  schemes?: string[];
  /** Alternating rounds of the long-context table (medians reported). */
  rounds?: number;
  /** Skip node-llama-cpp. */
  noLlama?: boolean;
  /** Only the long-context table (both engines), for a re-run in a quiet window of a shared machine. */
  longOnly?: boolean;
  log?: (s: string) => void;
}

export interface EngineBenchResult {
  threads: number;
  /** The peer's own run (its name, load during it, every configuration); null when it could not run. */
  peer: PeerResult | null;
  matmul: { weight: string; shape: string; n: number; impl: string; ms: number; gflops: number }[];
  actsError: { weight: string; relL2: number }[];
  engines: { weight: string; kv: string; engine: string; prefillTps: number; decodeTps: number }[];
  long: LongRow[];
}

/** Path of the synthetic model in the temp dir, written on first use. */
export function syntheticModel(weightType: string, log: (s: string) => void): string {
  const s = SHAPE;
  const path = join(tmpdir(), `kvpack-bench-llama-d${s.dim}-l${s.layers}-v${s.vocab}-c${s.ctx}-${weightType}.gguf`);
  if (!existsSync(path)) {
    log(`writing ${path} ...`);
    writeGguf(path, tinyLlama({ ...s, weightType, seed: 7, separateOutput: false }));
  }
  return path;
}

function tokens(n: number, seed: number): number[] {
  return Array.from({ length: n }, (_, i) => 300 + ((i * 7919 + seed * 104729) % (SHAPE.vocab - 300)));
}

function argmax(a: Float32Array): number {
  let b = 0;
  for (let i = 1; i < a.length; i++) if (a[i]! > a[b]!) b = i;
  return b;
}

/** Matmul kernels on one [2048, 768] weight: decode (n = 1) and a 64-token batch. */
function benchMatmul(threads: number, log: (s: string) => void): { rows: EngineBenchResult['matmul']; err: EngineBenchResult['actsError'] } {
  const rows = 2048, cols = 768;
  const rng = new Prng(5);
  const values = rng.normals(rows * cols);
  const out: EngineBenchResult['matmul'] = [];
  const err: EngineBenchResult['actsError'] = [];
  for (const wt of ['f16', 'q8_0', 'q4_0', 'q4_K']) {
    const type = ggmlTypeByName(wt).id;
    const data = type === GGML.Q4_K ? randomK(rows, cols, rng) : encode(wt, values, [rows, cols]);
    const w = new Weight(wt, { type, dims: [cols, rows], data });
    for (const n of [1, 64]) {
      const x = rng.normals(n * cols);
      const y = new Float32Array(n * rows);
      const add = (impl: string, fn: () => void) => {
        const s = timeMedian(fn, 0.3);
        out.push({ weight: wt, shape: `${rows}x${cols}`, n, impl, ms: s * 1e3, gflops: (2 * rows * cols * n) / s / 1e9 });
      };
      add('ts reference', () => w.matmulRef(x, n, y));
      const acts: Activations[] = wt === 'f16' ? ['f32'] : ['f32', 'q8'];
      for (const a of acts) {
        const tiled = n >= (a === 'q8' && wt !== 'f16' ? TILE_MIN_TOKENS_Q8 : TILE_MIN_TOKENS_F32) ? ' tiled' : '';
        configureMatmul({ threads: 1 });
        add(`wasm${tiled} ${a} acts, 1 thread`, () => wasmMatmul(w.packedWeight!, x, n, y, a));
        if (threads > 1) {
          configureMatmul({ threads, threadChoice: 'always' });
          add(`wasm${tiled} ${a} acts, ${threads} threads`, () => wasmMatmul(w.packedWeight!, x, n, y, a));
        }
      }
      if (n === 64 && wt !== 'f16') {
        // Error of q8 activations against the f32-activation path (same weights).
        const yf = new Float32Array(n * rows);
        const yq = new Float32Array(n * rows);
        wasmMatmul(w.packedWeight!, x, n, yf, 'f32');
        wasmMatmul(w.packedWeight!, x, n, yq, 'q8');
        let num = 0, den = 0;
        for (let i = 0; i < yf.length; i++) {
          num += (yq[i]! - yf[i]!) ** 2;
          den += yf[i]! ** 2;
        }
        err.push({ weight: wt, relL2: Math.sqrt(num / den) });
      }
    }
    log(`matmul ${wt} done`);
  }
  configureMatmul({ threads, threadChoice: 'measured' });
  return { rows: out, err };
}

/** Random q4_K blocks with sane f16 scales (no q4_K encoder in src/formats). */
function randomK(rows: number, cols: number, rng: Prng): Uint8Array {
  const bytes = new Uint8Array((cols / 256) * 144 * rows);
  for (let i = 0; i < bytes.length; i++) bytes[i] = rng.int(256);
  for (let b = 0; b < bytes.length; b += 144) {
    bytes[b + 1] = 0x1c + rng.int(4);
    bytes[b + 3] = 0x1c + rng.int(4);
  }
  return bytes;
}

function kvpackEngine(model: Model, policy: CachePolicy): { prefillTps: number; decodeTps: number } {
  const cache = model.createCache({ policy, capacity: 512 });
  const prompt = tokens(PROMPT, 1);
  // Warm-up on a throwaway cache: first calls compile wasm tiers and allocate workspaces.
  const warm = model.createCache({ policy, capacity: 512 });
  model.forward(prompt.slice(0, 32), warm);
  for (let i = 0; i < 4; i++) model.forward([prompt[i]!], warm);
  warm.dispose();
  let t0 = performance.now();
  let logits = model.forward(prompt, cache);
  const prefillS = (performance.now() - t0) / 1000;
  t0 = performance.now();
  for (let i = 0; i < DECODE; i++) logits = model.forward([argmax(logits)], cache);
  const decodeS = (performance.now() - t0) / 1000;
  cache.dispose();
  return { prefillTps: PROMPT / prefillS, decodeTps: DECODE / decodeS };
}

export async function benchEngine(o: EngineBenchOptions = {}): Promise<EngineBenchResult> {
  const log = o.log ?? (() => {});
  const threads = Math.min(o.threads ?? availableCores(), availableCores());
  configureMatmul({ threads });
  const res: EngineBenchResult = { threads, peer: null, matmul: [], actsError: [], engines: [], long: [] };
  if (!o.longOnly) {
    const mm = benchMatmul(threads, log);
    res.matmul = mm.rows;
    res.actsError = mm.err;
  }

  const weights = o.longOnly ? [LONG_WEIGHTS] : [...(o.weights ?? ['f16', 'q8_0'])];
  const kvs = o.longOnly ? [] : ['f16', 'q8_0'];
  const contexts = o.contexts ?? [1024, 8192, 32768];
  if (!weights.includes(LONG_WEIGHTS) && contexts.length) weights.push(LONG_WEIGHTS);
  // `:int8` / `:w16` suffixes: the same scheme with the attention accuracy choices --attn-q int8 / --attn-v int16.
  const schemes = o.schemes ?? ['f16', 'q8_0', 'q4_0', 'q2k', 'q8_0:int8:w16', 'q4_0:int8:w16', 'q2k:w16'];
  const paths = new Map(weights.map((w) => [w, syntheticModel(w, log)]));
  for (const [wt, path] of kvs.length ? paths : []) {
    const model = loadModel(path, { expand: false });
    for (const kv of kvs) {
      for (const acts of ['q8', 'f32'] as const) {
        if (wt === 'f16' && acts === 'f32') continue;
        configureMatmul({ activations: acts });
        const r = kvpackEngine(model, schemePolicy(kv));
        res.engines.push({ weight: wt, kv, engine: `kvpack (${wt === 'f16' ? 'f32' : acts} acts)`, ...r });
      }
      configureMatmul({ activations: 'q8' });
      log(`kvpack ${wt}/${kv} done`);
    }
  }
  if (!o.noLlama && kvs.length) {
    // In a child process of its own, while ours idles (pool workers asleep), at 1 and `threads` threads.
    try {
      const peer = runPeer({ models: Object.fromEntries(paths), kvs, threads: threads > 1 ? [1, threads] : [1], prompt: PROMPT, decode: DECODE, repeats: 2 });
      res.peer = peer;
      for (const r of peer.rows) res.engines.push({ weight: r.weight, kv: r.kv, engine: peer.engine, prefillTps: r.prefillTps, decodeTps: r.decodeTps });
      log(`${peer.engine} done (load ${peer.load[0].toFixed(1)} -> ${peer.load[1].toFixed(1)})`);
    } catch (e) {
      log(`node-llama-cpp unavailable: ${(e as Error).message}`);
    }
  }
  if (contexts.length) res.long = await benchLong(paths.get(LONG_WEIGHTS)!, LONG_WEIGHTS, schemes, contexts, threads, o.rounds ?? 3, !!o.noLlama, log);
  closeMatmulThreads();
  return res;
}

/** Prints the three tables, with kvpack / llama.cpp ratios from the same run. */
export function printEngine(r: EngineBenchResult): void {
  if (r.matmul.length) {
    console.log(`\nmatmul kernels, one weight, median per call (threads available: ${r.threads})`);
    printTable(['weight', 'shape', 'n', 'impl', 'ms/call', 'GFLOP/s'], r.matmul.map((m) => [m.weight, m.shape, `${m.n}`, m.impl, m.ms.toFixed(3), m.gflops.toFixed(2)]));
    console.log('\nq8 activations vs f32 activations, 64 tokens: relative L2 error of the output');
    printTable(['weight', 'relL2'], r.actsError.map((e) => [e.weight, e.relL2.toExponential(2)]));
  }
  const s = SHAPE;
  if (r.engines.length) console.log(`\nengine, synthetic llama dim ${s.dim} x ${s.layers} layers, vocab ${s.vocab}, GQA ${s.heads}/${s.kvHeads}; prompt ${PROMPT}, decode ${DECODE}; ${r.threads} threads`);
  const peer = r.peer;
  const pl = (wt: string, kv: string) => (peer ? r.engines.find((e) => e.engine === peer.engine && e.weight === wt && e.kv === kv) : undefined);
  const native = (wt: string, kv: string) => NATIVE_LLAMA.find((n) => n.weight === wt && n.kv === kv && n.threads === r.threads);
  const range = (x: number, [lo, hi]: [number, number]) => (lo === hi ? (x / lo).toFixed(2) : `${(x / hi).toFixed(2)}-${(x / lo).toFixed(2)}`);
  if (r.engines.length) printTable(['weights', 'KV', 'engine', 'prefill tok/s', 'decode tok/s', `prefill x peer`, `decode x peer`, 'prefill x native', 'decode x native'], r.engines.map((e) => {
    const l = pl(e.weight, e.kv);
    const n = native(e.weight, e.kv);
    return [e.weight, e.kv, e.engine, e.prefillTps.toFixed(1), e.decodeTps.toFixed(1), l ? (e.prefillTps / l.prefillTps).toFixed(2) : '-', l ? (e.decodeTps / l.decodeTps).toFixed(2) : '-', n ? range(e.prefillTps, n.pp128) : '-', n ? range(e.decodeTps, n.tg24) : '-'];
  }));
  if (peer) {
    console.log(`\npeer: ${peer.engine}, prebuilt CPU binaries, its own process, best of 1 and ${r.threads} threads (2 runs each); load average ${peer.load[0].toFixed(1)} -> ${peer.load[1].toFixed(1)}, other processes used ${peer.otherCores.toFixed(2)} cores meanwhile`);
    printTable(['weights', 'KV', 'runs: threads prefill/decode tok/s'], peer.rows.map((p) => [p.weight, p.kv, p.runs.map(([t, a, b]) => `${t}t ${a.toFixed(0)}/${b.toFixed(1)}`).join(', ')]));
    const short = peer.rows.filter((p) => { const n = native(p.weight, p.kv); return n && (p.decodeTps < 0.85 * n.tg24[0] || p.prefillTps < 0.85 * n.pp128[0]); });
    console.log(`native llama.cpp reference (llama-bench, CPU build, flash attention, this machine kind, issue 13), ${r.threads} threads: ` + NATIVE_LLAMA.filter((n) => n.threads === r.threads).map((n) => `${n.weight}/${n.kv} pp128 ${n.pp128[0]}${n.pp128[1] !== n.pp128[0] ? `-${n.pp128[1]}` : ''}, tg24 ${n.tg24[0]}${n.tg24[1] !== n.tg24[0] ? `-${n.tg24[1]}` : ''}`).join('; '));
    if (short.length) console.log(`${peer.engine} runs more than 15% below native llama.cpp here (${short.map((p) => `${p.weight}/${p.kv}`).join(', ')}): ${PEER_SHORTFALL}`);
  }
  console.log('\ndecode tok/s at long context, median of alternating rounds (kvpack: cache filled with random K/V; the peer: prefilled)');
  const ref = (c: number) => r.long.find((x) => x.engine.startsWith('node-llama-cpp') && x.context === c);
  // Native llama.cpp at this depth and thread count: its f16 cache, and its best cache type there.
  const depth = (c: number) => NATIVE_LLAMA_DEPTH.filter((d) => d.depth === c && d.threads === r.threads);
  printTable(['engine', 'KV', 'context', 'decode tok/s', 'x peer f16', 'x native f16', 'x native best'], r.long.map((x) => {
    const l = ref(x.context);
    const d = depth(x.context);
    const f16 = d.find((n) => n.kv === 'f16');
    const best = d.length ? Math.max(...d.map((n) => n.tg)) : 0;
    return [x.engine, x.kv, `${x.context}`, x.decodeTps.toFixed(2), l ? (x.decodeTps / l.decodeTps).toFixed(2) : '-', f16 ? (x.decodeTps / f16.tg).toFixed(2) : '-', best ? (x.decodeTps / best).toFixed(2) : '-'];
  }));
  const d = NATIVE_LLAMA_DEPTH.filter((n) => n.threads === r.threads);
  if (r.long.length && d.length) console.log(`native llama.cpp reference (llama-bench -d, decode of 16 tokens after a filled context, q8_0 weights, issue 13), ${r.threads} threads: ` + d.map((n) => `${n.kv} KV at ${n.depth}: ${n.tg}`).join('; '));
}

// Run directly: node dist/bench/engine.js [--threads N] [--quick] [--long-only] [--schemes a,b:w16] [--contexts 1024,32768] [--rounds 3]
if (import.meta.url === `file://${process.argv[1]}`) {
  const quick = process.argv.includes('--quick');
  const ti = process.argv.indexOf('--threads');
  const arg = (name: string) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : undefined);
  const r = await benchEngine({
    threads: ti >= 0 ? Number(process.argv[ti + 1]) : undefined,
    contexts: arg('--contexts')?.split(',').map(Number) ?? (quick ? [1024, 8192] : undefined),
    schemes: arg('--schemes')?.split(','),
    rounds: arg('--rounds') ? Number(arg('--rounds')) : undefined,
    longOnly: process.argv.includes('--long-only'),
    log: (s) => process.stderr.write(`${s}\n`),
  });
  printEngine(r);
}
