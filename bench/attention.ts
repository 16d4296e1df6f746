// Decode attention per format over arena-resident packed K/V (8 kv heads x 32 query heads, GQA 4, one
// query), the shape of KERNELS.md's llama.cpp table; plus encode (append) throughput per format.
// GFLOP/s are counted as llama.cpp's test-backend-ops counts flash attention: 2*(dk+dv)*kv*heads*queries.
import { getFormat } from '../src/formats/registry.js';
import { bytesFor, type KvFormat } from '../src/formats/format.js';
import type { MixedView, PackedRun } from '../src/attention/view.js';
import { attend } from '../src/kernels/attend.js';
import { encodeRows } from '../src/kernels/encode.js';
import { hasKernel } from '../src/kernels/registry.js';
import { sharedArena } from '../src/kernels/arena.js';
import { wasmKernels } from '../src/kernels/wasm.js';
import { Prng } from '../src/numeric/prng.js';
import { timeMedian } from './harness.js';

const KV_HEADS = 8;
const HEADS = 32;
/** Skip cases whose packed K+V would not fit next to the rest in wasm32's 4 GiB. */
const MAX_CASE_BYTES = 1.5 * 2 ** 30;

/** A K/V pairing: a format, or a scheme (q2k = K q2c_0 + V q4_0, seed 000's scheme, not ggml's Q2_K). */
export interface Pairing {
  readonly name: string;
  readonly k: string;
  readonly v: string;
}
export const PAIRINGS: Record<string, Pairing> = {
  f32: { name: 'f32', k: 'f32', v: 'f32' },
  f16: { name: 'f16', k: 'f16', v: 'f16' },
  q8_0: { name: 'q8_0', k: 'q8_0', v: 'q8_0' },
  q4_0: { name: 'q4_0', k: 'q4_0', v: 'q4_0' },
  q2k: { name: 'q2k', k: 'q2c_0', v: 'q4_0' },
};
export function pairing(name: string): Pairing {
  return PAIRINGS[name] ?? { name, k: name, v: name };
}

export interface AttentionRow {
  format: string;
  headDim: number;
  context: number;
  impl: string;
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
      const dst = f.axis === 'token' ? off + h * headStride + (t / B) * B * (bytesFor(f, 1, D)) : off + h * headStride + (t / B) * D * f.blockBytes;
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

export function benchAttention(names: readonly string[], headDims: readonly number[], contexts: readonly number[], bandwidth: number, log: (s: string) => void): AttentionRow[] {
  const rows: AttentionRow[] = [];
  const q = new Prng(3).normals(HEADS * 256);
  for (const D of headDims) {
    for (const L of contexts) {
      let f32Seconds = NaN;
      for (const name of ['f32', ...names.filter((n) => n !== 'f32')]) {
        const p = pairing(name);
        const kf = getFormat(p.k);
        const vf = getFormat(p.v);
        const packed = KV_HEADS * (bytesFor(kf, L, D) + bytesFor(vf, L, D));
        if (packed > MAX_CASE_BYTES) {
          log(`skip ${name} D=${D} L=${L}: ${(packed / 2 ** 30).toFixed(2)} GiB of K+V`);
          continue;
        }
        const a = sharedArena();
        const kr = fillRun(kf, L, D);
        const vr = fillRun(vf, L, D);
        const bytes = a.u8();
        const run = (f: KvFormat, r: { off: number; headStride: number }): PackedRun => ({ format: f, bytes, offset: r.off, headStride: r.headStride, first: 0 });
        const view: MixedView = { headDim: D, kvHeads: KV_HEADS, length: L, segments: [{ start: 0, count: L, k: run(kf, kr), v: run(vf, vr), region: 'bulk' }] };
        const qq = q.subarray(0, HEADS * D);
        const out = new Float32Array(HEADS * D);
        const seconds = timeMedian(() => attend({ view, q: qq, heads: HEADS, out }), L >= 65536 ? 1.5 : 0.5);
        a.free(kr.off);
        a.free(vr.off);
        if (name === 'f32') f32Seconds = seconds;
        const impl = hasKernel(p.k, 'scores', 'wasm') && hasKernel(p.v, 'accumulate', 'wasm') ? 'wasm' : 'ref-kernels';
        const gbs = packed / seconds / 1e9;
        const row: AttentionRow = {
          format: name, headDim: D, context: L, impl, seconds,
          gflops: (2 * (D + D) * L * HEADS) / seconds / 1e9,
          packedGBs: gbs,
          tokensPerSecond: L / seconds,
          vsF32: f32Seconds / seconds,
          vsBandwidth: gbs / bandwidth,
        };
        rows.push(row);
        if (names.includes(name)) log(`${name} D=${D} L=${L}: ${(seconds * 1e3).toFixed(3)} ms, ${row.gflops.toFixed(1)} GFLOP/s`);
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
      const src = POOL.subarray(0, tokens * D <= POOL.length ? tokens * D : POOL.length);
      const T = Math.floor(src.length / D);
      const B = f.axis === 'token' ? T : f.blockValues;
      const seconds = timeMedian(() => {
        const u8 = a.u8();
        if (f.axis === 'token') encodeRows(f, src, 0, D, T, D, u8, off);
        else for (let t = 0; t + B <= T; t += B) encodeRows(f, src, t * D, D, B, D, u8, off + (t / B) * D * f.blockBytes);
      }, 0.3);
      a.free(off);
      const n = f.axis === 'token' ? T : Math.floor(T / B) * B;
      rows.push({ format: id, headDim: D, impl: hasKernel(id, 'encode', 'wasm') ? 'wasm' : 'ref', rowsPerSecond: n / seconds, inputGBs: (n * D * 4) / seconds / 1e9 });
    }
  }
  return rows;
}
