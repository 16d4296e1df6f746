// bench:big's cache beyond 4 GiB: a q2k cache of an 8B-shaped model at 131072 positions is filled with
// synthetic K/V, attended (fast path checked against the float64 reference on the same packed bytes),
// saved, restored and attended again (bit-identical outputs required).
import { rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { KvCache, type CacheBytes } from '../src/cache/kvcache.js';
import { schemePolicy } from '../src/cache/schemes.js';
import { attendReference } from '../src/kernels/attention/reference.js';
import { nmse } from '../src/lab/metrics.js';
import { Prng } from '../src/numeric/prng.js';
import { TOLERANCES } from '../src/parity/gate.js';

export interface BigCacheShape {
  readonly layers: number;
  readonly heads: number;
  readonly kvHeads: number;
  readonly headDim: number;
  readonly positions: number;
}

export const BIG_CACHE_SHAPES: Readonly<Record<string, BigCacheShape>> = {
  '8b': { layers: 32, heads: 32, kvHeads: 8, headDim: 128, positions: 131072 },
  wide: { layers: 4, heads: 32, kvHeads: 8, headDim: 128, positions: 131072 },
  small: { layers: 4, heads: 8, kvHeads: 2, headDim: 128, positions: 131072 },
};

const CHUNK = 512;
/** Random values K/V windows are cut from: distinct data per layer and chunk without drawing 8.6G normals. */
const POOL = 1 << 22;
/** Query spread: scores of std ~3 make the softmax peaked, so a misread position shows in the output. */
const Q_STD = 3;
const GIB4 = 2 ** 32;

export interface BigCacheResult {
  scheme: string;
  shape: BigCacheShape;
  bytes: CacheBytes;
  appendS: number;
  /** Layers checked (first, middle, last: those most likely to sit in different memories). */
  checked: number[];
  nmse: number[];
  tolerance: number;
  attendMs: number[];
  kernels: string[];
  /** Negative control: the checked layers' outputs differ (each layer read its own bytes). */
  layersDiffer: boolean;
  save: { ok: true; s: number; fileBytes: number } | { ok: false; error: string };
  restore: { ok: true; s: number; identical: boolean } | { ok: false; error: string } | null;
}

function fill(cache: KvCache, s: BigCacheShape, log: (m: string) => void): number {
  const row = s.kvHeads * s.headDim;
  const rng = new Prng(17);
  const pool = rng.normals(POOL);
  const t0 = performance.now();
  for (let p = 0; p < s.positions; p += CHUNK) {
    const n = Math.min(CHUNK, s.positions - p);
    for (let l = 0; l < s.layers; l++) {
      const at = () => rng.int(POOL - n * row);
      const k = pool.subarray(at()).subarray(0, n * row);
      cache.append(l, k, pool.subarray(at()).subarray(0, n * row));
    }
    if ((p / CHUNK) % 32 === 31) log(`big cache: ${p + n}/${s.positions} positions, ${(cache.nbytes().allocated / 2 ** 30).toFixed(2)} GiB`);
  }
  return (performance.now() - t0) / 1000;
}

function attendLayers(cache: KvCache, layers: number[], q: Float32Array): { outs: Float32Array[]; ms: number[]; kernels: Set<string> } {
  const kernels = new Set<string>();
  const ms: number[] = [];
  const outs = layers.map((l) => {
    const out = new Float32Array(q.length);
    const t0 = performance.now();
    const rep = cache.attend(l, q, out);
    ms.push(performance.now() - t0);
    for (const k of rep.kernels) kernels.add(`${rep.path}:${k}`);
    if (rep.path !== 'fast') kernels.add('reference (fast path did not run)');
    return out;
  });
  return { outs, ms, kernels };
}

const same = (a: Float32Array, b: Float32Array) => a.length === b.length && a.every((x, i) => Object.is(x, b[i]));

/** Runs the whole check; save/restore failures are reported in the result, not thrown. */
export function bigCacheCheck(s: BigCacheShape, scheme: string, log: (m: string) => void): BigCacheResult {
  const cache = new KvCache({ layers: s.layers, kvHeads: s.kvHeads, headDim: s.headDim, capacity: s.positions, policy: schemePolicy(scheme) });
  let restored: KvCache | null = null;
  const file = join(tmpdir(), `kvpack-bench-big-cache-${process.pid}.kvc`);
  try {
    const appendS = fill(cache, s, log);
    const bytes = cache.nbytes();
    const checked = [...new Set([0, s.layers >> 1, s.layers - 1])];
    const q = new Prng(29).normals(s.heads * s.headDim, Q_STD);
    const first = attendLayers(cache, checked, q);
    // The reference reads the view's packed bytes; it equals the cache's own output only for unpacked, unrotated heads.
    if (cache.packing.some((p) => p.group > 1) || cache.plans.some((p) => p.rotation))
      throw new Error(`big cache: scheme ${scheme} packs or rotates heads; pick one that does neither`);
    const errs = checked.map((l, i) => {
      const ref = new Float32Array(q.length);
      attendReference({ view: cache.view(l), q, heads: s.heads, out: ref });
      return nmse(first.outs[i]!, ref);
    });
    log('big cache: attended and checked against the reference');
    const layersDiffer = first.outs.every((o, i) => i === 0 || !same(o, first.outs[0]!));
    const base = {
      scheme,
      shape: s,
      bytes,
      appendS,
      checked,
      nmse: errs,
      tolerance: TOLERANCES['f32-accumulation'],
      attendMs: first.ms,
      kernels: [...first.kernels],
      layersDiffer,
    };
    let t0 = performance.now();
    try {
      cache.save(file);
    } catch (e) {
      return { ...base, save: { ok: false, error: (e as Error).message }, restore: null };
    }
    const save = { ok: true as const, s: (performance.now() - t0) / 1000, fileBytes: statSync(file).size };
    log('big cache: saved');
    // Only one cache at a time in memory: the outputs stay, the cache goes.
    cache.dispose();
    t0 = performance.now();
    try {
      restored = KvCache.restore(file);
    } catch (e) {
      return { ...base, save, restore: { ok: false, error: (e as Error).message } };
    }
    const restoreS = (performance.now() - t0) / 1000;
    const again = attendLayers(restored, checked, q);
    return { ...base, save, restore: { ok: true, s: restoreS, identical: again.outs.every((o, i) => same(o, first.outs[i]!)) } };
  } finally {
    cache.dispose();
    restored?.dispose();
    rmSync(file, { force: true });
  }
}

/** Prints the result; returns false when a check failed. */
export function printBigCache(r: BigCacheResult): boolean {
  const s = r.shape;
  const gib = (b: number) => `${(b / 2 ** 30).toFixed(3)} GiB`;
  console.log(
    `\ncache beyond 4 GiB: ${r.scheme}, ${s.layers} layers x ${s.kvHeads} KV heads x head dim ${s.headDim}, ${s.positions} positions of synthetic K/V (appended in ${CHUNK}-position chunks)`,
  );
  console.log(
    `  bytes held ${r.bytes.total} (${gib(r.bytes.total)}), allocated ${r.bytes.allocated} (${gib(r.bytes.allocated)}): ${r.bytes.total > GIB4 ? 'exceeds' : 'does NOT exceed'} 4 GiB`,
  );
  console.log(`  append ${r.appendS.toFixed(1)} s (${((s.positions * s.layers) / r.appendS / 1e3).toFixed(0)}K layer-positions/s)`);
  const ok = r.nmse.every((e) => e <= r.tolerance);
  console.log(
    `  attend (${s.heads} query heads, one query at the last position) layers ${r.checked.join(', ')}: ${r.attendMs.map((m) => `${m.toFixed(1)} ms`).join(', ')}; kernels ${r.kernels.join(', ')}`,
  );
  console.log(
    `  vs float64 reference: NMSE ${r.nmse.map((e) => e.toExponential(2)).join(', ')} (tolerance ${r.tolerance}): ${ok ? 'ok' : 'FAILED'}; layers' outputs differ: ${r.layersDiffer ? 'yes' : 'NO (FAILED)'}`,
  );
  if (!r.save.ok) console.log(`  save FAILED: ${r.save.error}`);
  else console.log(`  save ${r.save.s.toFixed(1)} s, file ${r.save.fileBytes} B (${gib(r.save.fileBytes)})`);
  if (r.restore && !r.restore.ok) console.log(`  restore FAILED: ${r.restore.error}`);
  else if (r.restore) console.log(`  restore ${r.restore.s.toFixed(1)} s; attend after restore bit-identical: ${r.restore.identical ? 'yes' : 'NO (FAILED)'}`);
  return ok && r.layersDiffer && r.save.ok && !!r.restore?.ok && r.restore.identical;
}
