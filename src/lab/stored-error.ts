// Negative control on the live cache: what each layer stores vs what was appended to it. The check that
// catches seed 002's retraction (quantization hooked to the wrong layers): error must be visible exactly on
// the layers meant to be quantized, and zero (after the exact format's own rounding) on the others.
import { readStored } from '../kernels/attention/dequantize.js';
import type { KvCache } from '../cache/kvcache.js';
import { planLayers, type CachePolicy } from '../cache/policy.js';
import { encode, decode } from '../formats/codec.js';
import { relL2 } from './metrics.js';

/** Collects every K/V row appended per layer (via forward's observe hook), token-major [tokens, kvHeads*D]. */
export class AppendRecorder {
  private readonly k: Float32Array[][];
  private readonly v: Float32Array[][];
  constructor(readonly layers: number) {
    this.k = Array.from({ length: layers }, () => []);
    this.v = Array.from({ length: layers }, () => []);
  }
  /** Pass as ForwardOptions.observe; copies, since forward reuses its buffers. */
  readonly observe = (layer: number, _q: Float32Array, k: Float32Array, v: Float32Array): void => {
    this.k[layer]!.push(k.slice());
    this.v[layer]!.push(v.slice());
  };
  /** A copy that records on independently (for a forked cache). */
  fork(): AppendRecorder {
    const r = new AppendRecorder(this.layers);
    this.k.forEach((parts, l) => r.k[l]!.push(...parts));
    this.v.forEach((parts, l) => r.v[l]!.push(...parts));
    return r;
  }
  rows(layer: number, which: 'k' | 'v'): Float32Array {
    const parts = (which === 'k' ? this.k : this.v)[layer]!;
    const out = new Float32Array(parts.reduce((s, p) => s + p.length, 0));
    let o = 0;
    for (const p of parts) out.set(p, (o += p.length) - p.length);
    return out;
  }
}

export interface LayerStoreError {
  readonly layer: number;
  /** Whether the policy under test means this layer's bulk to be quantized (K or V format not exact). */
  readonly quantizedK: boolean;
  readonly quantizedV: boolean;
  /** relL2 of the stored values vs the appended ones. */
  readonly kRelL2: number;
  readonly vRelL2: number;
  /** Stored values equal the appended ones rounded through the tensor's exact format (f32, f16 or bf16). */
  readonly kExact: boolean;
  readonly vExact: boolean;
}

function roundTrip(format: string, x: Float32Array, D: number): Float32Array {
  return decode(format, encode(format, x, [x.length / D, D]), x.length, [x.length / D, D]);
}

function same(a: Float32Array, b: Float32Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * Per-layer stored-vs-appended error of `cache`. `intended` is the policy the caller believes is in force
 * (not read back from the cache, so a cache built with a different policy is caught).
 */
export function storedErrors(cache: KvCache, rec: AppendRecorder, intended: CachePolicy): LayerStoreError[] {
  const plans = planLayers(intended, cache.layers, cache.capacity);
  return plans.map((p, l) => {
    const view = cache.view(l);
    const D = cache.headDim;
    // Sliding-window layers free positions older than their window: compare what the cache still holds.
    const from = (view.start ?? 0) * cache.kvHeads * D;
    const err = (which: 'k' | 'v') => {
      const want = rec.rows(l, which).subarray(from);
      const got = readStored(view, which).subarray(from);
      // An exact tensor is held in its own format everywhere, its window and sinks included (policy.ts).
      const f = p[which];
      return { rel: relL2(got, want), exact: f.exact && same(got, roundTrip(f.id, want, D)) };
    };
    const k = err('k');
    const v = err('v');
    return { layer: l, quantizedK: !p.k.exact, quantizedV: !p.v.exact, kRelL2: k.rel, vRelL2: v.rel, kExact: k.exact, vExact: v.exact };
  });
}

/** The control's verdict per layer: error above `floor` where quantized, exact rounding elsewhere. */
export function storeErrorOk(e: LayerStoreError, floor: number): boolean {
  const ok = (q: boolean, rel: number, exact: boolean) => (q ? rel > floor : exact);
  return ok(e.quantizedK, e.kRelL2, e.kExact) && ok(e.quantizedV, e.vRelL2, e.vExact);
}
