// Native llama.cpp decode at depths llama-bench cannot fill here: bench/native/decode-at-depth.cpp, linked
// against the cached llama.cpp build (bench/native-llama.ts) once, loads a tiled sequence state instead of
// prefilling (llama-bench -d 32768 on the 8B shape ran 115 min here without finishing its fill). Benches run it
// beside llama-bench -d at a depth llama-bench can fill, in the same rounds, so the two can be compared.
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { median } from './harness.js';
import { nativeKv, withLoad, type NativeLlama, type NativeResult, type RunLoad } from './native-llama.js';

// dist-test/bench/native-depth.js -> bench/native/decode-at-depth.cpp at the repo root.
const SOURCE = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'bench', 'native', 'decode-at-depth.cpp');

/** Tokens of real prefill whose K/V rows are tiled out to the depth (the tool's -seed). */
export const SEED_TOKENS = 256;

const built = new Map<string, { bin: string } | { reason: string }>();

/** The tool built against this llama-bench's build tree (static libs), or why there is none; never throws. */
export function depthTool(n: NativeLlama): { bin: string } | { reason: string } {
  const build = dirname(dirname(n.bin));
  const cached = built.get(build);
  if (cached) return cached;
  const done = (r: { bin: string } | { reason: string }) => (built.set(build, r), r);
  if (!existsSync(SOURCE)) return done({ reason: `no source at ${SOURCE}` });
  const src = dirname(build);
  const libs = ['src/libllama.a', 'ggml/src/libggml.a', 'ggml/src/libggml-cpu.a', 'ggml/src/libggml-base.a'].map((l) => join(build, l));
  const missing = libs.find((l) => !existsSync(l));
  if (missing) return done({ reason: `the llama.cpp build has no ${missing} (built before static libs were kept?)` });
  const cxx = process.env.CXX ?? 'c++';
  const flags = ['-O2', '-std=c++17', `-I${join(src, 'include')}`, `-I${join(src, 'ggml', 'include')}`];
  const key = createHash('sha256').update(readFileSync(SOURCE)).update(flags.join(' ')).digest('hex').slice(0, 12);
  const bin = join(build, 'bin', `decode-at-depth-${key}`);
  if (existsSync(bin)) return done({ bin });
  if (spawnSync(cxx, ['--version'], { stdio: 'ignore' }).status !== 0) return done({ reason: `${cxx} is not installed` });
  try {
    // The build's cmake cache says whether ggml was built with OpenMP (NATIVE_CMAKE_FLAGS: on).
    const omp = /^GGML_OPENMP:BOOL=ON$/m.test(readFileSync(join(build, 'CMakeCache.txt'), 'utf8'));
    execFileSync(cxx, [...flags, SOURCE, ...libs, ...(omp ? ['-fopenmp'] : []), '-lpthread', '-ldl', '-o', bin], { stdio: ['ignore', 'pipe', 'pipe'] });
    return done({ bin });
  } catch (e) {
    const last = ((e as { stderr?: Buffer }).stderr?.toString() ?? String(e)).trim().split('\n').pop();
    return done({ reason: `building decode-at-depth failed: ${last}` });
  }
}

export interface DepthRequest {
  model: string;
  threads: number;
  gen: number;
  depth: number;
  /** Native KV configuration (NATIVE_KVS): its type for K and V, flash attention on or off. */
  kv: string;
  reps: number;
}

interface DepthJson {
  n_gen: number;
  n_depth: number;
  avg_ts: number;
  samples_ts: number[];
}

/** Decode tok/s at `depth` over a tiled state (median of the repetitions); throws when the tool fails. */
export function depthDecode(bin: string, r: DepthRequest): { result: NativeResult; load: RunLoad } {
  const kv = nativeKv(r.kv);
  const args = ['-m', r.model, '-t', `${r.threads}`, '-d', `${r.depth}`, '-n', `${r.gen}`, '-ctk', kv.type, '-ctv', kv.type, '-r', `${r.reps}`];
  args.push('-fa', kv.flashAttn ? '1' : '0', '-seed', `${Math.min(SEED_TOKENS, r.depth)}`);
  const { value, load } = withLoad(() => execFileSync(bin, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }));
  const j = JSON.parse(value) as DepthJson;
  if (j.n_depth !== r.depth || j.n_gen !== r.gen || !j.samples_ts.length) throw new Error(`decode-at-depth printed ${value.trim()}`);
  return { result: { test: 'tg', tokens: j.n_gen, depth: j.n_depth, tps: median(j.samples_ts), samples: j.samples_ts }, load };
}
