// Native llama.cpp, the peer every engine ratio divides by: its own llama-bench, built once (CPU, Release,
// GGML_NATIVE) from the llama.cpp source node-llama-cpp carries as a git bundle, into a cache dir outside
// the repo keyed by commit + cmake flags, reused afterwards. Only the benches build it: npm install / npm
// test never do. Without git, cmake or a C++ compiler it is reported unavailable in one line.
// Run directly to build ahead of a bench: node dist-test/bench/native-llama.js (npm run bench:native)
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { cacheRoot } from './cache-dir.js';
import { declareOptions, median } from './harness.js';
import { readBandwidthNow } from './read-bandwidth.js';

/** The cmake configuration: CPU only, no network code; changing it changes the cache key (a new build). */
export const NATIVE_CMAKE_FLAGS = [
  '-DCMAKE_BUILD_TYPE=Release',
  '-DGGML_NATIVE=ON',
  '-DGGML_CUDA=OFF',
  '-DGGML_METAL=OFF',
  '-DGGML_VULKAN=OFF',
  '-DGGML_OPENMP=ON',
  '-DBUILD_SHARED_LIBS=OFF',
  '-DLLAMA_CURL=OFF',
  '-DLLAMA_OPENSSL=OFF',
  '-DLLAMA_BUILD_TESTS=OFF',
  '-DLLAMA_BUILD_EXAMPLES=OFF',
  '-DLLAMA_BUILD_SERVER=OFF',
  '-DLLAMA_BUILD_APP=OFF',
] as const;

/**
 * x86 features ggml's CPU backend can be built for one by one (its cmake option, the /proc/cpuinfo flag).
 * On a CPU with AMX, GGML_NATIVE compiles ggml's AMX path, which crashes at this commit in its first prompt
 * (SIGSEGV at ldtilecfg in ggml_backend_amx_mul_mat; upstream llama.cpp issue #20824, PR #26954), so the
 * build lists the CPU's other features instead, as AMX users do.
 */
const X86_FEATURES: readonly [option: string, flag: string][] = [
  ['GGML_SSE42', 'sse4_2'],
  ['GGML_AVX', 'avx'],
  ['GGML_AVX2', 'avx2'],
  ['GGML_FMA', 'fma'],
  ['GGML_F16C', 'f16c'],
  ['GGML_BMI2', 'bmi2'],
  ['GGML_AVX_VNNI', 'avx_vnni'],
  ['GGML_AVX512', 'avx512bw'],
  ['GGML_AVX512_VBMI', 'avx512vbmi'],
  ['GGML_AVX512_VNNI', 'avx512_vnni'],
  ['GGML_AVX512_BF16', 'avx512_bf16'],
];

/** The CPU's feature flags (/proc/cpuinfo), or an empty set off Linux. */
function cpuFlags(): Set<string> {
  try {
    const line = readFileSync('/proc/cpuinfo', 'utf8').match(/^flags\s*:(.*)$/m);
    return new Set(line ? line[1]!.trim().split(/\s+/) : []);
  } catch {
    return new Set();
  }
}

/** The flags this machine builds with, and a note when they differ from NATIVE_CMAKE_FLAGS (AMX left out). */
export function nativeBuildFlags(): { flags: readonly string[]; note: string | null } {
  const cpu = cpuFlags();
  if (process.arch !== 'x64' || !cpu.has('amx_int8')) return { flags: NATIVE_CMAKE_FLAGS, note: null };
  const features = X86_FEATURES.map(([opt, flag]) => `-D${opt}=${cpu.has(flag) ? 'ON' : 'OFF'}`);
  const flags = [
    ...NATIVE_CMAKE_FLAGS.map((f) => (f === '-DGGML_NATIVE=ON' ? '-DGGML_NATIVE=OFF' : f)),
    ...features,
    '-DGGML_AMX_TILE=OFF',
    '-DGGML_AMX_INT8=OFF',
    '-DGGML_AMX_BF16=OFF',
  ];
  return { flags, note: "AMX off (ggml's AMX path crashes at this commit: llama.cpp #20824); every other CPU feature on" };
}

export interface NativeLlama {
  bin: string;
  /** llama.cpp commit of the bundle (40 hex). */
  commit: string;
  /** Whether this llama-bench has -d (decode after a filled context). */
  hasDepth: boolean;
  /** Seconds the build took in this run, or null when the cached binary was reused. */
  buildS: number | null;
  /** How the build departs from a plain GGML_NATIVE one on this machine, or null (nativeBuildFlags). */
  buildNote: string | null;
}

export type NativeStatus = { ok: true; native: NativeLlama } | { ok: false; reason: string };

/** node-llama-cpp's llama/ dir (the bundle and its info file); its package.json is not exported, so walk up. */
function nodeLlamaDir(): string | null {
  let dir: string;
  try {
    dir = dirname(createRequire(import.meta.url).resolve('node-llama-cpp'));
  } catch {
    return null;
  }
  for (; dirname(dir) !== dir; dir = dirname(dir)) if (existsSync(join(dir, 'llama', 'gitRelease.bundle'))) return join(dir, 'llama');
  return null;
}

const run = (cmd: string, args: string[], cwd?: string) =>
  execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 1 << 26 });

/** The first missing build tool, or null. */
function missingTool(): string | null {
  for (const [tool, args] of [
    ['git', ['--version']],
    ['cmake', ['--version']],
    [process.env.CXX ?? 'c++', ['--version']],
  ] as const) {
    if (spawnSync(tool, args, { stdio: 'ignore' }).status !== 0) return tool;
  }
  return null;
}

/** Finds the cached llama-bench or builds it (~10 min on 2 cores, once); never throws. */
export function nativeLlama(log: (s: string) => void): NativeStatus {
  const dir = nodeLlamaDir();
  if (!dir) return { ok: false, reason: 'node-llama-cpp with its llama.cpp source bundle is not installed' };
  const bundle = join(dir, 'gitRelease.bundle');
  const { flags, note } = nativeBuildFlags();
  const key = createHash('sha256').update(flags.join('\n')).digest('hex').slice(0, 12);
  try {
    let commit: string;
    try {
      commit = run('git', ['bundle', 'list-heads', bundle]).split(/\s+/)[0]!;
    } catch {
      return { ok: false, reason: 'git is not installed (needed to unpack the llama.cpp source)' };
    }
    const src = join(cacheRoot(), `llama.cpp-${commit.slice(0, 12)}`);
    const build = join(src, `build-${key}`);
    const bin = join(build, 'bin', 'llama-bench');
    const done = join(build, 'kvpack-built.json');
    let buildS: number | null = null;
    if (!existsSync(done) || !existsSync(bin)) {
      const missing = missingTool();
      if (missing) return { ok: false, reason: `${missing} is not installed, so native llama.cpp's llama-bench cannot be built` };
      const t0 = performance.now();
      if (!existsSync(join(src, '.git'))) {
        mkdirSync(dirname(src), { recursive: true });
        log(`native llama.cpp: unpacking ${commit.slice(0, 7)} into ${src}`);
        run('git', ['clone', '-q', bundle, src]);
        run('git', ['-c', 'advice.detachedHead=false', 'checkout', '-q', commit], src);
      }
      const ninja = spawnSync('ninja', ['--version'], { stdio: 'ignore' }).status === 0 && !existsSync(join(build, 'Makefile'));
      log(`native llama.cpp: building llama-bench in ${build} (once; ~10 min on 2 cores)`);
      run('cmake', ['-S', src, '-B', build, ...(ninja ? ['-G', 'Ninja'] : []), ...flags]);
      run('cmake', ['--build', build, '--target', 'llama-bench', '-j', `${availableParallelism()}`]);
      buildS = (performance.now() - t0) / 1000;
      writeFileSync(done, `${JSON.stringify({ commit, flags, buildS })}\n`);
      log(`native llama.cpp: built in ${buildS.toFixed(0)} s`);
    }
    const hasDepth = / -d, --n-depth /.test(run(bin, ['--help']));
    return { ok: true, native: { bin, commit, hasDepth, buildS, buildNote: note } };
  } catch (e) {
    const err = e as { stderr?: string; message: string };
    const last = (err.stderr ?? err.message).trim().split('\n').pop();
    return { ok: false, reason: `building native llama.cpp failed: ${last}` };
  }
}

/** 1-minute load average and runnable/total tasks from /proc/loadavg ("0.61 ... 2/301"), or null off Linux. */
export function loadNow(): { load1: number; running: number } | null {
  try {
    const f = readFileSync('/proc/loadavg', 'utf8').trim().split(/\s+/);
    return { load1: Number(f[0]), running: Number(f[3]!.split('/')[0]) };
  } catch {
    return null;
  }
}

/** All CPUs' busy and total jiffies from /proc/stat (1/100 s on Linux), or null off Linux. */
export function cpuJiffies(): { busy: number; total: number } | null {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    const idle = line[3]! + (line[4] ?? 0);
    const total = line.reduce((a, b) => a + b, 0);
    return { busy: total - idle, total };
  } catch {
    return null;
  }
}

/** CPU seconds of this process (all threads) plus its waited-for children (/proc/self/stat cutime + cstime). */
function ownCpuS(): number {
  const c = process.cpuUsage();
  let children = 0;
  try {
    // Fields after the ")" of the command name: cutime and cstime are fields 16 and 17 (1-based) of the line.
    const f = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]!.split(' ');
    children = (Number(f[13]) + Number(f[14])) / 100;
  } catch {}
  return (c.user + c.system) / 1e6 + children;
}

/**
 * Load before and after a run, and the cores' worth of CPU other processes used during it (all CPUs' busy
 * time minus this process's and its children's): a spinning 2-thread llama.cpp collapses when a third
 * runnable thread shares its cores (decode 180 -> 5-15 tok/s measured here), which the load average misses.
 */
export interface RunLoad {
  before: { load1: number; running: number } | null;
  after: { load1: number; running: number } | null;
  otherCores?: number | null;
  /** GB/s the read-bandwidth probe read just before the run, on the machine's cores (null: no probe). */
  readGBs?: number | null;
}

export function withLoad<T>(fn: () => T): { value: T; load: RunLoad } {
  const readGBs = readBandwidthNow(availableParallelism());
  const before = loadNow();
  const j0 = cpuJiffies();
  const c0 = ownCpuS();
  const t0 = performance.now();
  const value = fn();
  const wall = (performance.now() - t0) / 1000;
  const j1 = cpuJiffies();
  const otherCores = j0 && j1 && wall > 0 ? Math.max(0, ((j1.busy - j0.busy) / 100 - (ownCpuS() - c0)) / wall) : null;
  return { value, load: { before, after: loadNow(), otherCores, readGBs } };
}

/**
 * Below this share of the bench's best probe, the host's memory was contended during the bench. Measured here:
 * the probe before a run does not predict that run (correlation -0.07 over 15 decode runs), since the traffic
 * comes and goes faster than a run, so the note is for the whole bench and no run is marked.
 */
export const BANDWIDTH_FLOOR = 0.7;

/** Above this many cores' worth of other processes' CPU during a run, its figures are marked contended. */
export const CONTENDED_CORES = 0.2;

/**
 * Why these runs' ratios are not figures to quote, or null: a 1-minute load average above the cores + 1 (the
 * bench itself keeps at most the cores busy), runs during which other processes took CPU (CONTENDED_CORES), or
 * read-bandwidth probes spread past BANDWIDTH_FLOOR.
 */
export function machineNote(loads: readonly RunLoad[]): string | null {
  const max = Math.max(0, ...loads.flatMap((l) => [l.before?.load1 ?? 0, l.after?.load1 ?? 0]));
  const contended = loads.filter((l) => (l.otherCores ?? 0) > CONTENDED_CORES).length;
  const gbs = loads.flatMap((l) => (l.readGBs == null ? [] : [l.readGBs]));
  const lo = Math.min(...gbs);
  const hi = Math.max(...gbs);
  const why = [
    ...(max > availableParallelism() + 1 ? [`1-min load up to ${max.toFixed(1)} on ${availableParallelism()} cores`] : []),
    ...(contended ? [`other processes took over ${CONTENDED_CORES} cores during ${contended} of ${loads.length} runs (marked !)`] : []),
    // Another tenant's memory traffic: invisible in this machine's load, it slows memory-bound runs.
    ...(gbs.length && lo < BANDWIDTH_FLOOR * hi
      ? [
          `the host's read bandwidth varied ${lo.toFixed(1)}-${hi.toFixed(1)} GB/s over the probes before ${gbs.length} runs: another tenant's memory traffic slowed memory-bound runs unevenly`,
        ]
      : []),
  ];
  return why.length ? `the machine was busy (${why.join('; ')}): these ratios are not figures to quote; re-run on a quiet machine` : null;
}

/**
 * "0.55->0.60" and, when other processes took CPU meanwhile, "+0.31" (cores) with a "!" past CONTENDED_CORES;
 * then the read bandwidth probed just before the run.
 */
export const fmtLoad = (l: RunLoad) => {
  const o = l.otherCores;
  const other = o == null || o < 0.05 ? '' : ` +${o.toFixed(2)}${o > CONTENDED_CORES ? '!' : ''}`;
  const read = l.readGBs == null ? '' : ` ${l.readGBs.toFixed(0)} GB/s`;
  return `${l.before?.load1.toFixed(2) ?? '?'}->${l.after?.load1.toFixed(2) ?? '?'}${other}${read}`;
};

/**
 * Native KV configurations: a ggml type for K and V, and flash attention on (what llama.cpp's default 'auto'
 * resolves to on CPU) or off. Off, K x Q and softmax x V run as matmuls over a transposed f16 V: measured here
 * it decodes faster at depth (8B shape at 32K: 1.45 tok/s against 0.33; dim 768 at 8K: 55 against 36-39),
 * so "native's best" must include it. ggml needs flash attention for a quantized V, so off is f16 only.
 */
export const NATIVE_KVS: Readonly<Record<string, { type: string; flashAttn: boolean; label: string }>> = {
  f16: { type: 'f16', flashAttn: true, label: 'f16' },
  q8_0: { type: 'q8_0', flashAttn: true, label: 'q8_0' },
  q4_0: { type: 'q4_0', flashAttn: true, label: 'q4_0' },
  'f16-nofa': { type: 'f16', flashAttn: false, label: 'f16, flash attention off' },
};

/** The configuration of a native KV name; throws on an unknown one. */
export function nativeKv(name: string): { type: string; flashAttn: boolean; label: string } {
  const k = NATIVE_KVS[name];
  if (!k) throw new Error(`unknown native KV '${name}' (${Object.keys(NATIVE_KVS).join(', ')})`);
  return k;
}

export interface NativeRequest {
  model: string;
  threads: number;
  /** Prompt tokens (pp test), 0 for none. */
  prompt: number;
  /** Generated tokens (tg test), 0 for none. */
  gen: number;
  /** Context filled before each test (-d), 0 for none. */
  depth: number;
  /** Native KV configuration (NATIVE_KVS): its type for K and V, flash attention on or off. */
  kv: string;
  /** Timed repetitions inside the one llama-bench process (-r; after its one warm-up run); tps is their median. */
  reps: number;
}

/** One llama-bench test result: tok/s, the median over repetitions, and each repetition. */
export interface NativeResult {
  test: 'pp' | 'tg';
  tokens: number;
  depth: number;
  tps: number;
  samples: number[];
}

interface BenchJson {
  n_prompt: number;
  n_gen: number;
  n_depth?: number;
  avg_ts: number;
  samples_ts?: number[];
}

/** Runs llama-bench once (the KV configuration's type for K and V and flash attention, JSON out) and returns its tests. */
export function llamaBench(n: NativeLlama, r: NativeRequest): { results: NativeResult[]; load: RunLoad } {
  if (r.depth && !n.hasDepth) throw new Error(`this llama-bench has no -d: cannot measure decode at depth ${r.depth}`);
  const kv = nativeKv(r.kv);
  const args = [
    '-m',
    r.model,
    '-t',
    `${r.threads}`,
    '-p',
    `${r.prompt}`,
    '-n',
    `${r.gen}`,
    '-fa',
    kv.flashAttn ? '1' : '0',
    '-ctk',
    kv.type,
    '-ctv',
    kv.type,
    '-r',
    `${r.reps}`,
    '-o',
    'json',
  ];
  if (r.depth) args.push('-d', `${r.depth}`);
  const { value, load } = withLoad(() => execFileSync(n.bin, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 1 << 24 }));
  const rows = JSON.parse(value) as BenchJson[];
  const results = rows.map(
    (j): NativeResult => ({
      test: j.n_gen > 0 ? 'tg' : 'pp',
      tokens: j.n_gen > 0 ? j.n_gen : j.n_prompt,
      depth: j.n_depth ?? 0,
      // The median repetition: single repetitions here vary 700-1,450 tok/s run to run (pp128, dim 768).
      tps: median(j.samples_ts ?? [j.avg_ts]),
      samples: j.samples_ts ?? [j.avg_ts],
    }),
  );
  return { results, load };
}

/** The tok/s of the one test of a kind (pp or tg) in a llama-bench result. */
export function nativeTps(results: readonly NativeResult[], test: 'pp' | 'tg'): number {
  const r = results.find((x) => x.test === test);
  if (!r) throw new Error(`llama-bench returned no ${test} test`);
  return r.tps;
}

/**
 * Native llama.cpp figures measured on this machine kind (issue 24: same GGUFs, 2 vCPUs, flash attention,
 * quiet machine), tok/s [low, high]. Only a sanity check of the peer measured in the run: a run far below
 * them is labelled, and no ratio is ever divided by these.
 */
export const NATIVE_REFERENCE: readonly {
  model: 'd768-q8_0' | '8b-q4_0';
  test: 'pp' | 'tg';
  tokens: number;
  depth: number;
  kv: string;
  threads: number;
  tps: [number, number];
}[] = [
  { model: 'd768-q8_0', test: 'pp', tokens: 128, depth: 0, kv: 'f16', threads: 2, tps: [1400, 1660] },
  { model: 'd768-q8_0', test: 'pp', tokens: 128, depth: 0, kv: 'q8_0', threads: 2, tps: [1110, 1345] },
  { model: 'd768-q8_0', test: 'tg', tokens: 24, depth: 128, kv: 'f16', threads: 2, tps: [250, 306] },
  { model: 'd768-q8_0', test: 'tg', tokens: 0, depth: 8192, kv: 'f16', threads: 2, tps: [39, 49] },
  { model: 'd768-q8_0', test: 'tg', tokens: 0, depth: 8192, kv: 'q8_0', threads: 2, tps: [16, 24] },
  { model: 'd768-q8_0', test: 'tg', tokens: 0, depth: 32768, kv: 'f16', threads: 2, tps: [14.6, 14.6] },
  { model: 'd768-q8_0', test: 'tg', tokens: 0, depth: 32768, kv: 'f16', threads: 1, tps: [8.9, 8.9] },
  { model: '8b-q4_0', test: 'pp', tokens: 512, depth: 0, kv: 'f16', threads: 2, tps: [34, 36] },
  { model: '8b-q4_0', test: 'tg', tokens: 0, depth: 1024, kv: 'f16', threads: 2, tps: [6.6, 7.2] },
  { model: '8b-q4_0', test: 'tg', tokens: 0, depth: 1024, kv: 'f16', threads: 1, tps: [4.0, 4.0] },
];

/** Below this fraction of the reference's low end, the measured peer is labelled far off (a loaded or crippled run). */
export const FAR_BELOW = 0.7;

/**
 * The reference for a measurement (tg references match any token count) and whether the measured figure is far
 * below it; null when issue 24 has no figure for it.
 */
export function checkNative(
  model: string,
  test: 'pp' | 'tg',
  tokens: number,
  depth: number,
  kv: string,
  threads: number,
  tps: number,
): { ref: [number, number]; farBelow: boolean } | null {
  const ref = NATIVE_REFERENCE.find(
    (x) => x.model === model && x.test === test && (test === 'tg' || x.tokens === tokens) && x.depth === depth && x.kv === kv && x.threads === threads,
  );
  return ref ? { ref: ref.tps, farBelow: tps < FAR_BELOW * ref.tps[0] } : null;
}

const range = ([lo, hi]: [number, number]) => (lo === hi ? `${lo}` : `${lo}-${hi}`);

/** "native 1523 (issue 24: 1400-1660)" plus a FAR BELOW label; '-' when issue 24 has no figure. */
export function nativeNote(c: { ref: [number, number]; farBelow: boolean } | null): string {
  if (!c) return '-';
  return `${range(c.ref)}${c.farBelow ? ' FAR BELOW' : ''}`;
}

// Run directly: builds (or finds) llama-bench and prints where it is.
if (import.meta.url === `file://${process.argv[1]}`) {
  declareOptions('bench:native', "builds (or finds) native llama.cpp's llama-bench and prints where it is", {});
  const s = nativeLlama((m) => process.stderr.write(`${m}\n`));
  if (!s.ok) console.log(`native llama.cpp unavailable: ${s.reason}`);
  else
    console.log(
      `native llama.cpp ${s.native.commit.slice(0, 7)}: ${s.native.bin} (${s.native.buildS === null ? 'cached' : `built in ${s.native.buildS.toFixed(0)} s`}; -d ${s.native.hasDepth ? 'supported' : 'not supported'}${s.native.buildNote ? `; ${s.native.buildNote}` : ''})`,
    );
}
