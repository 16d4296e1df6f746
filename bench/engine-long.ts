// Long-context decode table: kvpack per cache scheme and its peer node-llama-cpp with f16 KV (a child
// process of its own, bench/engine-peer.ts) on the same GGUF, measured in alternating rounds (kvpack
// schemes, then the peer, again and again) so that both engines see the same machine state; medians per row. On a shared 2-vCPU machine the second core's speed drifts by up to 1.5x
// over minutes, which back-to-back blocks of one engine then the other would turn into a false ratio.
import { performance } from 'node:perf_hooks';
import { loadModel, type Model } from '../src/model/model.js';
import { schemePolicy } from '../src/cache/schemes.js';
import type { AttentionPrecision, KvCache } from '../src/cache/kvcache.js';
import { Prng } from '../src/numeric/prng.js';
import { argmax } from '../src/model/sampler.js';
import { median } from './harness.js';
import { withLoad, type RunLoad } from './native-llama.js';
import { peerName, startLongPeer, type LongPeer } from './engine-peer.js';

export interface LongRow {
  engine: string;
  kv: string;
  context: number;
  /** Median over rounds. */
  decodeTps: number;
  samples: number[];
  /** kvpack's rows: the load of each round's run (native-llama.ts withLoad). */
  loads?: RunLoad[];
}

/** Decode steps timed per round: fewer as the context grows, never under 8. */
export const longSteps = (context: number) => Math.max(8, Math.min(24, Math.round((8 * 8192) / context)));

/** A scheme name with optional `:int8` (--attn-q int8) and `:w16` (--attn-v int16) suffixes. */
export function parseScheme(scheme: string): { name: string; attention: AttentionPrecision } {
  const [name, ...mods] = scheme.split(':') as [string, ...string[]];
  return { name, attention: { q: mods.includes('int8') ? 'int8' : undefined, v: mods.includes('w16') ? 'int16' : undefined } };
}

/**
 * Uncounted decode steps a bench runs at each context before timing kvpack, shared among its caches. The first
 * ~20 decode steps of a process run at about half speed on two threads and not on one (dim-768 model at 8K,
 * q2k, `/tmp` probes: steps 1-20 30-46 ms, later 17-23 ms; one thread 28 against 26 ms): V8 compiles both
 * threads' JS on the same two cores, and a pool post woke a sleeping worker for 0.3-0.5 ms until the caller's
 * JS between jobs got fast. llama-bench's figures are after a warm-up run too.
 */
export const WARM_STEPS = 32;
/**
 * And at least this long: at short contexts the matmul thread chooser (src/kernels/matmul/chooser.ts) settles
 * over ~100 steps (dim 768 at 1K: 20-step medians 12-14 ms for the first 60-100 steps, 9-10 ms after).
 */
export const WARM_SECONDS = 2;

/**
 * Before every timed round, kvpack's first scheme runs uncounted steps for at least this long, and each scheme
 * ROUND_WARM_STEPS: the rounds alternate with the peer's process, and kvpack's first 15-30 steps after it (or
 * after a pause) ran at 1.3-2x their steady time (dim 768, q2k at 8K, /tmp probes: 16-29 ms against 12-14),
 * while llama-bench times its tokens right after its own prefill of the depth. In-process, 10 rounds after a
 * native run alternated: 56.4 tok/s with this warm-up against 41.7 without.
 */
export const ROUND_WARM_SECONDS = 0.5;
export const ROUND_WARM_STEPS = 2;

/** Steps each of `caches` caches runs uncounted before the timed rounds: at least a round's worth. */
export const warmSteps = (caches: number, context: number) => Math.max(longSteps(context), Math.ceil(WARM_STEPS / caches));

/**
 * Runs at least `steps` uncounted decode steps, for at least `seconds`, on a filled cache and rewinds it to
 * where it stood (the timed rounds then see the same context). Returns the steps' tok/s, which the benches
 * log beside the timed figures. The cache needs room for the steps: rewinding frees them each `steps`.
 */
export function warmDecode(model: Model, f: { cache: KvCache; last: number }, steps: number, seconds: number): number {
  const base = f.cache.length;
  let last = f.last;
  const t0 = performance.now();
  let done = 0;
  do {
    for (let i = 0; i < steps; i++) last = argmax(model.forward([last], f.cache));
    done += steps;
    f.cache.rewind(base);
  } while (performance.now() - t0 < seconds * 1000);
  return done / ((performance.now() - t0) / 1000);
}

/** A kvpack cache filled to `context` positions with random K/V (decode cost depends on the length, not the values). */
export function filledCache(model: Model, scheme: string, context: number, extra: number): { cache: KvCache; last: number } {
  const hp = model.hp;
  const { name, attention } = parseScheme(scheme);
  const cache = model.createCache({ policy: schemePolicy(name), capacity: context + extra, attention });
  const rng = new Prng(context);
  for (let p = 0; p < context; p += 512) {
    const n = Math.min(512, context - p);
    const k = rng.normals(n * hp.nHeadKv * hp.headDim);
    const v = rng.normals(n * hp.nHeadKv * hp.headDim);
    for (let l = 0; l < hp.nLayer; l++) cache.append(l, k, v);
  }
  // Two warm-up steps: first calls tier the wasm code up and size the workspaces.
  let logits = model.forward([5], cache);
  logits = model.forward([argmax(logits)], cache);
  return { cache, last: argmax(logits) };
}

/**
 * Rows for every (scheme, context) of kvpack and for llama.cpp f16 KV at each context, `rounds` alternating
 * rounds each. `noLlama` (or node-llama-cpp failing to load) leaves llama.cpp out. `eachRound` runs at the
 * end of every round (engine.ts: native llama.cpp at that context), so a third engine alternates too.
 */
export async function benchLong(
  path: string,
  weights: string,
  schemes: readonly string[],
  contexts: readonly number[],
  threads: number,
  rounds: number,
  noLlama: boolean,
  log: (s: string) => void,
  eachRound?: (context: number, round: number) => void,
): Promise<LongRow[]> {
  const model = loadModel(path, { expand: false });
  const sorted = [...contexts].sort((a, b) => a - b);
  const perContext = rounds * Math.max(...sorted.map(longSteps)) + WARM_STEPS + 8;
  // The peer in a child process of its own (idle while ours runs, and the other way round), one context per
  // thread count (1 and `threads`): each round times both, and its row is the better one's median.
  const peerThreads = threads > 1 ? [1, threads] : [1];
  let llama: LongPeer | null = null;
  if (!noLlama) {
    try {
      llama = await startLongPeer(path, Math.max(...sorted) + perContext * sorted.length + 128, peerThreads);
    } catch (e) {
      log(`node-llama-cpp unavailable: ${(e as Error).message}`);
    }
  }
  const peer = peerName();
  const rows: LongRow[] = [];
  for (const c of sorted) {
    const caches = schemes.map((s) => ({ scheme: s, ...filledCache(model, s, c, perContext) }));
    await llama?.fill(c);
    log(`long ${c}: filled`);
    const samples = new Map<string, number[]>();
    const loads = new Map<string, RunLoad[]>();
    const add = (k: string, v: number) => samples.set(k, [...(samples.get(k) ?? []), v]);
    const steps = longSteps(c);
    for (const x of caches)
      log(`long ${c}: ${x.scheme} warm-up, ${warmDecode(model, x, warmSteps(caches.length, c), WARM_SECONDS / caches.length).toFixed(1)} tok/s (not counted)`);
    for (let r = 0; r < rounds; r++) {
      for (const [i, x] of caches.entries()) {
        warmDecode(model, x, ROUND_WARM_STEPS, i === 0 ? ROUND_WARM_SECONDS : 0);
        const { value: tps, load } = withLoad(() => {
          const t0 = performance.now();
          for (let i = 0; i < steps; i++) x.last = argmax(model.forward([x.last], x.cache));
          return steps / ((performance.now() - t0) / 1000);
        });
        add(x.scheme, tps);
        loads.set(x.scheme, [...(loads.get(x.scheme) ?? []), load]);
      }
      if (llama) for (const [t, v] of Object.entries(await llama.decode(steps))) add(`peer:${t}`, v);
      eachRound?.(c, r);
      log(`long ${c}: round ${r + 1}/${rounds}`);
    }
    for (const x of caches) x.cache.dispose();
    const peerBest = peerThreads
      .map((t) => ({ t, v: samples.get(`peer:${t}`) ?? [] }))
      .filter((p) => p.v.length)
      .sort((a, b) => median(b.v) - median(a.v))[0];
    for (const [k, v] of samples) {
      if (k.startsWith('peer:')) continue;
      rows.push({ engine: `kvpack (${weights} weights)`, kv: k, context: c, decodeTps: median(v), samples: v, loads: loads.get(k) ?? [] });
    }
    if (peerBest)
      rows.push({
        engine: `${peer} (${weights} weights, best of ${peerThreads.join('/')} threads: ${peerBest.t})`,
        kv: 'f16',
        context: c,
        decodeTps: median(peerBest.v),
        samples: peerBest.v,
      });
  }
  await llama?.dispose();
  return rows;
}
