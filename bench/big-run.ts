// One weight type of bench:big, meant for a process of its own (engine-big.ts spawns one per type): the
// arena never shrinks, so a second model in the same process would inflate RSS and could not fit beside
// the first. Load time, RSS against file size (no second copy of the weights), prefill, then decode per
// (context, scheme) on a cache filled with synthetic K/V, one cache at a time (an f16 cache of 32K
// positions is 4 GiB on the 8B shape; holding every scheme's at once would not fit beside the weights).
// Native llama.cpp (bench/native-llama.ts) runs on the same file and threads alternated with it: prefill
// round by round, decode after each context's kvpack rows (llama-bench -d refills the context per run); the
// load is recorded around every run and every ratio divides by the native figure of this run.
import { kernelBuild } from '../src/kernels/runtime/wasm.js';
import { performance } from 'node:perf_hooks';
import { NonFiniteError } from '../src/errors.js';
import { wasmKernels } from '../src/kernels/runtime/wasm.js';
import { loadModel, type Model } from '../src/model/model.js';
import { schemePolicy } from '../src/cache/schemes.js';
import { kvBytes } from '../src/cache/accounting.js';
import { filledCache, longSteps, parseScheme, ROUND_WARM_SECONDS, ROUND_WARM_STEPS, WARM_SECONDS, WARM_STEPS, warmDecode, warmSteps } from './engine-long.js';
import { median, printTable } from './harness.js';
import { machineNote, checkNative, fmtLoad, llamaBench, nativeNote, nativeTps, withLoad, type NativeLlama, type RunLoad } from './native-llama.js';
import { depthDecode, depthTool, SEED_TOKENS } from './native-depth.js';
import { ceilingLines, ceilingRows, measureFmaPeaks } from './attention-ceiling.js';

export interface BigRunOptions {
  path: string;
  fileBytes: number;
  weights: string;
  prompt: number;
  contexts: readonly number[];
  schemes: readonly string[];
  threads: number;
  /** Shape name (the native reference figures of issue 24 are for '8b'). */
  shape: string;
  /** Native llama.cpp, or why it is not measured. */
  native: NativeLlama | { unavailable: string };
  /** KV types native decode runs with, and the contexts it runs at (a subset of `contexts`). */
  nativeKvs: readonly string[];
  nativeContexts: readonly number[];
  /** Deepest context native decode fills by llama-bench -d's prefill; deeper ones load a tiled state (native-depth.ts). */
  nativePrefillMax: number;
  /** Alternating prefill rounds, kvpack then native. */
  rounds: number;
  log: (s: string) => void;
}

interface DecodeRow {
  scheme: string;
  context: number;
  fillS: number;
  /** Median over the rounds; `runs` in round order. */
  tps: number;
  runs: number[];
  rss: number;
  cacheBytes: number;
  load: RunLoad;
}
interface NativeDecode {
  kv: string;
  context: number;
  /** How the context was filled: llama-bench -d's prefill, or a tiled state loaded by decode-at-depth. */
  fill: 'prefilled' | 'tiled';
  tps: number;
  runs: number[];
  load: RunLoad;
}

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

/**
 * One round of one scheme: a cache filled afresh, `warm` uncounted steps for at least `warmS` seconds (logged),
 * then longSteps(context) timed steps.
 */
function decode(model: Model, scheme: string, context: number, warm: number, warmS: number, log: (s: string) => void): Omit<DecodeRow, 'runs' | 'load'> {
  const steps = longSteps(context);
  let t0 = performance.now();
  const f = filledCache(model, scheme, context, steps + warm + 8);
  const fillS = (performance.now() - t0) / 1000;
  const row = { rss: rss(), cacheBytes: f.cache.nbytes().allocated };
  if (warm) log(`decode ${scheme} at ${context}: warm-up, ${warmDecode(model, f, warm, warmS).toFixed(2)} tok/s (not counted)`);
  let last = f.last;
  t0 = performance.now();
  for (let i = 0; i < steps; i++) last = argmaxFinite(model.forward([last], f.cache), `decode ${scheme} at ${context}`);
  const tps = steps / ((performance.now() - t0) / 1000);
  f.cache.dispose();
  return { scheme, context, fillS, tps, ...row };
}

/** Folds one more round into a row (median tps; the load of the slowest round's machine kept as its note). */
function addRound<T extends { tps: number; runs: number[]; load: RunLoad }>(
  rows: T[],
  find: (r: T) => boolean,
  make: () => T,
  tps: number,
  load: RunLoad,
): void {
  let r = rows.find(find);
  if (!r) rows.push((r = make()));
  r.runs.push(tps);
  r.tps = median(r.runs);
  if (tps === Math.min(...r.runs)) r.load = load;
}

export function bigRun(o: BigRunOptions): void {
  wasmKernels(); // the kernels' own memory belongs to the baseline, not to the model
  let native = 'bin' in o.native ? o.native : null;
  let nativeDown = 'unavailable' in o.native ? o.native.unavailable : '';
  // A native run that fails leaves the native figures out from there on, and says why.
  const tryNative = <T>(what: string, fn: (n: NativeLlama) => T): T | null => {
    if (!native) return null;
    try {
      return fn(native);
    } catch (e) {
      const m = e as { stderr?: string; message: string };
      nativeDown = `${what} failed: ${(m.stderr ?? m.message).trim().split('\n').pop()}`;
      o.log(`native llama.cpp: ${nativeDown}`);
      native = null;
      return null;
    }
  };
  const rss0 = rss();
  const t0 = performance.now();
  const model = loadModel(o.path, { expand: false });
  const loadS = (performance.now() - t0) / 1000;
  const rss1 = rss();
  o.log(`${o.weights}: loaded in ${loadS.toFixed(1)} s`);
  const ours: { tps: number; load: RunLoad }[] = [];
  // Native prefill with flash attention on (its default) and, when native decode runs it off too, off: the
  // ratio divides by the faster.
  const prefillKvs = ['f16', ...(o.nativeKvs.includes('f16-nofa') ? ['f16-nofa'] : [])];
  const theirs = new Map<string, { tps: number; load: RunLoad }[]>(prefillKvs.map((kv) => [kv, []]));
  for (let r = 0; r < o.rounds; r++) {
    const k = withLoad(() => prefill(model, o.prompt));
    ours.push({ tps: k.value, load: k.load });
    o.log(`${o.weights}: prefill ${k.value.toFixed(1)} tok/s`);
    for (const kv of prefillKvs) {
      const n = tryNative(`llama-bench -p ${o.prompt} ${kv}`, (nl) =>
        llamaBench(nl, { model: o.path, threads: o.threads, prompt: o.prompt, gen: 0, depth: 0, kv, reps: 1 }),
      );
      if (!n) continue;
      theirs.get(kv)!.push({ tps: nativeTps(n.results, 'pp'), load: n.load });
      o.log(`${o.weights}: native prefill ${kv} ${theirs.get(kv)!.at(-1)!.tps.toFixed(1)} tok/s`);
    }
  }
  const theirsAll = [...theirs.values()].flat();
  const prefillTps = median(ours.map((x) => x.tps));
  const rss2 = rss();
  // Smallest cache first within each context (contexts ascending): freed arena pages stay resident, so each
  // row's RSS is then its own cache's high-water mark.
  const hp = model.hp;
  const size = (s: string, c: number) =>
    kvBytes({ ctx: c, layers: hp.nLayer, kvHeads: hp.nHeadKv, headDim: hp.headDim, policy: schemePolicy(parseScheme(s).name) }).total;
  const rows: DecodeRow[] = [];
  const natives: NativeDecode[] = [];
  const deepest = Math.max(0, ...o.nativeContexts);
  // Rounds alternate kvpack's schemes with native's KV types at each context: this host's speed drifts by
  // 1.5x over minutes, so one run each could favour whichever ran in a quiet minute. Medians are reported.
  for (const c of [...o.contexts].sort((a, b) => a - b)) {
    for (let r = 0; r < o.rounds; r++) {
      for (const [i, s] of [...o.schemes].sort((a, b) => size(a, c) - size(b, c)).entries()) {
        // The first round's long warm-up, then each round's short one (engine-long.ts ROUND_WARM_SECONDS).
        const warm = r === 0 ? warmSteps(o.schemes.length, c) : ROUND_WARM_STEPS;
        const warmS = r === 0 ? WARM_SECONDS / o.schemes.length : i === 0 ? ROUND_WARM_SECONDS : 0;
        const k = withLoad(() => decode(model, s, c, warm, warmS, (m) => o.log(`${o.weights}: ${m}`)));
        const { tps, ...row } = k.value;
        addRound(
          rows,
          (x) => x.scheme === s && x.context === c,
          () => ({ ...row, tps, runs: [], load: k.load }),
          tps,
          k.load,
        );
        o.log(`${o.weights}: decode ${s} at ${c}, round ${r + 1}: ${tps.toFixed(2)} tok/s`);
      }
      if (!o.nativeContexts.includes(c)) continue;
      // Tiled states run at every native context once any context is past what llama-bench can fill, so the
      // shallow ones compare them with llama-bench's prefilled figure in the same rounds.
      const fills: NativeDecode['fill'][] = [
        ...(c <= o.nativePrefillMax ? (['prefilled'] as const) : []),
        ...(deepest > o.nativePrefillMax ? (['tiled'] as const) : []),
      ];
      for (const kv of o.nativeKvs) {
        for (const fill of fills) {
          const what = fill === 'prefilled' ? `llama-bench -d ${c} ${kv}` : `decode-at-depth -d ${c} ${kv}`;
          const n = tryNative(what, (nl) => {
            if (fill === 'prefilled') {
              if (!nl.hasDepth) return null;
              const b = llamaBench(nl, { model: o.path, threads: o.threads, prompt: 0, gen: longSteps(c), depth: c, kv, reps: 1 });
              return { tps: nativeTps(b.results, 'tg'), load: b.load };
            }
            const tool = depthTool(nl);
            if (!('bin' in tool)) throw new Error(tool.reason);
            const d = depthDecode(tool.bin, { model: o.path, threads: o.threads, gen: longSteps(c), depth: c, kv, reps: 1 });
            return { tps: d.result.tps, load: d.load };
          });
          if (!n) continue;
          addRound(
            natives,
            (x) => x.kv === kv && x.context === c && x.fill === fill,
            () => ({ kv, context: c, fill, tps: n.tps, runs: [], load: n.load }),
            n.tps,
            n.load,
          );
          o.log(`${o.weights}: native decode ${kv} at ${c} (${fill}), round ${r + 1}: ${n.tps.toFixed(2)} tok/s`);
        }
      }
    }
  }
  rows.sort((a, b) => a.context - b.context || o.schemes.indexOf(a.scheme) - o.schemes.indexOf(b.scheme));

  const refModel = `${o.shape}-${o.weights}`;
  const nativePrefill = [...theirs].filter(([, xs]) => xs.length).map(([kv, xs]) => ({ kv, xs, tps: median(xs.map((x) => x.tps)) }));
  const ppRef = (kv: string, tps: number) => (kv === 'f16' ? checkNative(refModel, 'pp', o.prompt, 0, 'f16', o.threads, tps) : null);
  const within = (r: number, want: number) => `${(r / want).toFixed(3)}${r <= 1.1 * want ? '' : ' (over 1.1x)'}`;
  const loads = (xs: { load: RunLoad }[]) => xs.map((x) => fmtLoad(x.load)).join(' ');
  console.log(
    `\n${o.weights} weights (random: speed only, not quality), file ${o.fileBytes} B (${gib(o.fileBytes)} GiB), model weights held ${model.weightBytes} B; ${o.threads} threads; kvpack kernels: ${kernelBuild()?.note ?? 'none'}`,
  );
  console.log(
    `  native llama.cpp: ${native || theirsAll.length ? `${'bin' in o.native ? `${o.native.commit.slice(0, 7)} ${o.native.bin}` : ''}, flash attention on (llama.cpp's default on CPU) unless the KV says nofa, same file and threads` : `unavailable (${nativeDown}); no native ratio printed`}`,
  );
  console.log(
    `  load ${loadS.toFixed(2)} s (loadModel from the path, weights kept quantized); RSS ${gib(rss0)} GiB before, ${gib(rss1)} GiB after: RSS / file ${within(rss1, o.fileBytes)}, (RSS - before) / file ${((rss1 - rss0) / o.fileBytes).toFixed(3)}`,
  );
  console.log(
    `  prefill ${o.prompt} tokens (f16 cache), median of ${ours.length} rounds${theirsAll.length ? ' alternated with native' : ''}: kvpack ${prefillTps.toFixed(1)} tok/s (runs ${ours.map((x) => x.tps.toFixed(1)).join(', ')}; load ${loads(ours)}), logits finite (checked at every step); RSS after it ${gib(rss2)} GiB (prefill workspaces stay allocated)`,
  );
  const ppFar = nativePrefill.some((n) => ppRef(n.kv, n.tps)?.farBelow);
  const ppBest = nativePrefill.length ? Math.max(...nativePrefill.map((n) => n.tps)) : null;
  for (const n of nativePrefill) {
    console.log(
      `  native prefill, KV ${n.kv}: ${n.tps.toFixed(1)} tok/s (runs ${n.xs.map((x) => x.tps.toFixed(1)).join(', ')}; load ${loads(n.xs)}; issue 24 on this machine kind: ${nativeNote(ppRef(n.kv, n.tps))}): kvpack / native ${ppFar ? 'n/a (native far below its reference: loaded machine or crippled build)' : (prefillTps / n.tps).toFixed(2)}`,
    );
  }
  if (ppBest !== null && nativePrefill.length > 1 && !ppFar) console.log(`  prefill kvpack / native best: ${(prefillTps / ppBest).toFixed(2)}`);
  console.log(
    `  decode: caches filled by appending synthetic K/V directly (no prefill: too slow at 32K here), then ${o.contexts.map((c) => `${longSteps(c)} steps at ${c}`).join(', ')} timed; one cache at a time; median of ${o.rounds} rounds${natives.length ? ` alternated with native: ${o.nativeKvs.join('/')} KV at ${o.nativeContexts.join(', ')}, filled by llama-bench -d's prefill up to ${o.nativePrefillMax} and beyond that by a state of ${SEED_TOKENS} prefilled tokens' K/V tiled to the depth (bench/native/decode-at-depth.cpp)` : ''}`,
  );
  const farTg = (x: NativeDecode) => !!checkNative(refModel, 'tg', 0, x.context, x.kv, o.threads, x.tps)?.farBelow;
  // Ratios divide by llama-bench's own prefilled figure where it ran, else by the tiled state's.
  const nat = (c: number) => {
    const at = natives.filter((x) => x.context === c);
    return at.some((x) => x.fill === 'prefilled') ? at.filter((x) => x.fill === 'prefilled') : at;
  };
  const vs = (tps: number, n: NativeDecode | undefined, far: boolean) => (!n ? '-' : far ? 'n/a*' : (tps / n.tps).toFixed(2));
  printTable(
    [
      'scheme',
      'context',
      'fill s',
      'decode tok/s',
      'x native f16',
      'x native best',
      'RSS GiB',
      'file + cache GiB',
      'RSS / (file + cache)',
      '(RSS - before) / (file + cache)',
    ],
    rows.map((r) => {
      const f16 = nat(r.context).find((x) => x.kv === 'f16');
      const best = nat(r.context).sort((a, b) => b.tps - a.tps)[0];
      return [
        r.scheme,
        `${r.context}`,
        r.fillS.toFixed(1),
        `${r.tps.toFixed(2)}${r.runs.length > 1 ? ` (${r.runs.map((x) => x.toFixed(2)).join(', ')})` : ''}`,
        vs(r.tps, f16, !!f16 && farTg(f16)),
        vs(r.tps, best, nat(r.context).some(farTg)),
        gib(r.rss),
        gib(o.fileBytes + r.cacheBytes),
        within(r.rss, o.fileBytes + r.cacheBytes),
        ((r.rss - rss0) / (o.fileBytes + r.cacheBytes)).toFixed(3),
      ];
    }),
  );
  console.log('  (run smallest cache first: wasm memory never shrinks, so RSS is the high-water mark; it includes the prefill workspaces)');
  console.log(
    `  (kvpack's first round at each context runs ${WARM_STEPS} uncounted decode steps (and ${WARM_SECONDS} s) across its schemes first, as llama-bench warms up: a process's first ~20 steps run at half speed on two threads; every later round ${ROUND_WARM_STEPS} per scheme and ${ROUND_WARM_SECONDS} s before its first, as llama-bench times right after its own prefill; their tok/s are in the log)`,
  );
  if (natives.length) {
    console.log("  native llama.cpp decode (same file and threads, alternated with kvpack's rows round by round at each context)");
    printTable(
      ['  KV', 'context', 'fill', 'decode tok/s', 'issue 24 ref', 'load before->after, read GB/s'],
      natives.map((x) => [
        `  ${x.kv}`,
        `${x.context}`,
        x.fill === 'prefilled' ? 'llama-bench -d' : 'tiled state',
        `${x.tps.toFixed(2)}${x.runs.length > 1 ? ` (${x.runs.map((y) => y.toFixed(2)).join(', ')})` : ''}`,
        nativeNote(checkNative(refModel, 'tg', 0, x.context, x.kv, o.threads, x.tps)),
        fmtLoad(x.load),
      ]),
    );
    for (const t of natives.filter((x) => x.fill === 'tiled')) {
      const p = natives.find((x) => x.fill === 'prefilled' && x.kv === t.kv && x.context === t.context);
      if (p) console.log(`  tiled-state check, ${t.kv} at ${t.context}: tiled / llama-bench -d = ${(t.tps / p.tps).toFixed(2)}`);
    }
    const busy = machineNote([...ours, ...theirsAll, ...rows, ...natives].map((x) => x.load));
    if (busy !== null) console.log(`  ! ${busy}`);
    if (natives.some(farTg) || ppFar)
      console.log('  * native llama.cpp ran far below its issue-24 figure (a loaded machine or a crippled build): no ratio is divided by it');
  }
  // Issue 24's deep target: q2k at 32K at 2x native's best, weighed against what f32 SIMD could reach.
  const deep = ceilingRows(
    rows,
    o.contexts.flatMap((c) => nat(c).filter((x) => !farTg(x))),
    (scheme, c) => (parseScheme(scheme).name === 'q2k' && c >= 32768 ? 2 : null),
  );
  if (deep.length) {
    const peaks = measureFmaPeaks(o.threads);
    if (peaks) for (const line of ceilingLines({ layers: hp.nLayer, heads: hp.nHead, headDim: hp.headDim }, peaks, deep)) console.log(line);
    else console.log('  attention ceiling: no multiply-add probe (no C compiler), not printed');
  }
}
