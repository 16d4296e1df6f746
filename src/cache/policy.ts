// CachePolicy: plain JSON data describing how each layer stores K and V, so a protocol can hash it.
import { PolicyError, UnknownFormatError } from '../errors.js';
import { formats } from '../formats/registry.js';
import type { KvFormat } from '../formats/format.js';
import { DEFAULT_ANCHOR_PRECISION, DEFAULT_EXACT, DEFAULT_SINKS, DEFAULT_WINDOW } from './defaults.js';

/** Where recent positions live: `overlay` (seed 000: bulk holds every position, an exact copy of the last
 * W overlays it) or `residual` (KIVI/HF/seed 003: a position enters the bulk only when it leaves the window). */
export type WindowMode = 'overlay' | 'residual';
export type AnchorPrecision = 'f16' | 'int8' | 'int4';

/** Anchor precision -> the format that stores it (int8/int4 reuse ggml's q8_0/q4_0 blocks). */
export const ANCHOR_FORMATS: Readonly<Record<AnchorPrecision, string>> = { f16: 'f16', int8: 'q8_0', int4: 'q4_0' };

export interface AnchorPolicy {
  /** First N generated positions after the prompt kept in `precision` (seed 002's decode anchors). */
  count: number;
  /** Layers that keep anchors: indices or 'all'. */
  layers?: number[] | 'all';
  precision?: AnchorPrecision;
}

export interface RotationPolicy {
  /** Randomized Hadamard rotation within each head before quantization. */
  k?: boolean;
  v?: boolean;
  seed?: number;
}

/** Fields a per-layer override may change. */
export interface LayerOverride {
  k?: string;
  v?: string;
  window?: number;
  sinks?: number;
  anchors?: AnchorPolicy | null;
  rotation?: RotationPolicy | null;
  /**
   * Sliding-window attention (gemma3's local layers): a query at p reads only [p - N + 1, p], so the cache
   * drops older positions (llama.cpp's SWA cache). 0 keeps every position. The engine sets it per layer
   * from the model (see swa.ts); an explicit 0 opts out and keeps everything.
   */
  slidingWindow?: number;
}

export interface CachePolicy extends LayerOverride {
  /** K and V bulk formats (ids from the format registry). */
  k: string;
  v: string;
  windowMode?: WindowMode;
  /**
   * Precision of a lossy tensor's sinks and window: 'f16' (seed 000, the default) or 'f32' (seed 003). An
   * exact tensor's regions use its own format, so they never read less exactly than its bulk.
   */
  exact?: 'f16' | 'f32';
  /** Per-layer overrides keyed by layer index. */
  layers?: Record<string, LayerOverride>;
}

export { DEFAULT_WINDOW, DEFAULT_SINKS };

/** K and V formats of one region. */
export interface TensorFormats {
  readonly k: KvFormat;
  readonly v: KvFormat;
}

/**
 * One layer's policy with every default applied and every format resolved. Exact regions (window, sinks,
 * anchors) exist only over a lossy bulk: with exact K and V (f32/f16/bf16) all three are 0 / null and every
 * position is held once. An exact tensor beside a lossy one keeps its regions in its own format.
 */
export interface LayerPlan {
  readonly layer: number;
  readonly k: KvFormat;
  readonly v: KvFormat;
  readonly window: number;
  readonly sinks: number;
  readonly windowMode: WindowMode;
  /** Formats of the sinks and the window. */
  readonly exact: TensorFormats;
  readonly anchors: ({ count: number } & TensorFormats) | null;
  readonly rotation: { k: boolean; v: boolean; seed: number } | null;
  /** Positions attention can see (a query at p reads [p - N + 1, p]); older bulk chunks are freed. 0 = all. */
  readonly slidingWindow: number;
}

function fmt(field: string, id: unknown): KvFormat {
  if (typeof id !== 'string') throw new PolicyError(field, `expected a format id, got ${JSON.stringify(id)}`);
  const f = formats.get(id);
  if (!f) throw new PolicyError(field, new UnknownFormatError('format', id, [...formats.keys()]).message);
  return f;
}

function count(field: string, x: unknown, max: number, maxWhat: string): number {
  if (typeof x !== 'number' || !Number.isInteger(x) || x < 0) throw new PolicyError(field, `expected a non-negative integer, got ${JSON.stringify(x)}`);
  if (x > max) throw new PolicyError(field, `${x} exceeds ${maxWhat} (${max})`);
  return x;
}

/** Resolves and validates a policy for `layers` layers of capacity `capacity`; errors name the field. */
export function planLayers(policy: CachePolicy, layers: number, capacity: number): LayerPlan[] {
  if (policy === null || typeof policy !== 'object') throw new PolicyError('', 'expected an object');
  const mode = policy.windowMode ?? 'overlay';
  if (mode !== 'overlay' && mode !== 'residual') throw new PolicyError('windowMode', `expected 'overlay' or 'residual', got ${JSON.stringify(mode)}`);
  const exactId = policy.exact ?? DEFAULT_EXACT;
  if (exactId !== 'f16' && exactId !== 'f32') throw new PolicyError('exact', `expected 'f16' or 'f32', got ${JSON.stringify(exactId)}`);
  const exact = fmt('exact', exactId);
  // A region copy of an exact tensor is in the tensor's own format: never less exact than its bulk.
  const regionFormat = (bulk: KvFormat, lossy: KvFormat) => (bulk.exact ? bulk : lossy);
  for (const key of Object.keys(policy.layers ?? {})) {
    const i = Number(key);
    if (!Number.isInteger(i) || i < 0 || i >= layers) throw new PolicyError(`layers.${key}`, `no such layer (the model has ${layers})`);
  }
  const plans: LayerPlan[] = [];
  for (let layer = 0; layer < layers; layer++) {
    const o = policy.layers?.[String(layer)] ?? {};
    const at = (f: string) => (f in o ? `layers.${layer}.${f}` : f);
    const pick = <K extends keyof LayerOverride>(key: K): LayerOverride[K] => (key in o ? o[key] : policy[key]);
    const k = fmt(at('k'), pick('k'));
    const v = fmt(at('v'), pick('v'));
    // A default never exceeds the capacity (an explicit value that does is an error).
    const window0 = count(at('window'), pick('window') ?? Math.min(DEFAULT_WINDOW, capacity), capacity, 'capacity');
    const sinks0 = count(at('sinks'), pick('sinks') ?? Math.min(DEFAULT_SINKS, capacity), capacity, 'capacity');
    // Over exact K and V a region would only be a second copy of what the bulk holds.
    const lossy = !k.exact || !v.exact;
    const window = lossy ? window0 : 0;
    const sinks = lossy ? sinks0 : 0;
    // No capacity bound: a window at least as long as the cache simply never drops anything.
    const slidingWindow = count(at('slidingWindow'), pick('slidingWindow') ?? 0, Number.MAX_SAFE_INTEGER, 'the largest safe integer');
    for (const [name, f] of [
      ['k', k],
      ['v', v],
    ] as const) {
      if (f.axis === 'channel' && f.blockValues > capacity) {
        throw new PolicyError(at(name), `per-channel group of ${f.blockValues} tokens is larger than capacity ${capacity}`);
      }
    }
    let anchors: LayerPlan['anchors'] = null;
    const a = pick('anchors');
    if (a) {
      const c = count(`${at('anchors')}.count`, a.count, capacity, 'capacity');
      const ls = a.layers ?? 'all';
      if (ls !== 'all' && (!Array.isArray(ls) || ls.some((x) => !Number.isInteger(x) || x < 0 || x >= layers))) {
        throw new PolicyError(`${at('anchors')}.layers`, `expected 'all' or layer indices in [0, ${layers})`);
      }
      const prec = a.precision ?? DEFAULT_ANCHOR_PRECISION;
      if (!(prec in ANCHOR_FORMATS)) throw new PolicyError(`${at('anchors')}.precision`, `expected f16 | int8 | int4, got ${JSON.stringify(prec)}`);
      const af = fmt(`${at('anchors')}.precision`, ANCHOR_FORMATS[prec]);
      if (lossy && c > 0 && (ls === 'all' || ls.includes(layer))) anchors = { count: c, k: regionFormat(k, af), v: regionFormat(v, af) };
    }
    let rotation: LayerPlan['rotation'] = null;
    const r = pick('rotation');
    if (r && (r.k || r.v)) {
      const seed = r.seed ?? 0;
      if (!Number.isInteger(seed)) throw new PolicyError(`${at('rotation')}.seed`, `expected an integer, got ${JSON.stringify(seed)}`);
      rotation = { k: !!r.k, v: !!r.v, seed };
    }
    plans.push({
      layer,
      k,
      v,
      window,
      sinks,
      windowMode: mode,
      exact: { k: regionFormat(k, exact), v: regionFormat(v, exact) },
      anchors,
      rotation,
      slidingWindow,
    });
  }
  return plans;
}
