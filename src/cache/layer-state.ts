// LayerState: one cache layer as plain data (mlx-lm's `state` / `meta_state`): `meta`, its counts and positions
// (a cache file's header JSON), and `arrays`, the bytes of its regions. LayerCache.state() gives it and
// LayerCache.fromState() rebuilds a layer from it after checkLayerState(): cache files, slot files, forks and
// the shared store's chunks all pass through here, so a layer's invariants are written once.
import { rowBytes } from '../formats/format.js';
import { f32 } from '../formats/f32.js';
import { CacheStateError } from '../errors.js';
import type { LayerPlan } from './policy.js';
import { ringSlots } from './exact-from.js';
import { chunkHeadStride } from './stream.js';

export interface KV<T> {
  readonly k: T;
  readonly v: T;
}

/** One bulk tensor's counts. */
export interface StreamMeta {
  /** Stream positions received (encoded + staged). */
  length: number;
  /** Encoded stream positions (whole groups for channel formats). */
  encoded: number;
  /** Chunks held (in the arrays). */
  chunks: number;
  /** Leading chunks a sliding-window layer freed (stream indices < dropped * chunkTokens are gone). */
  dropped: number;
}

/** A layer's counts and positions (LayerCache fields of the same names); key order is the cache file header's. */
export interface LayerMeta {
  /** Positions held. */
  n: number;
  /** Prompt length once decoding began (anchors start here); null before. */
  prompt: number | null;
  /** Lowest position whose ring copy is valid. */
  ringLo: number;
  /** Residual mode: non-exact positions < streamEnd have left the window for the bulk. */
  streamEnd: number;
  /** First position held (> 0 only on sliding-window layers that dropped chunks). */
  evicted: number;
  k: StreamMeta;
  v: StreamMeta;
}

/** A layer's exact regions by name, each a store of per-head rows; staging only for channel-axis tensors. */
export interface Regions<T> {
  readonly sinks: KV<T>;
  /** The window ring (ringSlots slots). */
  readonly ring: KV<T>;
  readonly anchors: KV<T> | null;
  /** Float32 rows of the channel group not yet full ([heads][blockValues][headDim]); null for token-axis formats. */
  readonly staging: { readonly k: T | null; readonly v: T | null };
}

/** The regions in their one order (a cache file's payload, LayerCache.stores()). */
export function regionList<T>(r: Regions<T>): T[] {
  const out = [r.sinks.k, r.sinks.v, r.ring.k, r.ring.v];
  if (r.anchors) out.push(r.anchors.k, r.anchors.v);
  for (const s of [r.staging.k, r.staging.v]) if (s !== null) out.push(s);
  return out;
}

/** The inverse of regionList: the regions of `like` (the same ones present) from a list in regionList order. */
export function regionsOf<T>(like: Regions<unknown>, list: readonly T[]): Regions<T> {
  let i = 0;
  const next = () => list[i++]!;
  const sinks = { k: next(), v: next() };
  const ring = { k: next(), v: next() };
  const anchors = like.anchors ? { k: next(), v: next() } : null;
  const staging = { k: like.staging.k !== null ? next() : null, v: like.staging.v !== null ? next() : null };
  return { sinks, ring, anchors, staging };
}

/** A store's rows: bytes [heads][rows][rowBytes]. */
export interface RowShape {
  readonly heads: number;
  readonly rows: number;
  readonly rowBytes: number;
}

export const shapeBytes = (s: RowShape): number => s.heads * s.rows * s.rowBytes;

/** The sizes of a layer's arrays, fixed by its plan and stored shape. */
export interface LayerLayout extends Regions<RowShape> {
  readonly chunkTokens: number;
  readonly chunkBytes: KV<number>;
  /** Positions per encoded group: blockValues for a channel-axis format (staged until full), 1 for token axis. */
  readonly group: KV<number>;
}

/** The layout of a layer of `heads` stored heads of headDim (head-packing.ts) in chunks of chunkTokens. */
export function layerLayout(plan: LayerPlan, heads: number, headDim: number, chunkTokens: number): LayerLayout {
  const rows = (f: LayerPlan['exact'], n: number): KV<RowShape> => ({
    k: { heads, rows: n, rowBytes: rowBytes(f.k, headDim) },
    v: { heads, rows: n, rowBytes: rowBytes(f.v, headDim) },
  });
  const staging = (w: 'k' | 'v') => (plan[w].axis === 'channel' ? { heads, rows: plan[w].blockValues, rowBytes: rowBytes(f32, headDim) } : null);
  return {
    sinks: rows(plan.exact, plan.sinks),
    ring: rows(plan.exact, ringSlots(plan)),
    anchors: plan.anchors ? rows(plan.anchors, plan.anchors.count) : null,
    staging: { k: staging('k'), v: staging('v') },
    chunkTokens,
    chunkBytes: { k: heads * chunkHeadStride(plan.k, headDim, chunkTokens), v: heads * chunkHeadStride(plan.v, headDim, chunkTokens) },
    group: { k: plan.k.axis === 'channel' ? plan.k.blockValues : 1, v: plan.v.axis === 'channel' ? plan.v.blockValues : 1 },
  };
}

/** A layer's bytes: each region's raw store (a frozen layer's unheld rows are zero) and the bulk chunks held. */
export interface LayerArrays extends Regions<Uint8Array> {
  /** Held chunks, oldest first, chunkBytes each. */
  readonly chunks: KV<readonly Uint8Array[]>;
}

export interface LayerState {
  readonly meta: LayerMeta;
  readonly arrays: LayerArrays;
}

/** The arrays in a cache file's payload order: the regions (regionList), then the K chunks, then the V chunks. */
export function arrayList(a: LayerArrays): Uint8Array[] {
  return [...regionList(a), ...a.chunks.k, ...a.chunks.v];
}

/** Bytes of a layer's arrays (its part of a cache file's payload): the regions and the chunks its counts hold. */
export function stateBytes(layout: LayerLayout, meta: LayerMeta): number {
  const regions = regionList(layout).reduce((s, r) => s + shapeBytes(r), 0);
  return regions + meta.k.chunks * layout.chunkBytes.k + meta.v.chunks * layout.chunkBytes.v;
}

/** The arrays of a layer read in payload order: take(n) gives the next n bytes (kept as given). */
export function readArrays(layout: LayerLayout, meta: LayerMeta, take: (n: number) => Uint8Array): LayerArrays {
  const regions = regionsOf(
    layout,
    regionList(layout).map((s) => take(shapeBytes(s))),
  );
  const chunks = (w: 'k' | 'v') => Array.from({ length: meta[w].chunks }, () => take(layout.chunkBytes[w]));
  const k = chunks('k');
  return { ...regions, chunks: { k, v: chunks('v') } };
}

const isCount = (x: unknown): x is number => typeof x === 'number' && Number.isInteger(x) && x >= 0;

function bad(message: string): never {
  throw new CacheStateError(message);
}

/**
 * The counts must describe a possible layer of this plan (a checksum only proves bytes are the writer's):
 * CacheStateError naming the layer otherwise.
 */
export function checkLayerMeta(plan: LayerPlan, layout: LayerLayout, capacity: number, st: LayerMeta): void {
  const where = `layer ${plan.layer}`;
  if (!st || typeof st !== 'object') bad(`${where}: missing state`);
  if (!isCount(st.n) || st.n > capacity) bad(`${where} holds ${st.n} positions, capacity is ${capacity}`);
  if (!isCount(st.ringLo) || !isCount(st.streamEnd) || st.ringLo > st.n || st.streamEnd > st.n) bad(`${where} has window bounds outside [0, ${st.n}]`);
  if (st.prompt !== null && (!isCount(st.prompt) || st.prompt > st.n)) bad(`${where} has prompt ${st.prompt} beyond its length`);
  for (const w of ['k', 'v'] as const) {
    const t = st[w];
    const B = layout.group[w];
    if (!t || !isCount(t.length) || !isCount(t.encoded) || !isCount(t.chunks)) bad(`${where} ${w}: bad stream counts`);
    const pending = t.length - t.encoded;
    if (t.length > st.n || pending < 0 || pending >= B || t.encoded % B !== 0) bad(`${where} ${w}: ${t.encoded} encoded of ${t.length} is impossible`);
    if (!isCount(t.dropped) || t.dropped * layout.chunkTokens > t.encoded) bad(`${where} ${w}: ${t.dropped} dropped chunks of ${t.encoded} encoded positions`);
    if (t.chunks !== Math.ceil(t.encoded / layout.chunkTokens) - t.dropped)
      bad(`${where} ${w}: ${t.chunks} chunks held for ${t.encoded} encoded positions, ${t.dropped} dropped`);
  }
  // Both tensors receive every position the bulk takes; in overlay mode that is every position.
  if (st.k.length !== st.v.length) bad(`${where}: K stream holds ${st.k.length} positions, V ${st.v.length}`);
  if (plan.windowMode === 'overlay' && st.k.length !== st.n) bad(`${where}: overlay bulk holds ${st.k.length} positions of ${st.n}`);
  // Only a sliding-window layer drops anything, K and V alike, and never past what it holds.
  if (!isCount(st.evicted) || st.evicted > st.n) bad(`${where} has first held position ${st.evicted} beyond its length ${st.n}`);
  if (st.k.dropped !== st.v.dropped) bad(`${where}: K dropped ${st.k.dropped} chunks, V ${st.v.dropped}`);
  if (plan.slidingWindow === 0 && (st.k.dropped > 0 || st.evicted > 0)) bad(`${where} dropped positions but its policy keeps every position`);
}

/** checkLayerMeta, then every array the size the layout and counts give. */
export function checkLayerState(plan: LayerPlan, layout: LayerLayout, capacity: number, s: LayerState): void {
  checkLayerMeta(plan, layout, capacity, s.meta);
  const where = `layer ${plan.layer}`;
  const a = s.arrays;
  if (
    (a.anchors === null) !== (layout.anchors === null) ||
    (a.staging.k === null) !== (layout.staging.k === null) ||
    (a.staging.v === null) !== (layout.staging.v === null)
  )
    bad(`${where}: regions do not match its plan`);
  const want = regionList(layout).map(shapeBytes);
  regionList(a).forEach((x, i) => {
    if (x.length !== want[i]) bad(`${where}: region ${i} is ${x.length} bytes, the plan gives ${want[i]}`);
  });
  for (const w of ['k', 'v'] as const) {
    const c = a.chunks[w];
    if (c.length !== s.meta[w].chunks) bad(`${where} ${w}: ${c.length} chunks given, the counts say ${s.meta[w].chunks}`);
    if (c.some((x) => x.length !== layout.chunkBytes[w])) bad(`${where} ${w}: a chunk is not ${layout.chunkBytes[w]} bytes`);
  }
}
