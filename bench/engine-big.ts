// npm run bench:big: a synthetic Llama-3-8B-shaped model (random weights: speed only, never quality) in
// q4_0 and q4_K, written by our GGUF writer into the temp dir when absent (bench/big-model.ts): load time,
// RSS vs file size, prefill and decode tok/s per cache scheme at 1K and 32K (bench/big-run.ts, one child
// process per weight type); then a q2k cache beyond 4 GiB that appends, attends and saves/restores
// (bench/big-cache.ts). --shape small dry-runs all of it in a minute. Native llama.cpp's llama-bench
// (bench/native-llama.ts, built once and cached) runs alternated with it on the same file and threads.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { KvpackError } from '../src/errors.js';
import { schemes as schemeRegistry } from '../src/cache/schemes.js';
import { setThreads } from '../src/kernels/runtime/pool.js';
import { configureMatmul } from '../src/kernels/matmul/config.js';
import { availableCores } from '../src/kernels/runtime/threads.js';
import { intArg, intListArg } from '../src/cli/args.js';
import { BIG_DEFAULT_WEIGHTS, BIG_SHAPES, BIG_WEIGHTS, bigModel } from './big-model.js';
import { BIG_CACHE_SHAPES, bigCacheCheck, printBigCache } from './big-cache.js';
import { bigRun } from './big-run.js';
import { parseScheme } from './engine-long.js';
import { NATIVE_KVS, nativeLlama } from './native-llama.js';

interface Flags {
  weights: string[];
  contexts: number[];
  schemes: string[];
  threads: number;
  cacheOnly?: boolean;
  cache: boolean;
  shape: string;
  prompt: number;
  cacheScheme: string;
  rounds: number;
  native: boolean;
  nativeKvs: string[];
  nativeContexts: number[];
  nativePrefillMax: number;
  repack: string;
  /** Internal: this process is the child measuring one weight type. */
  childRun?: string;
}

const log = (s: string) => process.stderr.write(`${s}\n`);

function listOf(flag: string, known: readonly string[], check = (x: string) => known.includes(x)): (v: string) => string[] {
  return (v) => {
    const xs = v
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean);
    const badOne = xs.find((x) => !check(x));
    if (!xs.length || badOne !== undefined) throw new InvalidArgumentError(`${flag}: '${badOne ?? v}' is not one of ${known.join(', ')}`);
    return xs;
  };
}

function program(): Command {
  return (
    new Command('bench:big')
      .description('8B-shaped synthetic model (random weights, speed only) and a cache beyond 4 GiB')
      .option(
        '--weights <list>',
        `weight files, of ${BIG_WEIGHTS.join(', ')} (q4_K_M: llama.cpp's mix, q6_K output and half of attn_v / ffn_down)`,
        listOf('--weights', BIG_WEIGHTS),
        [...BIG_DEFAULT_WEIGHTS],
      )
      .option('--contexts <list>', 'decode contexts (positions of synthetic K/V)', intListArg('--contexts', 1, 131072 - 64), [1024, 32768])
      .option(
        '--schemes <list>',
        'cache schemes (optional :int8 / :w16 suffixes as bench:engine)',
        listOf('--schemes', [...schemeRegistry.keys()], (x) => schemeRegistry.has(parseScheme(x).name)),
        ['f16', 'q8_0', 'q4_0', 'q2k'],
      )
      .option('--threads <n>', 'matmul and attention threads (default: available cores)', intArg('--threads', 1, 256), availableCores())
      .option('--prompt <n>', 'prefill prompt tokens', intArg('--prompt', 16, 8192), 512)
      .option(
        '--rounds <n>',
        'rounds of prefill and of decode at each context, kvpack and native llama.cpp alternated (medians)',
        intArg('--rounds', 1, 100),
        2,
      )
      .option('--no-native', 'skip native llama.cpp (no build, no native ratio)')
      .option('--native-kvs <list>', 'KV configurations of native decode (f16-nofa: flash attention off)', listOf('--native-kvs', Object.keys(NATIVE_KVS)), [
        'f16',
        'q8_0',
        'q4_0',
        'f16-nofa',
      ])
      // llama-bench -d prefills the context for every run: 1K takes ~30 s on the 8B shape at 2 threads, 32K did
      // not finish in 115 min here (2026-12-03); deeper contexts load a tiled state instead (native-depth.ts).
      .option('--native-contexts <list>', 'contexts native decode runs at (of --contexts)', intListArg('--native-contexts', 1, 131072 - 64), [1024, 32768])
      .option(
        '--native-prefill-max <n>',
        "deepest context native fills by llama-bench -d's prefill; deeper ones load a tiled state, checked against llama-bench at the shallower ones",
        intArg('--native-prefill-max', 1, 131072),
        4096,
      )
      .option('--cache-only', 'only the cache beyond 4 GiB')
      .option('--no-cache', 'skip the cache beyond 4 GiB')
      // q4_0: 4.5 GiB at 131072 positions of the 8B shape; q2k there is 3.5 GiB (112.5 B per position and KV head), under 4 GiB.
      .addOption(new Option('--cache-scheme <name>', 'scheme of the cache beyond 4 GiB').choices([...schemeRegistry.keys()]).default('q4_0'))
      .addOption(new Option('--shape <name>', 'model and cache shape').choices(Object.keys(BIG_SHAPES)).default('8b'))
      .addOption(
        new Option('--repack <on|off>', "repack weights into the kernels' interleaved layout at load (off: the file layout, for A/B runs)")
          .choices(['on', 'off'])
          .default('on'),
      )
      .addOption(new Option('--child-run <weights>').hideHelp())
      .exitOverride()
      .configureOutput({ writeErr: (s) => process.stderr.write(s.split('\n')[0] + '\n') })
  );
}

/** Runs one weight type in a child process of its own; true when it succeeded. */
function spawnWeights(wt: string, argv: readonly string[]): boolean {
  const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url), ...argv, '--child-run', wt], { stdio: 'inherit' });
  return r.status === 0;
}

/** The cache beyond 4 GiB; false when a check failed or it could not be allocated. */
function runCache(f: Flags): boolean {
  try {
    return printBigCache(bigCacheCheck(BIG_CACHE_SHAPES[f.shape]!, f.cacheScheme, log));
  } catch (e) {
    if (!(e instanceof KvpackError)) throw e;
    console.log(`\ncache beyond 4 GiB: FAILED: ${e.message}`);
    return false;
  }
}

function main(argv: string[]): number {
  const cmd = program();
  try {
    cmd.parse(argv, { from: 'user' });
  } catch (e) {
    if (e instanceof CommanderError) return e.exitCode === 0 ? 0 : 2;
    throw e;
  }
  const f = cmd.opts<Flags>();
  if (f.cacheOnly && !f.cache) {
    process.stderr.write('error: --cache-only and --no-cache leave nothing to run\n');
    return 2;
  }
  const shape = BIG_SHAPES[f.shape]!;
  try {
    // Threads for the process that computes: the child per weight type, or this one for the cache.
    const threads = () => (configureMatmul({ threads: f.threads, repack: f.repack === 'on' }), setThreads(f.threads));
    if (f.childRun) {
      threads();
      const file = bigModel(shape, f.childRun, log);
      const n = f.native ? nativeLlama(log) : { ok: false as const, reason: 'skipped (--no-native)' };
      bigRun({
        path: file.path,
        fileBytes: file.bytes,
        weights: f.childRun,
        prompt: f.prompt,
        contexts: f.contexts,
        schemes: f.schemes,
        threads: f.threads,
        shape: f.shape,
        native: n.ok ? n.native : { unavailable: n.reason },
        nativeKvs: f.nativeKvs,
        nativeContexts: f.nativeContexts.filter((c) => f.contexts.includes(c)),
        nativePrefillMax: f.nativePrefillMax,
        rounds: f.rounds,
        log,
      });
      return 0;
    }
    console.log(`bench:big, shape ${f.shape}: ${JSON.stringify(shape)}; ${f.threads} threads; Node ${process.version}`);
    if (!f.cacheOnly) console.log('weights are random (speed only, not quality)');
    if (!f.cacheOnly && f.native) {
      // Built here once (cached outside the repo), so the children only find it.
      const n = nativeLlama(log);
      console.log(
        n.ok
          ? `native llama.cpp ${n.native.commit.slice(0, 7)}: ${n.native.bin}${n.native.buildNote ? ` (${n.native.buildNote})` : ''}${n.native.buildS === null ? '' : ` (built in this run, ${n.native.buildS.toFixed(0)} s)`}`
          : `native llama.cpp unavailable: ${n.reason}; no native ratio printed`,
      );
    }
    let ok = true;
    if (!f.cacheOnly) {
      for (const wt of f.weights) {
        const file = bigModel(shape, wt, log);
        console.log(
          `\n${wt}: ${file.path}, ${file.bytes} B (${(file.bytes / 2 ** 30).toFixed(2)} GiB)${file.writeS === null ? ', already written' : `, written in ${file.writeS.toFixed(1)} s`}`,
        );
        if (!spawnWeights(wt, argv)) {
          console.log(`${wt}: FAILED (its error is on stderr)`);
          ok = false;
        }
      }
    }
    if (f.cache) {
      threads();
      ok = runCache(f) && ok;
    }
    return ok ? 0 : 1;
  } catch (e) {
    // A model that does not fit (wasm32's 4 GiB today) is an expected outcome to report, in one line.
    if (!(e instanceof KvpackError)) throw e;
    console.error(`bench:big${f.childRun ? ` ${f.childRun}` : ''}: ${e.message}`);
    return 1;
  }
}

process.exitCode = main(process.argv.slice(2));
