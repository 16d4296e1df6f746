// KvCache: the live, compressed KV cache an engine appends to and attends over, layer by layer.
import { planLayers, type CachePolicy, type LayerPlan } from './policy.js';
import { LayerCache } from './layer.js';
import { layerBytes, regionCounts, type RegionBytes } from './accounting.js';
import { sharedArena, type Arena } from '../kernels/runtime/arena.js';
import { placeIn, pledge, spaces } from '../kernels/runtime/spaces.js';
import { attend, type AttendReport, type QPrecision, type VPrecision } from '../kernels/attention/attend.js';
import type { MixedView } from '../kernels/attention/view.js';
import { Rotation } from '../numeric/hadamard.js';
import { ArgumentError, EvictedError, ShapeError, assertFinite } from '../errors.js';
import { saveCache, loadCache } from './file.js';
import { DEFAULT_CHUNK_TOKENS } from './stream.js';
import { headPacking, type HeadPacking } from './head-packing.js';

export interface KvCacheOptions {
  layers: number;
  kvHeads: number;
  headDim: number;
  /** Most positions the cache will hold (set up front; storage grows in chunks up to it). */
  capacity: number;
  policy: CachePolicy;
  /** Bulk chunk size in tokens (a multiple of 32). */
  chunkTokens?: number;
  /** One arena for every layer; by default each layer is placed in a memory space with room for it at capacity. */
  arena?: Arena;
  /** Per layer, the arena it lives in (a fork shares its parent's chunks, so it lives where they do). */
  arenas?: readonly Arena[];
  /** How attention meets the packed bytes unless a call says otherwise (default exact float32 on both sides). */
  attention?: AttentionPrecision;
}

/** The accuracy choices of the fast attention path (see kernels/attention/attend.ts QPrecision / VPrecision). */
export interface AttentionPrecision {
  q?: QPrecision;
  v?: VPrecision;
}

export interface AttendOptions {
  /** Absolute position of each query (causal prefill); default: one query at the last position. */
  positions?: ArrayLike<number>;
  scale?: number;
  slidingWindow?: number;
  softcap?: number;
  /** How q meets packed K: 'f32' (default, exact dots) or llama.cpp-style 'int8' / 'int16' (see kernels/attention/attend.ts). */
  qPrecision?: QPrecision;
  /** How softmax weights meet packed V: 'f32' (default) or 'int16' (see kernels/attention/attend.ts). */
  vPrecision?: VPrecision;
}

export interface CacheBytes extends RegionBytes {
  /** Bytes actually allocated in wasm memory (chunks, fixed exact regions and `transient`). */
  allocated: number;
  /**
   * Exact rows kept beside the ring for the last batch only (its queries before the last W + 31 read rows its
   * own appends overwrote): up to batch - 1 rows per layer, freed by the next append, rewind or freeze.
   */
  transient: number;
}

function positiveInt(name: string, x: unknown): number {
  if (typeof x !== 'number' || !Number.isInteger(x) || x < 1) throw new ArgumentError(`KvCache: ${name} must be a positive integer, got ${JSON.stringify(x)}`);
  return x;
}

export class KvCache {
  readonly layers: number;
  readonly kvHeads: number;
  readonly headDim: number;
  readonly capacity: number;
  readonly chunkTokens: number;
  readonly policy: CachePolicy;
  /** Attention precision used when a call names none. */
  readonly attention: Readonly<AttentionPrecision>;
  readonly plans: readonly LayerPlan[];
  /** How each layer stores its heads (several heads per stored head when blocks are longer than a head). */
  readonly packing: readonly HeadPacking[];
  private readonly arenas: readonly Arena[];
  /** Releases of each layer's pledge in its memory space (spaces.ts). */
  private readonly pledges: (() => void)[] = [];
  private layerCaches: LayerCache[];
  private readonly rotations: { k: Rotation | null; v: Rotation | null }[];
  private disposed = false;

  constructor(opts: KvCacheOptions) {
    this.layers = positiveInt('layers', opts.layers);
    this.kvHeads = positiveInt('kvHeads', opts.kvHeads);
    this.headDim = positiveInt('headDim', opts.headDim);
    this.capacity = positiveInt('capacity', opts.capacity);
    this.chunkTokens = opts.chunkTokens ?? DEFAULT_CHUNK_TOKENS;
    if (!Number.isInteger(this.chunkTokens) || this.chunkTokens < 32 || this.chunkTokens % 32 !== 0) {
      throw new ArgumentError(`KvCache: chunkTokens must be a positive multiple of 32, got ${this.chunkTokens}`);
    }
    // Policies are plain JSON: keep a deep copy so later edits by the caller cannot change this cache.
    this.policy = JSON.parse(JSON.stringify(opts.policy)) as CachePolicy;
    this.plans = planLayers(this.policy, this.layers, this.capacity);
    this.attention = { ...opts.attention };
    this.packing = this.plans.map((p) => headPacking(p, this.kvHeads, this.headDim));
    this.layerCaches = [];
    this.arenas = this.place(opts);
    this.layerCaches = this.plans.map((p, i) => new LayerCache(this.arenas[i]!, p, this.packing[i]!.heads, this.packing[i]!.headDim, this.chunkTokens));
    this.rotations = this.plans.map((p) => ({
      k: p.rotation?.k ? new Rotation(this.headDim, p.rotation.seed * 2654435761 + p.layer * 2 + 1) : null,
      v: p.rotation?.v ? new Rotation(this.headDim, p.rotation.seed * 2654435761 + p.layer * 2 + 2) : null,
    }));
  }

  /** Bytes layer i may allocate at capacity: its regions plus a bulk chunk of rounding per tensor. */
  private projectedBytes(i: number): number {
    const plan = this.plans[i]!;
    const full = layerBytes(plan, regionCounts(plan, this.capacity), this.kvHeads, this.headDim).total;
    const chunk = layerBytes(plan, regionCounts(plan, Math.min(this.capacity, this.chunkTokens + plan.window + plan.sinks)), this.kvHeads, this.headDim).total;
    return full + chunk;
  }

  /**
   * Where each layer lives: the arenas given, else per layer the first memory space with room for it at
   * capacity (spaces.ts), so a cache can pass wasm32's 4 GiB as long as each layer fits one space.
   */
  private place(opts: KvCacheOptions): Arena[] {
    if (opts.arenas) {
      if (opts.arenas.length !== this.layers) throw new ArgumentError(`KvCache: ${opts.arenas.length} arenas for ${this.layers} layers`);
      opts.arenas.forEach((a, i) => {
        const k = spaces().find((s) => s.arena === a);
        if (k) this.pledges.push(pledge(k, this.projectedBytes(i), () => this.layerCaches[i]?.allocatedBytes() ?? 0));
      });
      return [...opts.arenas];
    }
    const fixed = opts.arena ?? (spaces().length === 0 ? sharedArena() : null);
    const arenas = fixed ? this.plans.map(() => fixed) : [];
    try {
      for (let i = 0; i < this.layers; i++) {
        const bytes = this.projectedBytes(i);
        const k = fixed ? spaces().find((s) => s.arena === fixed) : placeIn(`KvCache layer ${i}`, bytes);
        if (!fixed) arenas.push(k!.arena);
        // Each layer's growth to its capacity counts against its space at once, so the next layers placed
        // (and later caches) leave it room.
        if (k) this.pledges.push(pledge(k, bytes, () => this.layerCaches[i]?.allocatedBytes() ?? 0));
      }
    } catch (e) {
      for (const release of this.pledges) release();
      throw e;
    }
    return arenas;
  }

  /** Positions every layer holds (layers are appended one after another during a forward pass). */
  get length(): number {
    return Math.min(...this.layerCaches.map((l) => l.n));
  }

  layerLength(layer: number): number {
    return this.layer(layer).n;
  }

  private layer(i: number): LayerCache {
    if (this.disposed) throw new ArgumentError('KvCache: used after dispose()');
    if (!Number.isInteger(i) || i < 0 || i >= this.layers) throw new ArgumentError(`KvCache: layer ${i} outside [0, ${this.layers})`);
    return this.layerCaches[i]!;
  }

  /** A layer to append to, attend over or rewind: never one of a frozen cache. */
  private live(i: number): LayerCache {
    const l = this.layer(i);
    if (this.frozen) throw new ArgumentError('KvCache: frozen (a prefix-cache entry): fork() it to append, attend or rewind');
    return l;
  }

  /** True after freeze(). */
  get frozen(): boolean {
    return this.layerCaches[0]!.frozen;
  }

  /**
   * Makes this cache a frozen snapshot (a prefix-cache entry): each exact region (sinks, window ring,
   * anchors, channel-format staging) keeps only its rows that hold data, compacted, so the snapshot
   * allocates what it holds. It can still be forked (the fork is a live cache), saved, measured and
   * disposed; append, attend and rewind throw.
   */
  freeze(): void {
    for (const l of this.layerCaches) l.freeze();
  }

  /**
   * Appends rows k, v [tokens, kvHeads*headDim] (keys already position-encoded) to one layer. A
   * sliding-window layer then frees the chunks no query of this batch (or a later one) can read.
   */
  append(layer: number, k: Float32Array, v: Float32Array): void {
    const l = this.live(layer);
    const row = this.kvHeads * this.headDim;
    if (k.length !== v.length || k.length % row !== 0 || k.length === 0) {
      throw new ShapeError(`append: k (${k.length}) and v (${v.length}) must be equal, non-empty multiples of kvHeads*headDim = ${row}`);
    }
    const tokens = k.length / row;
    if (l.n + tokens > this.capacity) throw new ArgumentError(`append: ${tokens} tokens would exceed capacity ${this.capacity} (layer ${layer} holds ${l.n})`);
    assertFinite(`append(layer ${layer}) k`, k);
    assertFinite(`append(layer ${layer}) v`, v);
    const rot = this.rotations[layer]!;
    const kr = rot.k ? this.rotateRows(rot.k, k) : k;
    const vr = rot.v ? this.rotateRows(rot.v, v) : v;
    const batchStart = l.n;
    l.beginBatch(tokens);
    for (let t = 0; t < tokens; t++) l.append(kr, t * row, vr, t * row);
    l.evict(batchStart, this.chunkTokens);
  }

  private rotateRows(r: Rotation, x: Float32Array): Float32Array {
    const y = x.slice();
    for (let o = 0; o < y.length; o += this.headDim) r.apply(y, o);
    return y;
  }

  /** Attention of q [queries, heads, headDim] over the layer's cache into out (same shape); says what ran. */
  attend(layer: number, q: Float32Array, out: Float32Array, opts: AttendOptions = {}): AttendReport {
    const l = this.live(layer);
    const rot = this.rotations[layer]!;
    const qr = rot.k ? this.rotateRows(rot.k, q) : q;
    const nq = opts.positions?.length ?? 1;
    if (q.length % (nq * this.headDim) !== 0) throw new ShapeError(`attend: q length ${q.length} is not ${nq} queries x heads x ${this.headDim}`);
    const view = l.view();
    checkReach(layer, l.plan.slidingWindow, view.start ?? 0, view.length, opts);
    const heads = q.length / (nq * this.headDim);
    const pack = this.packing[layer]!;
    const packed = pack.group > 1 ? packQueries(qr, heads, this.kvHeads, this.headDim, pack.group) : qr;
    const packedOut = pack.group > 1 ? new Float32Array(packed.length) : out;
    const scale = opts.scale ?? 1 / Math.sqrt(this.headDim);
    const report = attend({
      view,
      q: packed,
      heads,
      out: packedOut,
      positions: opts.positions,
      scale,
      slidingWindow: opts.slidingWindow,
      softcap: opts.softcap,
      qPrecision: opts.qPrecision ?? this.attention.q,
      vPrecision: opts.vPrecision ?? this.attention.v,
    });
    if (pack.group > 1) unpackOutputs(packedOut, out, heads, this.kvHeads, this.headDim, pack.group);
    if (rot.v) for (let o = 0; o < out.length; o += this.headDim) rot.v.invert(out, o);
    return report;
  }

  /** The mixed view of one layer (rotated coordinates when rotation is on). */
  view(layer: number): MixedView {
    return this.live(layer).view();
  }

  /** Marks the end of the prompt: decode anchors cover the next `anchors.count` positions. */
  beginDecode(): void {
    this.live(0);
    const n = this.length;
    for (const l of this.layerCaches) l.prompt = n;
  }

  /** Removes the last n positions (mlx-lm's trim contract); returns how many were removed. See rewind(). */
  trim(n: number): number {
    if (!Number.isInteger(n) || n < 0) throw new ArgumentError(`trim: n must be a non-negative integer, got ${n}`);
    const len = this.length;
    const k = Math.min(n, len);
    this.rewind(len - k);
    return k;
  }

  /**
   * True when the cache holds positions [0, r) and, in every layer, the exact rows every query at p >= r
   * reads from positions < r (exact-from.ts), so rewind(r) then appending the same rows gives bit-identical
   * results. A ring holds the rows of the queries at n - 1 and n: a cache of n positions (also a frozen
   * one) is resumable at n and n - 1, at more only where the ring has slack (per-channel formats).
   */
  resumableAt(r: number): boolean {
    if (this.disposed) throw new ArgumentError('KvCache: used after dispose()');
    if (!Number.isInteger(r) || r < 0 || r > this.length) return false;
    return this.layerCaches.every((l) => l.resumableAt(r));
  }

  /** False when a sliding-window layer already dropped positions that the query at p would read. */
  canRewind(p: number): boolean {
    return this.layerCaches.every((l) => l.canRewind(p));
  }

  /** Keeps positions < p (regenerate, speculative decoding); EvictedError (cache unchanged) when !canRewind(p). */
  rewind(p: number): void {
    if (!Number.isInteger(p) || p < 0) throw new ArgumentError(`rewind: position must be a non-negative integer, got ${p}`);
    this.live(0);
    // Check every layer first, so a refused rewind leaves all of them as they were (the stuck layer's
    // rewind throws the EvictedError that names it).
    const stuck = this.layerCaches.find((l) => !l.canRewind(p));
    if (stuck) stuck.rewind(p);
    for (const l of this.layerCaches) l.rewind(p);
  }

  /** Empties the cache (always possible, also after eviction). */
  clear(): void {
    this.rewind(0);
  }

  /** A second, live cache sharing this one's bulk chunks (copy-on-write); exact regions are copied (also from a frozen cache). */
  fork(): KvCache {
    const c = new KvCache({
      layers: this.layers,
      kvHeads: this.kvHeads,
      headDim: this.headDim,
      capacity: this.capacity,
      policy: this.policy,
      chunkTokens: this.chunkTokens,
      arenas: this.arenas,
      attention: this.attention,
    });
    c.layerCaches.forEach((l, i) => l.adoptFrom(this.layerCaches[i]!, this.chunkTokens));
    return c;
  }

  /** Bytes of data held by region (equals kvBytes() for the same configuration) plus bytes allocated. */
  nbytes(): CacheBytes {
    const per = this.layerCaches.map((l) => l.regionBytes());
    const sum = (k: keyof RegionBytes) => per.reduce((s, r) => s + r[k], 0);
    return {
      sinks: sum('sinks'),
      anchors: sum('anchors'),
      bulk: sum('bulk'),
      window: sum('window'),
      staging: sum('staging'),
      total: sum('total'),
      allocated: this.layerCaches.reduce((s, l) => s + l.allocatedBytes(), 0),
      transient: this.layerCaches.reduce((s, l) => s + l.transientBytes(), 0),
    };
  }

  /** Encoder invocations per layer and tensor (tokens for token axis, groups for channel axis). */
  encodeCalls(layer: number): { k: number; v: number } {
    const l = this.layer(layer);
    return { k: l.bulk.k.stream.encodeCalls, v: l.bulk.v.stream.encodeCalls };
  }

  /** Layer internals for save/restore and tests. */
  layerCache(layer: number): LayerCache {
    return this.layer(layer);
  }

  save(path: string): void {
    saveCache(this, path);
  }

  static restore(path: string, arena?: Arena): KvCache {
    return loadCache(path, (o) => new KvCache({ ...o, arena }));
  }

  /** First position each layer still holds (> 0 only on sliding-window layers that dropped chunks). */
  firstHeld(layer: number): number {
    return this.layer(layer).evicted;
  }

  /** Frees this cache's wasm memory (shared chunks stay alive while a fork uses them). */
  dispose(): void {
    if (this.disposed) return;
    for (const l of this.layerCaches) l.free();
    for (const release of this.pledges) release();
    this.disposed = true;
  }
}

/**
 * q [queries, heads, headDim] -> [queries, heads, group*headDim]: each query in its KV head's slot of the
 * packed head, zeros elsewhere, so a packed dot equals the head's own dot. Query heads keep their order:
 * head h reads KV head h/G, which sits in packed head h/(G*group), slot (h/G) % group.
 */
function packQueries(q: Float32Array, heads: number, kvHeads: number, headDim: number, group: number): Float32Array {
  const G = heads / kvHeads;
  const rows = q.length / headDim;
  const out = new Float32Array(rows * group * headDim);
  for (let r = 0; r < rows; r++) {
    const slot = Math.floor((r % heads) / G) % group;
    out.set(q.subarray(r * headDim, (r + 1) * headDim), (r * group + slot) * headDim);
  }
  return out;
}

/** The inverse of packQueries on attention outputs: each head's own slot. */
function unpackOutputs(packed: Float32Array, out: Float32Array, heads: number, kvHeads: number, headDim: number, group: number): void {
  const G = heads / kvHeads;
  const rows = out.length / headDim;
  for (let r = 0; r < rows; r++) {
    const slot = Math.floor((r % heads) / G) % group;
    out.set(packed.subarray((r * group + slot) * headDim, (r * group + slot + 1) * headDim), r * headDim);
  }
}

/**
 * Attention on a sliding-window layer must use a window no longer than the one the layer keeps, and no
 * query may reach before the first position held: reading there would silently miss dropped positions.
 */
function checkReach(layer: number, kept: number, start: number, length: number, opts: AttendOptions): void {
  const W = opts.slidingWindow;
  if (kept > 0 && !(W !== undefined && W > 0 && W <= kept)) {
    throw new ArgumentError(`attend: layer ${layer} keeps only the last ${kept} positions; attend with slidingWindow in [1, ${kept}], got ${W}`);
  }
  if (start === 0) return;
  const ps = opts.positions ?? [length - 1];
  for (let i = 0; i < ps.length; i++) {
    const lo = W ? Math.max(0, ps[i]! - W + 1) : 0;
    if (lo < start) throw new EvictedError(`attend: layer ${layer}, query at ${ps[i]} reads from ${lo}, but positions before ${start} were dropped`);
  }
}
