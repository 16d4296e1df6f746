// Decode attention per format over arena-resident packed K/V (8 kv heads x 32 query heads, GQA 4, one
// query), the shape of KERNELS.md's llama.cpp table; plus encode (append) throughput per format.
// GFLOP/s are counted as llama.cpp's test-backend-ops counts flash attention: 2*(dk+dv)*kv*heads*queries.
import { getFormat } from '../src/formats/registry.js';
import { bytesFor, type KvFormat } from '../src/formats/format.js';
import type { MixedView, PackedRun } from '../src/kernels/attention/view.js';
import { attend, type QPrecision, type VPrecision } from '../src/kernels/attention/attend.js';
import { ArgumentError } from '../src/errors.js';
import { encodeRows } from '../src/kernels/attention/encode.js';
import { hasKernel } from '../src/kernels/attention/registry.js';
import { sharedArena } from '../src/kernels/runtime/arena.js';
import { wasmKernels } from '../src/kernels/runtime/wasm.js';
import { Prng } from '../src/numeric/prng.js';
import { median, timeInterleaved, timeMedian } from './harness.js';

const KV_HEADS = 8;
const HEADS = 32;
/** Skip cases whose packed K+V would not fit next to the rest in wasm32's 4 GiB. */
const MAX_CASE_BYTES = 1.5 * 2 ** 30;

/**
 * A K/V pairing: a format, or a scheme (q2k = K q2c_0 + V q4_0, seed 000's scheme, not ggml's Q2_K);
 * suffixes pick accuracy choices: `:int8` / `:int16` the qPrecision (integer score dots), `:w16` vPrecision
 * 'int16' (integer weighted sums), e.g. `q4_0:int8:w16`.
 */
export interface Pairing {
  readonly name: string;
  readonly k: string;
  readonly v: string;
  readonly qPrecision?: QPrecision;
  readonly vPrecision?: VPrecision;
}
export const PAIRINGS: Record<string, Pairing> = {
  f32: { name: 'f32', k: 'f32', v: 'f32' },
  f16: { name: 'f16', k: 'f16', v: 'f16' },
  q8_0: { name: 'q8_0', k: 'q8_0', v: 'q8_0' },
  q4_0: { name: 'q4_0', k: 'q4_0', v: 'q4_0' },
  q2k: { name: 'q2k', k: 'q2c_0', v: 'q4_0' },
};
export function pairing(name: string): Pairing {
  const [base, ...mods] = name.split(':') as [string, ...string[]];
  const p = PAIRINGS[base] ?? { name: base, k: base, v: base };
  let out: Pairing = { ...p, name };
  for (const m of mods) {
    if (m === 'int8' || m === 'int16') out = { ...out, qPrecision: m };
    else if (m === 'w16') out = { ...out, vPrecision: 'int16' };
    else throw new ArgumentError(`bench: unknown pairing suffix ':${m}' in '${name}' (int8, int16, w16)`);
  }
  return out;
}

export interface AttentionRow {
  format: string;
  headDim: number;
  context: number;
  impl: string;
  threads: number;
  seconds: number;
  gflops: number;
  packedGBs: number;
  /** Tokens (kv positions x kv heads... per call) per second: context / seconds. */
  tokensPerSecond: number;
  vsF32: number;
  vsBandwidth: number;
}

export interface EncodeRow {
  format: string;
  headDim: number;
  impl: string;
  /** kv-head rows encoded per second. */
  rowsPerSecond: number;
  /** f32 input GB/s. */
  inputGBs: number;
}

/** Shared random source values reused cyclically (generating 10^8 normals would dominate the run). */
const POOL = new Prng(7).normals(1 << 16);

/** Encodes one run of `tokens` tokens x KV_HEADS heads into the arena; returns its origin and head stride. */
function fillRun(f: KvFormat, tokens: number, D: number): { off: number; headStride: number } {
  const a = sharedArena();
  const headStride = bytesFor(f, tokens, D);
  const off = a.alloc(KV_HEADS * headStride);
  const B = f.axis === 'token' ? 256 : f.blockValues;
  for (let h = 0; h < KV_HEADS; h++) {
    for (let t = 0; t < tokens; t += B) {
      const n = f.axis === 'token' ? Math.min(B, tokens - t) : B;
      const start = ((h * 7919 + t) * D) % (POOL.length - n * D);
      const dst = f.axis === 'token' ? off + h * headStride + (t / B) * B * bytesFor(f, 1, D) : off + h * headStride + (t / B) * D * f.blockBytes;
      encodeRows(f, POOL, start, D, n, D, a.u8(), dst);
    }
  }
  return { off, headStride };
}

/** Single-core read bandwidth (GB/s): a wasm SIMD sum over a 256 MiB arena buffer. */
export function measureBandwidth(): number {
  const k = wasmKernels();
  if (!k) return NaN;
  const bytes = 256 << 20;
  const off = k.arena.alloc(bytes);
  const s = timeMedian(() => k.exports.sumF32(off, bytes / 4), 1.0, 5);
  k.arena.free(off);
  return bytes / s / 1e9;
}

/** One pairing's packed K/V in the arena, ready to time. */
interface Case {
  readonly name: string;
  readonly p: Pairing;
  readonly impl: string;
  readonly packed: number;
  readonly view: MixedView;
}

/** The view over K and V runs of `tokens` positions (runs: format id -> arena origin and head stride). */
function caseFor(name: string, D: number, L: number, runs: ReadonlyMap<string, { off: number; headStride: number }>): Case {
  const p = pairing(name);
  const kf = getFormat(p.k);
  const vf = getFormat(p.v);
  const bytes = sharedArena().u8();
  const run = (f: KvFormat): PackedRun => ({ format: f, bytes, offset: runs.get(f.id)!.off, headStride: runs.get(f.id)!.headStride, first: 0 });
  const impl =
    (hasKernel(p.k, 'scores', 'wasm') && hasKernel(p.v, 'accumulate', 'wasm') ? 'wasm' : 'ref-kernels') +
    (p.qPrecision ? ` q ${p.qPrecision}` : '') +
    (p.vPrecision ? ` v ${p.vPrecision}` : '');
  return {
    name,
    p,
    impl,
    packed: KV_HEADS * (bytesFor(kf, L, D) + bytesFor(vf, L, D)),
    view: { headDim: D, kvHeads: KV_HEADS, length: L, segments: [{ start: 0, count: L, k: run(kf), v: run(vf), region: 'bulk' }] },
  };
}

/** Encodes the K/V runs `names` need (each format once), or returns null when they would not fit together. */
function fillRuns(ids: readonly string[], D: number, L: number): Map<string, { off: number; headStride: number }> | null {
  const distinct = [...new Set(ids)];
  if (distinct.reduce((s, id) => s + KV_HEADS * bytesFor(getFormat(id), L, D), 0) > MAX_CASE_BYTES) return null;
  return new Map(distinct.map((id) => [id, fillRun(getFormat(id), L, D)]));
}

/**
 * Per (D, L): every pairing at every thread count; f32 at the same thread count is each row's baseline.
 * Pairings whose K/V fit in the arena together are timed call by call in alternation (median per pairing):
 * this machine's second vCPU drifts by up to 1.5x over minutes, which would otherwise favour whichever ran
 * in a quiet minute. Larger cases time one pairing at a time, in `rounds` alternating rounds (median round).
 */
export function benchAttention(
  names: readonly string[],
  headDims: readonly number[],
  contexts: readonly number[],
  threadCounts: readonly number[],
  bandwidth: number,
  log: (s: string) => void,
  rounds = 1,
): AttentionRow[] {
  const rows: AttentionRow[] = [];
  const q = new Prng(3).normals(HEADS * 256);
  for (const D of headDims) {
    const qq = q.subarray(0, HEADS * D);
    const out = new Float32Array(HEADS * D);
    const call = (c: Case, threads: number) => () =>
      attend({ view: c.view, q: qq, heads: HEADS, out, threads, qPrecision: c.p.qPrecision, vPrecision: c.p.vPrecision });
    const gflops = (L: number, seconds: number) => (2 * (D + D) * L * HEADS) / seconds / 1e9;
    for (const L of contexts) {
      const order = ['f32', ...names.filter((n) => n !== 'f32')].filter((name) => {
        const p = pairing(name);
        const packed = KV_HEADS * (bytesFor(getFormat(p.k), L, D) + bytesFor(getFormat(p.v), L, D));
        if (packed > MAX_CASE_BYTES) log(`skip ${name} D=${D} L=${L}: ${(packed / 2 ** 30).toFixed(2)} GiB of K+V`);
        return packed <= MAX_CASE_BYTES;
      });
      const seconds = new Map<string, number>();
      const cases = new Map<string, Case>();
      const budget = L >= 65536 ? 1.5 : 0.5;
      const all = fillRuns(
        order.flatMap((n) => [pairing(n).k, pairing(n).v]),
        D,
        L,
      );
      if (all) {
        for (const name of order) cases.set(name, caseFor(name, D, L, all));
        for (const threads of threadCounts) {
          const med = timeInterleaved(
            order.map((n) => call(cases.get(n)!, threads)),
            budget,
          );
          order.forEach((n, i) => seconds.set(`${n}@${threads}`, med[i]!));
          log(`D=${D} L=${L} threads=${threads} (interleaved): ${order.map((n, i) => `${n} ${gflops(L, med[i]!).toFixed(1)}`).join(', ')} GFLOP/s`);
        }
        for (const r of all.values()) sharedArena().free(r.off);
      } else {
        const times = new Map<string, number[]>();
        for (let round = 0; round < rounds; round++) {
          for (const name of order) {
            const p = pairing(name);
            const runs = fillRuns([p.k, p.v], D, L)!;
            const c = caseFor(name, D, L, runs);
            cases.set(name, c);
            for (const threads of threadCounts) {
              const s = timeMedian(call(c, threads), budget);
              times.set(`${name}@${threads}`, [...(times.get(`${name}@${threads}`) ?? []), s]);
              log(
                `${name} D=${D} L=${L} threads=${threads}${rounds > 1 ? ` round ${round + 1}/${rounds}` : ''}: ${(s * 1e3).toFixed(3)} ms, ${gflops(L, s).toFixed(1)} GFLOP/s`,
              );
            }
            for (const r of runs.values()) sharedArena().free(r.off);
          }
        }
        for (const [key, ts] of times) seconds.set(key, median(ts));
      }
      for (const name of order) {
        const c = cases.get(name)!;
        for (const threads of threadCounts) {
          const s = seconds.get(`${name}@${threads}`)!;
          const gbs = c.packed / s / 1e9;
          rows.push({
            format: name,
            headDim: D,
            context: L,
            impl: c.impl,
            threads,
            seconds: s,
            gflops: gflops(L, s),
            packedGBs: gbs,
            tokensPerSecond: L / s,
            vsF32: seconds.get(`f32@${threads}`)! / s,
            vsBandwidth: gbs / bandwidth,
          });
        }
      }
    }
  }
  return rows.filter((r) => names.includes(r.format));
}

export function benchEncode(names: readonly string[], headDims: readonly number[]): EncodeRow[] {
  const rows: EncodeRow[] = [];
  const tokens = 4096;
  for (const D of headDims) {
    for (const id of new Set(names.flatMap((n) => [pairing(n).k, pairing(n).v]))) {
      const f = getFormat(id);
      const a = sharedArena();
      const off = a.alloc(bytesFor(f, tokens, D));
      // `tokens` rows of distinct values: the pool tiled (rows repeat every POOL.length / D tokens).
      const src = new Float32Array(tokens * D);
      for (let i = 0; i < src.length; i += POOL.length) src.set(POOL.subarray(0, Math.min(POOL.length, src.length - i)), i);
      const T = tokens;
      const B = f.axis === 'token' ? T : f.blockValues;
      const seconds = timeMedian(() => {
        const u8 = a.u8();
        if (f.axis === 'token') encodeRows(f, src, 0, D, T, D, u8, off);
        else for (let t = 0; t + B <= T; t += B) encodeRows(f, src, t * D, D, B, D, u8, off + (t / B) * D * f.blockBytes);
      }, 0.3);
      a.free(off);
      const n = f.axis === 'token' ? T : Math.floor(T / B) * B;
      rows.push({
        format: id,
        headDim: D,
        impl: hasKernel(id, 'encode', 'wasm') ? 'wasm' : 'ref',
        rowsPerSecond: n / seconds,
        inputGBs: (n * D * 4) / seconds / 1e9,
      });
    }
  }
  return rows;
}

export interface ThresholdRow {
  context: number;
  /** Score evaluations per call (context x query heads), the unit of PARALLEL_MIN_WORK. */
  work: number;
  oneThread: number;
  allThreads: number;
  speedup: number;
}

/**
 * 1 vs all threads with the pool forced on (minParallelWork 0), q4_0 decode at small contexts, best of
 * interleaved repeats: where threads start to pay (attend.ts PARALLEL_MIN_WORK cites this probe).
 */
export function probeThreshold(threads: number, contexts: readonly number[], D = 128): ThresholdRow[] {
  const rows: ThresholdRow[] = [];
  const f = getFormat('q4_0');
  const q = new Prng(5).normals(HEADS * D);
  const out = new Float32Array(HEADS * D);
  for (const L of contexts) {
    const a = sharedArena();
    const kr = fillRun(f, L, D);
    const vr = fillRun(f, L, D);
    const bytes = a.u8();
    const run = (r: { off: number; headStride: number }): PackedRun => ({ format: f, bytes, offset: r.off, headStride: r.headStride, first: 0 });
    const view: MixedView = { headDim: D, kvHeads: KV_HEADS, length: L, segments: [{ start: 0, count: L, k: run(kr), v: run(vr), region: 'bulk' }] };
    const best = [Infinity, Infinity];
    for (let rep = 0; rep < 7; rep++) {
      [1, threads].forEach((t, i) => {
        best[i] = Math.min(
          best[i]!,
          timeMedian(() => attend({ view, q, heads: HEADS, out, threads: t, minParallelWork: 0 }), 0.05, 3),
        );
      });
    }
    a.free(kr.off);
    a.free(vr.off);
    rows.push({ context: L, work: L * HEADS, oneThread: best[0]!, allThreads: best[1]!, speedup: best[0]! / best[1]! });
  }
  return rows;
}
