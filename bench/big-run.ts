// One weight type of bench:big, meant for a process of its own (engine-big.ts spawns one per type): the
// arena never shrinks, so a second model in the same process would inflate RSS and could not fit beside
// the first. Load time, RSS against file size (no second copy of the weights), prefill, then decode per
// (context, scheme) on a cache filled with synthetic K/V, one cache at a time (an f16 cache of 32K
// positions is 4 GiB on the 8B shape; holding every scheme's at once would not fit beside the weights).
import { performance } from 'node:perf_hooks';
import { NonFiniteError } from '../src/errors.js';
import { wasmKernels } from '../src/kernels/wasm.js';
import { loadModel, type Model } from '../src/model/model.js';
import { schemePolicy } from '../src/cache/schemes.js';
import { kvBytes } from '../src/cache/accounting.js';
import { filledCache, longSteps, parseScheme } from './engine-long.js';
import { printTable } from './harness.js';

export interface BigRunOptions {
  path: string;
  fileBytes: number;
  weights: string;
  prompt: number;
  contexts: readonly number[];
  schemes: readonly string[];
  log: (s: string) => void;
}

interface DecodeRow { scheme: string; context: number; fillS: number; tps: number; rss: number; cacheBytes: number }

const rss = () => process.memoryUsage().rss;
const gib = (b: number) => (b / 2 ** 30).toFixed(2);

function tokens(n: number, vocab: number): number[] {
  return Array.from({ length: n }, (_, i) => 300 + ((i * 7919) % (vocab - 300)));
}

function argmaxFinite(logits: Float32Array, where: string): number {
  let b = 0;
  for (let i = 0; i < logits.length; i++) {
    if (!Number.isFinite(logits[i]!)) throw new NonFiniteError(`${where} logits (random weights scaled wrongly?)`, i, logits[i]!);
    if (logits[i]! > logits[b]!) b = i;
  }
  return b;
}

/** Prefill tok/s of `prompt` tokens on an f16 cache (after a warm-up that also checks the logits are finite). */
function prefill(model: Model, prompt: number): number {
  const toks = tokens(prompt, model.nVocab);
  const warm = model.createCache({ policy: schemePolicy('f16'), capacity: 64 });
  argmaxFinite(model.forward(toks.slice(0, 16), warm), 'warm-up prefill');
  warm.dispose();
  const cache = model.createCache({ policy: schemePolicy('f16'), capacity: prompt });
  const t0 = performance.now();
  const logits = model.forward(toks, cache);
  const s = (performance.now() - t0) / 1000;
  argmaxFinite(logits, 'prefill');
  cache.dispose();
  return prompt / s;
}

function decode(model: Model, scheme: string, context: number): DecodeRow {
  const steps = longSteps(context);
  let t0 = performance.now();
  const f = filledCache(model, scheme, context, steps + 8);
  const fillS = (performance.now() - t0) / 1000;
  const row = { rss: rss(), cacheBytes: f.cache.nbytes().allocated };
  let last = f.last;
  t0 = performance.now();
  for (let i = 0; i < steps; i++) last = argmaxFinite(model.forward([last], f.cache), `decode ${scheme} at ${context}`);
  const tps = steps / ((performance.now() - t0) / 1000);
  f.cache.dispose();
  return { scheme, context, fillS, tps, ...row };
}

export function bigRun(o: BigRunOptions): void {
  wasmKernels(); // the kernels' own memory belongs to the baseline, not to the model
  const rss0 = rss();
  const t0 = performance.now();
  const model = loadModel(o.path, { expand: false });
  const loadS = (performance.now() - t0) / 1000;
  const rss1 = rss();
  o.log(`${o.weights}: loaded in ${loadS.toFixed(1)} s`);
  const prefillTps = prefill(model, o.prompt);
  o.log(`${o.weights}: prefill ${prefillTps.toFixed(1)} tok/s`);
  const rss2 = rss();
  // Smallest cache first: freed arena pages stay resident, so each row's RSS is then its own cache's high-water mark.
  const hp = model.hp;
  const size = (s: string, c: number) => kvBytes({ ctx: c, layers: hp.nLayer, kvHeads: hp.nHeadKv, headDim: hp.headDim, policy: schemePolicy(parseScheme(s).name) }).total;
  const runs = o.contexts.flatMap((c) => o.schemes.map((s) => ({ s, c, bytes: size(s, c) }))).sort((a, b) => a.bytes - b.bytes);
  const rows: DecodeRow[] = [];
  for (const { s, c } of runs) {
    rows.push(decode(model, s, c));
    o.log(`${o.weights}: decode ${s} at ${c}: ${rows.at(-1)!.tps.toFixed(2)} tok/s`);
  }
  rows.sort((a, b) => a.context - b.context || o.schemes.indexOf(a.scheme) - o.schemes.indexOf(b.scheme));

  const within = (r: number, want: number) => `${(r / want).toFixed(3)}${r <= 1.1 * want ? '' : ' (over 1.1x)'}`;
  console.log(`\n${o.weights} weights (random: speed only, not quality), file ${o.fileBytes} B (${gib(o.fileBytes)} GiB), model weights held ${model.weightBytes} B`);
  console.log(`  load ${loadS.toFixed(2)} s (loadModel from the path, weights kept quantized); RSS ${gib(rss0)} GiB before, ${gib(rss1)} GiB after: RSS / file ${within(rss1, o.fileBytes)}, (RSS - before) / file ${((rss1 - rss0) / o.fileBytes).toFixed(3)}`);
  console.log(`  prefill ${o.prompt} tokens (f16 cache): ${prefillTps.toFixed(1)} tok/s, logits finite (checked at every step); RSS after it ${gib(rss2)} GiB (prefill workspaces stay allocated)`);
  console.log(`  decode: caches filled by appending synthetic K/V directly (no prefill: too slow at 32K here), then ${o.contexts.map((c) => `${longSteps(c)} steps at ${c}`).join(', ')} timed; one cache at a time`);
  printTable(['scheme', 'context', 'fill s', 'decode tok/s', 'RSS GiB', 'file + cache GiB', 'RSS / (file + cache)', '(RSS - before) / (file + cache)'], rows.map((r) =>
    [r.scheme, `${r.context}`, r.fillS.toFixed(1), r.tps.toFixed(2), gib(r.rss), gib(o.fileBytes + r.cacheBytes), within(r.rss, o.fileBytes + r.cacheBytes), ((r.rss - rss0) / (o.fileBytes + r.cacheBytes)).toFixed(3)]));
  console.log('  (run smallest cache first: wasm memory never shrinks, so RSS is the high-water mark; it includes the prefill workspaces)');
}
