// What a second thread buys at decode, kvpack beside native llama.cpp in the same run: decode after a short
// prompt at 1 and at N threads, rounds alternating the four (engine x threads), medians. Issue 24 asks kvpack
// for 1.6x on two threads at dim 768; native's own ratio on the same file says what this machine allows.
// Run: npm run bench:threads -- [--model GGUF] [--weights q4_0] [--scheme f16] [--context 128] [--rounds 3]
import { loadModel, type Model } from '../src/model/model.js';
import { schemePolicy } from '../src/cache/schemes.js';
import { configureMatmul } from '../src/kernels/matmul/config.js';
import { setThreads } from '../src/kernels/runtime/pool.js';
import { availableCores } from '../src/kernels/runtime/threads.js';
import { declareOptions, median, option, printTable } from './harness.js';
import { syntheticModel } from './engine.js';
import { decodePasses } from './decode-passes.js';
import { WARM_SECONDS } from './engine-long.js';
import { argmax } from '../src/model/sampler.js';
import { fmtLoad, llamaBench, machineNote, nativeLlama, nativeTps, withLoad, type RunLoad } from './native-llama.js';

declareOptions('bench:threads', 'decode at 1 and N threads, kvpack and native llama.cpp alternated in one run', {
  '--threads': { kind: 'int', min: 2, help: 'the larger thread count (capped at available cores)', default: 'available cores' },
  '--model': { kind: 'str', help: "a GGUF file (default: bench:engine's synthetic dim-768 model)" },
  '--weights': { kind: 'str', help: 'weight type of the synthetic model', default: 'q4_0' },
  '--scheme': { kind: 'str', choices: ['f16', 'q8_0', 'q4_0'], help: 'KV type, the same for both engines', default: 'f16' },
  '--context': { kind: 'int', min: 1, help: 'prompt tokens before the timed steps', default: 128 },
  '--steps': { kind: 'int', min: 1, help: 'timed decode steps', default: 24 },
  '--rounds': { kind: 'int', min: 1, help: 'rounds, each running all four', default: 3 },
  '--no-native': { kind: 'switch', help: 'skip native llama.cpp' },
  '--no-nofa': { kind: 'switch', help: 'f16 KV: skip native with flash attention off (run by default beside the default on)' },
});
const log = (s: string) => process.stderr.write(`${s}\n`);
const many = Math.min(Number(option('--threads') ?? availableCores()), availableCores());
if (many < 2) {
  log('bench:threads: this machine has one core: nothing to compare');
  process.exit(2);
}
const scheme = option('--scheme') ?? 'f16';
const context = Number(option('--context') ?? 128);
const steps = Number(option('--steps') ?? 24);
const rounds = Number(option('--rounds') ?? 3);
const path = option('--model') ?? syntheticModel(option('--weights') ?? 'q4_0', log);
const model = loadModel(path, { expand: false });
const status = process.argv.includes('--no-native') ? { ok: false as const, reason: 'skipped (--no-native)' } : nativeLlama(log);
const native = status.ok ? status.native : null;

/**
 * Native's configurations: the scheme as llama.cpp runs it by default (flash attention on for the CPU), and for
 * f16 also with flash attention off (NATIVE_KVS 'f16-nofa'), which decodes faster at depth here.
 */
const nativeKvs = scheme === 'f16' && !process.argv.includes('--no-nofa') ? ['f16', 'f16-nofa'] : [scheme];

/** llama-bench's repetitions per test (-r): kvpack times as many passes over the same steps, median. */
const REPS = 5;

/**
 * Decode tok/s over `steps` steps after a `context`-token prompt on `threads` threads: a warm-up step, then
 * REPS passes, each rewound to the prompt's end, median (as llama-bench's -r 5 reports its median).
 */
function kvpackDecode(m: Model, threads: number): number {
  configureMatmul({ threads });
  setThreads(threads);
  const cache = m.createCache({ policy: schemePolicy(scheme), capacity: context + steps + 8 });
  const prompt = Array.from({ length: context }, (_, i) => 300 + ((i * 7919) % (m.nVocab - 300)));
  const first = argmax(m.forward(prompt, cache));
  const tps = decodePasses(m, cache, first, steps, REPS);
  cache.dispose();
  return median(tps);
}

// Uncounted runs at both thread counts before the rounds, at least WARM_SECONDS together (engine-long.ts: a
// process's first decode steps on two threads run at about half speed while V8 compiles both threads' code).
{
  const t0 = performance.now();
  do for (const t of [many, 1]) log(`warm-up: kvpack ${t} thread(s) ${kvpackDecode(model, t).toFixed(1)} tok/s (not counted)`);
  while (performance.now() - t0 < WARM_SECONDS * 1000);
}

type Key = string;
const runs = new Map<Key, { tps: number; load: RunLoad }[]>();
const add = (k: Key, tps: number, load: RunLoad) => runs.set(k, [...(runs.get(k) ?? []), { tps, load }]);
for (let r = 0; r < rounds; r++) {
  for (const [k, t] of [
    ['kvpack 1', 1],
    ['kvpack N', many],
  ] as const) {
    const x = withLoad(() => kvpackDecode(model, t));
    add(k, x.value, x.load);
    log(`round ${r + 1}: ${k.replace('N', `${many}`)} thread(s) ${x.value.toFixed(1)} tok/s`);
  }
  if (!native) continue;
  for (const kv of nativeKvs) {
    for (const [n, t] of [
      ['1', 1],
      ['N', many],
    ] as const) {
      const k = `native ${kv} ${n}`;
      const x = llamaBench(native, { model: path, threads: t, prompt: 0, gen: steps, depth: native.hasDepth ? context : 0, kv, reps: REPS });
      add(k, nativeTps(x.results, 'tg'), x.load);
      log(`round ${r + 1}: ${k.replace(/ N$/, ` ${many}`)} thread(s) ${nativeTps(x.results, 'tg').toFixed(1)} tok/s`);
    }
  }
}

const med = (k: Key) => (runs.has(k) ? median(runs.get(k)!.map((x) => x.tps)) : NaN);
console.log(
  `\ndecode ${steps} steps after ${context} tokens, ${scheme} KV, ${path}; medians of ${rounds} rounds, engines and thread counts alternated, each run the median of ${REPS} passes${native ? `; native llama.cpp ${native.commit.slice(0, 7)} (llama-bench -r ${REPS}; ${nativeKvs.join(' and ')}: flash attention ${nativeKvs.length > 1 ? 'on (its default) and off' : 'on, its default'})` : `; native: ${status.ok ? '' : status.reason}`}`,
);
const row = (name: string, one: number, n: number) => [name, one.toFixed(1), n.toFixed(1), (n / one).toFixed(2)];
printTable(
  ['engine', '1 thread tok/s', `${many} threads tok/s`, `${many} / 1`],
  [
    row('kvpack', med('kvpack 1'), med('kvpack N')),
    ...(native ? nativeKvs.map((kv) => row(`native llama.cpp ${kv}`, med(`native ${kv} 1`), med(`native ${kv} N`))) : []),
  ],
);
if (native) {
  // The ratio divides by native's faster configuration at each thread count.
  const best = (n: '1' | 'N') => Math.max(...nativeKvs.map((kv) => med(`native ${kv} ${n}`)));
  console.log(`kvpack / native best: ${(med('kvpack 1') / best('1')).toFixed(2)} at 1 thread, ${(med('kvpack N') / best('N')).toFixed(2)} at ${many}`);
  for (const [k, xs] of runs) console.log(`  ${k.replace(/ N$/, ` ${many}`)}: ${xs.map((x) => `${x.tps.toFixed(1)} (${fmtLoad(x.load)})`).join(', ')}`);
}
const busy = machineNote([...runs.values()].flat().map((x) => x.load));
if (busy !== null) console.log(`! ${busy}`);
