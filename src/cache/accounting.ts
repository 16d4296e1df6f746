// Exact memory accounting: bytes of every region for a configuration, from the format definitions.
import { planLayers, type CachePolicy, type LayerPlan } from './policy.js';
import { rowBytes, type KvFormat } from '../formats/format.js';
import { ArgumentError } from '../errors.js';
import { firstPositionOf, keptStreamStart } from './swa.js';
import { DEFAULT_CHUNK_TOKENS } from './stream.js';
import { headPacking } from './head-packing.js';
import { exactFrom, ringSlots } from './exact-from.js';

export interface KvBytesConfig {
  /** Positions held. */
  ctx: number;
  layers: number;
  kvHeads: number;
  headDim: number;
  policy: CachePolicy;
  /** Prompt length: decode anchors cover [prompt, prompt + count). Omitted: no anchors are held yet. */
  prompt?: number;
  /**
   * First position of the last append; default ctx - 1 (a decode step). Sliding-window layers hold
   * only the chunks that append's first query could still read.
   */
  batchStart?: number;
  /** Bulk chunk size of the cache (default 256): sliding-window layers drop whole chunks. */
  chunkTokens?: number;
}

/** Bytes by region (K + V, all layers). `staging` holds channel groups still waiting for 32 tokens. */
export interface RegionBytes {
  sinks: number;
  anchors: number;
  bulk: number;
  window: number;
  staging: number;
  total: number;
}

export interface KvBytes extends RegionBytes {
  /** K and V values held: ctx x layers x kvHeads x headDim x 2. */
  elements: number;
  /** Effective bits per element: total bytes x 8 / elements. */
  bitsPerElement: number;
  perLayer: RegionBytes[];
}

/** Positions held by each region of one layer at length n (each position in at most one exact region). */
export interface RegionCounts {
  sinks: number;
  anchors: number;
  window: number;
  /** Positions held in the bulk stream (overlay: all; residual: those that left the window; less dropped chunks). */
  stream: number;
}

/** When a layer's last append began and its chunk size: what a sliding-window layer has dropped. */
export interface Retention {
  batchStart: number;
  chunkTokens: number;
}

function overlap(a0: number, a1: number, b0: number, b1: number): number {
  return Math.max(0, Math.min(a1, b1) - Math.max(a0, b0));
}

/**
 * Closed-form region counts for one layer. Anchors sit at [max(prompt, sinks), prompt + count). A
 * sliding-window layer counts only positions from its first held one (see swa.ts).
 */
export function regionCounts(
  plan: LayerPlan,
  n: number,
  prompt?: number,
  retention: Retention = { batchStart: n - 1, chunkTokens: DEFAULT_CHUNK_TOKENS },
): RegionCounts {
  const a0 = prompt === undefined || !plan.anchors ? 0 : Math.max(prompt, plan.sinks);
  const a1 = prompt === undefined || !plan.anchors ? 0 : Math.max(a0, prompt + plan.anchors.count);
  const w0 = Math.max(0, n - plan.window);
  const streamLength = plan.windowMode === 'overlay' ? n : w0 - Math.min(plan.sinks, n, w0) - overlap(a0, a1, 0, w0);
  const kept = keptStreamStart(plan, retention.batchStart, streamLength, retention.chunkTokens, a0, a1);
  const e = Math.min(firstPositionOf(plan, kept, a0, a1), n);
  // The ring rows the queries at n - 1 and later read: the window, plus an open channel group (exact-from.ts).
  const x0 = n === 0 || ringSlots(plan) === 0 ? n : Math.min(n, exactFrom(plan, n - 1, a0, a1));
  const v0 = Math.max(x0, e);
  return {
    sinks: overlap(0, plan.sinks, e, n),
    anchors: overlap(a0, a1, e, n),
    window: n - v0 - overlap(0, plan.sinks, v0, n) - overlap(a0, a1, v0, n),
    stream: streamLength - kept,
  };
}

/** Encoded bulk bytes and staged exact bytes for `stream` positions of one tensor of one layer. */
export function bulkBytes(f: KvFormat, stream: number, kvHeads: number, headDim: number): { bulk: number; staging: number } {
  if (f.axis === 'token') return { bulk: stream * kvHeads * rowBytes(f, headDim), staging: 0 };
  const encoded = Math.floor(stream / f.blockValues) * f.blockValues;
  return {
    bulk: (encoded / f.blockValues) * kvHeads * headDim * f.blockBytes,
    staging: (stream - encoded) * kvHeads * headDim * 4, // staged as float32, exactly as appended
  };
}

/** Region bytes of one layer holding the given counts. */
export function layerBytes(plan: LayerPlan, c: RegionCounts, modelKvHeads: number, modelHeadDim: number): RegionBytes {
  const { heads: kvHeads, headDim } = headPacking(plan, modelKvHeads, modelHeadDim);
  const exactRow = kvHeads * (rowBytes(plan.exact.k, headDim) + rowBytes(plan.exact.v, headDim));
  const k = bulkBytes(plan.k, c.stream, kvHeads, headDim);
  const v = bulkBytes(plan.v, c.stream, kvHeads, headDim);
  const r: RegionBytes = {
    sinks: c.sinks * exactRow,
    anchors: plan.anchors ? c.anchors * kvHeads * (rowBytes(plan.anchors.k, headDim) + rowBytes(plan.anchors.v, headDim)) : 0,
    bulk: k.bulk + v.bulk,
    window: c.window * exactRow,
    staging: k.staging + v.staging,
    total: 0,
  };
  r.total = r.sinks + r.anchors + r.bulk + r.window + r.staging;
  return r;
}

function check(config: KvBytesConfig): void {
  for (const key of ['ctx', 'layers', 'kvHeads', 'headDim'] as const) {
    const x = config[key];
    if (!Number.isInteger(x) || x < (key === 'ctx' ? 0 : 1)) throw new ArgumentError(`kvBytes: ${key} must be a positive integer, got ${x}`);
  }
  const b = config.batchStart;
  if (b !== undefined && (!Number.isInteger(b) || b < 0 || b >= Math.max(1, config.ctx)))
    throw new ArgumentError(`kvBytes: batchStart must be an integer in [0, ctx), got ${b}`);
  const c = config.chunkTokens;
  if (c !== undefined && (!Number.isInteger(c) || c < 32 || c % 32 !== 0))
    throw new ArgumentError(`kvBytes: chunkTokens must be a positive multiple of 32, got ${c}`);
}

/** Bytes of a cache holding `ctx` positions under `policy`, region by region. */
export function kvBytes(config: KvBytesConfig): KvBytes {
  check(config);
  // Accounting has no capacity: any window or group size is allowed.
  const plans = planLayers(config.policy, config.layers, Number.MAX_SAFE_INTEGER);
  const retention = { batchStart: config.batchStart ?? Math.max(0, config.ctx - 1), chunkTokens: config.chunkTokens ?? DEFAULT_CHUNK_TOKENS };
  const perLayer = plans.map((p) => layerBytes(p, regionCounts(p, config.ctx, config.prompt, retention), config.kvHeads, config.headDim));
  const sum = (k: keyof RegionBytes) => perLayer.reduce((s, r) => s + r[k], 0);
  const elements = config.ctx * config.layers * config.kvHeads * config.headDim * 2;
  const total = sum('total');
  return {
    sinks: sum('sinks'),
    anchors: sum('anchors'),
    bulk: sum('bulk'),
    window: sum('window'),
    staging: sum('staging'),
    total,
    elements,
    bitsPerElement: elements ? (total * 8) / elements : 0,
    perLayer,
  };
}
