// LayerCache: one layer's regions (sinks, anchors, window ring, staging, bulk streams) and its mixed view.
import type { LayerPlan } from './policy.js';
import { HeldRows, RowStore } from './rows.js';
import { BulkTensor, bulkPieces, mergePieces, type Piece } from './bulk-tensor.js';
import type { Chunk } from './stream.js';
import type { Arena } from '../kernels/runtime/arena.js';
import type { MixedView, Segment } from '../kernels/attention/view.js';
import { blockScratch } from '../formats/format.js';
import type { RegionBytes } from './accounting.js';
import { firstPositionOf, keptStreamStart, streamIndexOf } from './swa.js';
import { ArgumentError, CacheStateError, EvictedError } from '../errors.js';
import { exactFrom, positionOfRingIndex, ringIndexOf } from './exact-from.js';
import {
  checkLayerState,
  layerLayout,
  regionList,
  regionsOf,
  type KV,
  type LayerLayout,
  type LayerMeta,
  type LayerState,
  type Regions,
} from './layer-state.js';

/**
 * Negative control for the invariance suite (test/invariance): when on, every query of a view reads with the
 * bound of the last position held, the old batch-dependent rule (a batch [s, e) read positions before
 * e - W packed). Never set outside tests.
 */
export const batchDependentWindowForTests = { on: false };

/** Exact rows of the positions [lo, lo + rows) kept while one batch is appended and attended (see beginBatch). */
interface Spill {
  readonly k: RowStore;
  readonly v: RowStore;
  readonly lo: number;
}

type Place = 'sinks' | 'anchors' | 'window' | 'bulk';

const overlap = (a0: number, a1: number, b0: number, b1: number) => Math.max(0, Math.min(a1, b1) - Math.max(a0, b0));

/**
 * One layer of a KvCache. Positions are absolute. The query at p reads the sinks, the anchors and
 * [exactFrom(p), p] exact and everything else packed (exact-from.ts), whichever way the positions
 * arrived: the ring keeps the rows the latest queries read, and a batch keeps beside it the rows its
 * own appends overwrite that its first queries still read (the spill). Sliding-window layers (plan.slidingWindow > 0) free bulk chunks their queries can no longer
 * reach; sinks and anchors keep their few fixed rows (exact while still inside the window, then simply
 * outside the view: freeing and re-allocating them on clear, fork and restore is not worth their size).
 */
export class LayerCache {
  readonly plan: LayerPlan;
  readonly heads: number;
  readonly headDim: number;
  /** Sizes of the regions and chunks (what a LayerState of this layer must hold). */
  readonly layout: LayerLayout;
  // The scalar state, private: LayerMeta lists it for state(), setMeta() is the one place it is set from one.
  /** Positions held. */
  private n = 0;
  /** Prompt length once decoding began (anchors start here); undefined before. */
  private prompt: number | undefined;
  /** Lowest position whose ring copy is valid (every non-sink, non-anchor position in [ringLo, n) is in the ring). */
  private ringLo = 0;
  /** Residual mode: non-exact positions < streamEnd have left the window for the bulk. */
  private streamEnd = 0;
  /** First position held: sliding-window layers dropped every position before it (0 elsewhere). */
  private evicted = 0;
  private readonly sinks: KV<RowStore>;
  private readonly anchors: KV<RowStore> | null;
  private readonly ring: KV<RowStore>;
  private readonly bulk: KV<BulkTensor>;
  /** Transient: exact rows of the current batch's early queries that its appends pushed out of the ring. */
  private spill: Spill | null = null;
  /** Set by freeze(): the rows still held, per store of stores() (the stores themselves are freed). */
  private held: HeldRows[] | null = null;
  private readonly arena: Arena;
  private readonly tmp: Float32Array; // [heads*headDim] one moved row
  private readonly scratch = blockScratch();

  constructor(arena: Arena, plan: LayerPlan, heads: number, headDim: number, chunkTokens: number) {
    this.arena = arena;
    this.plan = plan;
    this.heads = heads;
    this.headDim = headDim;
    this.layout = layerLayout(plan, heads, headDim, chunkTokens);
    const rows = (f: LayerPlan['exact'], r: number) => ({ k: new RowStore(arena, f.k, heads, headDim, r), v: new RowStore(arena, f.v, heads, headDim, r) });
    this.sinks = rows(plan.exact, this.layout.sinks.k.rows);
    this.anchors = plan.anchors ? rows(plan.anchors, plan.anchors.count) : null;
    this.ring = rows(plan.exact, this.layout.ring.k.rows);
    this.bulk = { k: new BulkTensor(arena, plan, 'k', heads, headDim, chunkTokens), v: new BulkTensor(arena, plan, 'v', heads, headDim, chunkTokens) };
    this.tmp = new Float32Array(2 * heads * headDim);
  }

  /**
   * A layer rebuilt from a state (mlx-lm's from_state): checked first (CacheStateError naming the layer),
   * then its regions copied in, and its chunks: a chunk given as a view a state() of this arena handed out is
   * shared (copy-on-write, as fork() does), any other is copied. The state's arrays are only read.
   */
  static fromState(arena: Arena, plan: LayerPlan, heads: number, headDim: number, chunkTokens: number, capacity: number, state: LayerState): LayerCache {
    const l = new LayerCache(arena, plan, heads, headDim, chunkTokens);
    try {
      checkLayerState(plan, l.layout, capacity, state);
      const src = regionList(state.arrays);
      regionList(l.regions()).forEach((s, i) => s.raw().set(src[i]!));
      for (const w of ['k', 'v'] as const) l.bulk[w].load(state.meta[w], state.arrays.chunks[w]);
      l.setMeta(state.meta);
    } catch (e) {
      l.free();
      throw e;
    }
    return l;
  }

  /** Positions held. */
  get length(): number {
    return this.n;
  }

  /** Where decoding began (the prompt length: anchors start here), or undefined. */
  get decodeStart(): number | undefined {
    return this.prompt;
  }

  /** Marks the end of the prompt at p (anchors cover the next positions), or forgets it (undefined). */
  setDecodeStart(p: number | undefined): void {
    this.prompt = p;
  }

  /** First position held (> 0 only on sliding-window layers that dropped chunks). */
  get firstHeld(): number {
    return this.evicted;
  }

  /** Encoder invocations of each tensor's stream. */
  encodeCalls(): { k: number; v: number } {
    return { k: this.bulk.k.stream.encodeCalls, v: this.bulk.v.stream.encodeCalls };
  }

  /** The bulk chunks held by both tensors (identity shows what forks share), and their size. */
  heldChunks(): { chunk: Readonly<Chunk>; bytes: number }[] {
    return [this.bulk.k.stream, this.bulk.v.stream].flatMap((s) => s.held.map((chunk) => ({ chunk, bytes: s.chunkBytes })));
  }

  /** Counts and positions (the scalar half of state()). */
  meta(): LayerMeta {
    return {
      n: this.n,
      prompt: this.prompt ?? null,
      ringLo: this.ringLo,
      streamEnd: this.streamEnd,
      evicted: this.evicted,
      k: this.bulk.k.meta(),
      v: this.bulk.v.meta(),
    };
  }

  /** Sets the scalar state from checked counts (the streams load theirs with their chunks). */
  private setMeta(m: LayerMeta): void {
    this.n = m.n;
    this.prompt = m.prompt ?? undefined;
    this.ringLo = m.ringLo;
    this.streamEnd = m.streamEnd;
    this.evicted = m.evicted;
  }

  /**
   * The layer as data (mlx-lm's state + meta_state): counts, each region's raw bytes (a frozen layer's held
   * rows in their slots, zero elsewhere) and the chunks held. Arrays of a live layer are views of its
   * memory: use them before the layer changes. The spill (one batch's transient rows) is not part of it.
   */
  state(): LayerState {
    const regions = regionsOf(this.layout, this.storeImages());
    const chunks = (w: 'k' | 'v') => this.bulk[w].stream.heldViews();
    return { meta: this.meta(), arrays: { ...regions, chunks: { k: chunks('k'), v: chunks('v') } } };
  }

  /** Anchor positions [a0, a1) (empty before decoding began). */
  anchorRange(): [number, number] {
    if (this.prompt === undefined || !this.plan.anchors) return [0, 0];
    const a0 = Math.max(this.prompt, this.plan.sinks);
    return [a0, Math.max(a0, this.prompt + this.plan.anchors.count)];
  }

  private exactPlace(p: number, a0: number, a1: number): Place | null {
    if (p < this.plan.sinks) return 'sinks';
    if (p >= a0 && p < a1) return 'anchors';
    return null;
  }

  /** Bulk stream index of position p (overlay: p; residual: p minus the exact positions before it). */
  streamIndex(p: number): number {
    const [a0, a1] = this.anchorRange();
    return streamIndexOf(this.plan, p, a0, a1);
  }

  /**
   * After an append whose first position was batchStart: drops the bulk chunks wholly before the first
   * position that batch's first query reads (so rewinding to batchStart stays possible).
   */
  evict(batchStart: number, chunkTokens: number): void {
    if (this.plan.slidingWindow === 0) return;
    const [a0, a1] = this.anchorRange();
    const start = keptStreamStart(this.plan, batchStart, this.bulk.k.length, chunkTokens, a0, a1);
    if (start <= this.bulk.k.stream.start) return;
    // K and V streams have equal lengths and a complete chunk is encoded in both (chunks hold whole groups).
    this.bulk.k.stream.dropBefore(start);
    this.bulk.v.stream.dropBefore(start);
    this.evicted = firstPositionOf(this.plan, Math.min(this.bulk.k.stream.start, this.bulk.v.stream.start), a0, a1);
  }

  /** Exact-from bound of the query at p under this layer's plan and anchors (exact-from.ts). */
  exactFrom(p: number): number {
    const [a0, a1] = this.anchorRange();
    return exactFrom(this.plan, p, a0, a1);
  }

  /** Lowest position whose exact row is readable (ring, or the spill while a batch holds one); n when none. */
  exactLo(): number {
    const R = this.ring.k.rows;
    if (R === 0) return this.n;
    if (this.spill) return Math.min(this.spill.lo, this.ringLo);
    return Math.min(this.n, this.ringLo);
  }

  /** Ring slot of position p (no sink or anchor): its ring index (positions that enter the ring, counted) mod the slots. */
  private slot(p: number): number {
    const [a0, a1] = this.anchorRange();
    return ringIndexOf(this.plan, p, a0, a1) % this.ring.k.rows;
  }

  /** First position whose ring copy survives the write of position p. */
  private ringLoAfter(p: number): number {
    const [a0, a1] = this.anchorRange();
    const i = ringIndexOf(this.plan, p, a0, a1) + 1 - this.ring.k.rows;
    return i <= 0 ? 0 : positionOfRingIndex(this.plan, i, a0, a1);
  }

  /** First position past the packed ones: overlay holds every position in the bulk, residual those before streamEnd. */
  private packedEnd(): number {
    return this.plan.windowMode === 'overlay' ? this.n : this.streamEnd;
  }

  /**
   * Before appending `tokens` positions: a spill for the exact rows of [exactFrom(n), ...) that the appends
   * will overwrite in the ring, so every query of the batch reads what it would alone. Freed by the next
   * batch, a rewind, a freeze or free().
   */
  beginBatch(tokens: number): void {
    this.dropSpill();
    const R = this.ring.k.rows;
    if (R === 0 || this.frozen) return;
    // Sink positions never enter the ring.
    const lo = Math.max(this.exactLo(), Math.min(this.n, this.exactFrom(this.n)), this.plan.sinks);
    const count = this.n + tokens - R - lo;
    if (count <= 0) return;
    const store = (f: RowStore) => new RowStore(this.arena, f.format, this.heads, this.headDim, count);
    const k = store(this.ring.k);
    let v: RowStore;
    try {
      v = store(this.ring.v);
    } catch (e) {
      k.free();
      throw e;
    }
    this.spill = { k, v, lo };
  }

  private dropSpill(): void {
    if (!this.spill) return;
    this.spill.k.free();
    this.spill.v.free();
    this.spill = null;
  }

  /** Bytes of the spill (allocated for one batch, not part of the steady state). */
  transientBytes(): number {
    return this.spill ? this.spill.k.bytes + this.spill.v.bytes : 0;
  }

  /**
   * Before position p is written to the ring: copies the slot's occupant (ring index R back) into the spill
   * if the batch's queries still read it.
   */
  private keepForBatch(p: number): void {
    const s = this.spill;
    if (!s) return;
    const R = this.ring.k.rows;
    const [a0, a1] = this.anchorRange();
    const i = ringIndexOf(this.plan, p, a0, a1) - R;
    if (i < 0) return;
    const q = positionOfRingIndex(this.plan, i, a0, a1);
    if (q < s.lo || q - s.lo >= s.k.rows) return;
    const mem = this.arena.u8();
    for (const [src, dst] of [
      [this.ring.k, s.k],
      [this.ring.v, s.v],
    ] as const) {
      for (let h = 0; h < this.heads; h++) {
        const from = src.offset + (h * R + (i % R)) * src.rowBytes;
        mem.copyWithin(dst.offset + (h * dst.rows + q - s.lo) * dst.rowBytes, from, from + src.rowBytes);
      }
    }
  }

  /**
   * True when the layer holds [0, r) and the exact rows every query at p >= r reads below r, so rewind(r)
   * then appending the same rows gives the same bits as never having gone past r.
   */
  resumableAt(r: number): boolean {
    if (!Number.isInteger(r) || r < 0 || r > this.n || !this.canRewind(r)) return false;
    if (r === 0) return true;
    const [a0, a1] = this.prompt !== undefined && r >= this.prompt ? this.anchorRange() : [0, 0];
    // Positions below the sinks are the sink rows (always held), never the ring's.
    const need = Math.min(r, Math.max(this.plan.sinks, exactFrom(this.plan, r, a0, a1)));
    const R = this.ring.k.rows;
    const held = R === 0 ? r : this.ringLo;
    if (need < r && held > need) return false;
    return this.restagesExactly(r);
  }

  /** True when rewinding to r re-stages no channel group from decoded bytes (BulkTensor.truncate's lossy case). */
  private restagesExactly(r: number): boolean {
    let i: number;
    if (this.plan.windowMode === 'overlay') i = r;
    else if (r < this.streamEnd) i = this.streamIndex(r);
    else return true;
    return [this.bulk.k, this.bulk.v].every((b) => {
      if (!b.staging || i >= b.length || i >= b.stream.encoded) return true;
      const B = b.staging.rows;
      return b.pending === 0 && Math.floor(i / B) * B === b.stream.encoded - B;
    });
  }

  /**
   * Positions of the resume rows at r: [max(sinks, exactFrom(r)), r), the rows the query at r and later read
   * exact below r. Recomputing positions cannot regenerate them (a row's K/V depend on exact rows further back
   * at every lower layer), so a store that resumes at r keeps them beside the packed chunks.
   */
  resumeRange(r: number): [number, number] {
    return [Math.min(r, Math.max(this.plan.sinks, this.exactFrom(r))), r];
  }

  /** The resume rows at r (resumeRange), per tensor [heads][rows][rowBytes]; EvictedError when no longer held. */
  resumeRows(r: number): KV<Uint8Array> {
    const [lo, hi] = this.resumeRange(r);
    const layer = this.plan.layer;
    if (lo < hi && this.exactLo() > lo)
      throw new EvictedError(
        `layer ${layer} no longer holds the exact rows ${lo}..${hi - 1} (it holds from ${this.exactLo()}); export right after the batch that reached ${r}`,
      );
    const [a0, a1] = this.anchorRange();
    if (lo < hi && a0 < hi && a1 > lo) throw new ArgumentError(`layer ${layer} holds anchors inside ${lo}..${hi - 1} (the cache began decoding)`);
    return this.exactRows(lo, hi);
  }

  /** Byte sizes resumeRows(r) has in this layer (K, V). */
  resumeBytes(r: number): [number, number] {
    const [lo, hi] = this.resumeRange(r);
    return [this.ring.k, this.ring.v].map((s) => s.heads * (hi - lo) * s.rowBytes) as [number, number];
  }

  /** Writes resumeRows(r) bytes (sizes resumeBytes(r)) of a layer holding r positions into its ring, so it is resumable at r. */
  setResumeRows(r: number, rows: KV<Uint8Array>): void {
    const [lo, hi] = this.resumeRange(r);
    const [kb, vb] = this.resumeBytes(r);
    if (this.n !== r || this.frozen)
      throw new ArgumentError(`layer ${this.plan.layer} holds ${this.n} positions${this.frozen ? ' (frozen)' : ''}, the rows are for position ${r}`);
    if (rows.k.length !== kb || rows.v.length !== vb)
      throw new CacheStateError(`layer ${this.plan.layer}: resume rows of ${rows.k.length}/${rows.v.length} bytes, it needs ${kb}/${vb}`);
    if (lo < hi) this.setExactRows(lo, hi, rows.k, rows.v);
  }

  /** Raw exact rows of positions [lo, hi) (ring or spill; no sink or anchor among them), per tensor [heads][hi - lo][rowBytes]. */
  private exactRows(lo: number, hi: number): { k: Uint8Array; v: Uint8Array } {
    const out = { k: new Uint8Array(this.heads * (hi - lo) * this.ring.k.rowBytes), v: new Uint8Array(this.heads * (hi - lo) * this.ring.v.rowBytes) };
    const mem = this.arena.u8();
    for (let p = lo; p < hi; ) {
      const seg = this.exactPiece(p, hi, mem);
      const m = seg.count;
      for (const w of ['k', 'v'] as const) {
        const run = seg[w];
        const rb = this.ring[w].rowBytes;
        for (let h = 0; h < this.heads; h++) {
          const from = run.offset + h * run.headStride + run.first * rb;
          out[w].set(mem.subarray(from, from + m * rb), (h * (hi - lo) + p - lo) * rb);
        }
      }
      p += m;
    }
    return out;
  }

  /** Writes exactRows() bytes of positions [lo, hi) into their ring slots; the ring then holds [lo, n). */
  private setExactRows(lo: number, hi: number, k: Uint8Array, v: Uint8Array): void {
    const R = this.ring.k.rows;
    const mem = this.arena.u8();
    for (const [w, src] of [
      ['k', k],
      ['v', v],
    ] as const) {
      const st = this.ring[w];
      for (let h = 0; h < this.heads; h++) {
        for (let p = lo; p < hi; p++) {
          const from = (h * (hi - lo) + p - lo) * st.rowBytes;
          mem.set(src.subarray(from, from + st.rowBytes), st.offset + (h * R + this.slot(p)) * st.rowBytes);
        }
      }
    }
    this.ringLo = Math.min(this.ringLo, lo);
  }

  /** True when rewinding to p leaves every position the next query (at p) reads. */
  canRewind(p: number): boolean {
    if (p >= this.n || p === 0 || this.evicted === 0) return true;
    return this.evicted <= Math.max(0, p - this.plan.slidingWindow + 1);
  }

  /** Appends one position: k and v rows [heads*headDim] at kOff / vOff. */
  append(k: Float32Array, kOff: number, v: Float32Array, vOff: number): void {
    const p = this.n;
    const W = this.plan.window;
    const [a0, a1] = this.anchorRange();
    const exact = this.exactPlace(p, a0, a1);
    const overlay = this.plan.windowMode === 'overlay';
    if (overlay) {
      this.bulk.k.push(k, kOff, this.heads * this.headDim);
      this.bulk.v.push(v, vOff, this.heads * this.headDim);
    } else if (W === 0) {
      if (!exact) {
        this.bulk.k.push(k, kOff, this.heads * this.headDim);
        this.bulk.v.push(v, vOff, this.heads * this.headDim);
      }
      this.streamEnd = p + 1;
    } else {
      // Residual: positions leaving the window move from the ring to the bulk, each encoded once.
      for (; this.streamEnd < p + 1 - W; this.streamEnd++) {
        const q = this.streamEnd;
        if (this.exactPlace(q, a0, a1)) continue;
        this.moveFromRing(q);
      }
    }
    if (exact === 'sinks') {
      this.sinks.k.write(p, k, kOff);
      this.sinks.v.write(p, v, vOff);
    } else if (exact === 'anchors') {
      this.anchors!.k.write(p - a0, k, kOff);
      this.anchors!.v.write(p - a0, v, vOff);
    } else if (this.ring.k.rows > 0) {
      this.keepForBatch(p);
      this.ring.k.write(this.slot(p), k, kOff);
      this.ring.v.write(this.slot(p), v, vOff);
      this.ringLo = Math.max(this.ringLo, this.ringLoAfter(p));
    }
    this.n = p + 1;
  }

  private moveFromRing(q: number): void {
    const D = this.headDim;
    const HD = this.heads * D;
    const slot = this.slot(q);
    for (let h = 0; h < this.heads; h++) {
      this.ring.k.read(slot, h, this.tmp, h * D, this.scratch);
      this.ring.v.read(slot, h, this.tmp, HD + h * D, this.scratch);
    }
    this.bulk.k.push(this.tmp, 0, HD);
    this.bulk.v.push(this.tmp, HD, HD);
  }

  /** First position of the ring rows held as data: those the queries at n - 1 and later read (the ring may hold older ones). */
  private windowStart(): number {
    const n = this.n;
    if (n === 0 || this.ring.k.rows === 0) return n;
    return Math.max(Math.min(this.exactFrom(n - 1), n), this.ringLo);
  }

  /** Keeps positions < n; EvictedError when position n's window was already dropped. */
  rewind(n: number): void {
    if (n >= this.n) return;
    this.dropSpill();
    if (!this.canRewind(n)) {
      throw new EvictedError(
        `rewind to ${n}: layer ${this.plan.layer} keeps only positions >= ${this.evicted} (sliding window ${this.plan.slidingWindow}), ` +
          `position ${n} needs ${Math.max(0, n - this.plan.slidingWindow + 1)} on; clear() and prefill again`,
      );
    }
    if (n === 0) this.evicted = 0;
    if (this.plan.windowMode === 'overlay') {
      this.bulk.k.truncate(n, this.scratch);
      this.bulk.v.truncate(n, this.scratch);
    } else if (n < this.streamEnd) {
      // Positions that left the window stay quantized; the window refills as tokens are appended.
      const i = this.streamIndex(n);
      this.bulk.k.truncate(i, this.scratch);
      this.bulk.v.truncate(i, this.scratch);
      this.streamEnd = n;
    }
    this.ringLo = Math.min(this.ringLo, n);
    if (this.plan.windowMode === 'residual') this.ringLo = Math.min(this.ringLo, this.streamEnd);
    if (this.prompt !== undefined && n < this.prompt) this.prompt = undefined;
    this.n = n;
  }

  /**
   * The mixed view over the positions held, [evicted, n): sinks and anchors for every query, the bulk as
   * 'packed' segments, the spill and the ring as 'exact' ones, and each query's bound (exactFrom, clipped
   * to what is held: after a rewind or an import that lost exact rows, those positions read packed).
   */
  view(): MixedView {
    const n = this.n;
    const bytes = this.arena.u8();
    const [a0, a1] = this.anchorRange();
    const xLo = this.exactLo();
    const pEnd = this.packedEnd();
    const lo0 = Math.min(this.evicted, n);
    const clip = (x: number) => Math.min(Math.max(x, lo0), n);
    const cuts = [...new Set([lo0, this.plan.sinks, a0, a1, n].map(clip))].sort((x, y) => x - y);
    const segs: Segment[] = [];
    for (let c = 0; c + 1 < cuts.length; c++) {
      const lo = cuts[c]!;
      const hi = cuts[c + 1]!;
      if (hi <= lo) continue;
      const place = this.exactPlace(lo, a0, a1);
      if (place) {
        const rs = place === 'sinks' ? this.sinks : this.anchors!;
        const first = place === 'sinks' ? lo : lo - a0;
        segs.push({ start: lo, count: hi - lo, k: rs.k.run(first, bytes), v: rs.v.run(first, bytes), region: place });
        continue;
      }
      const pHi = Math.min(hi, pEnd);
      if (pHi > lo) {
        const kPieces: Piece[] = [];
        const vPieces: Piece[] = [];
        const i0 = this.streamIndex(lo);
        bulkPieces(this.bulk.k, lo, pHi, i0, bytes, kPieces);
        bulkPieces(this.bulk.v, lo, pHi, i0, bytes, vPieces);
        for (const s of mergePieces(kPieces, vPieces, lo)) segs.push({ start: s.start, count: s.count, k: s.k, v: s.v, region: s.region, read: 'packed' });
      }
      for (let p = Math.max(lo, xLo); p < hi; ) {
        const m = this.exactPiece(p, hi, bytes);
        segs.push(m);
        p += m.count;
      }
    }
    // By start; a packed segment before an exact one at the same start (a stable sort keeps push order).
    segs.sort((x, y) => x.start - y.start);
    const rule = (p: number) => exactFrom(this.plan, batchDependentWindowForTests.on ? n - 1 : p, a0, a1);
    const at = (p: number) => Math.max(xLo, Math.min(rule(p), pEnd));
    return { headDim: this.headDim, kvHeads: this.heads, length: n, start: lo0, segments: segs, exactFrom: at };
  }

  /** The exact segment starting at position p (< hi): from the spill below the ring's rows, else a ring run up to its wrap. */
  private exactPiece(p: number, hi: number, bytes: Uint8Array): Segment {
    const R = this.ring.k.rows;
    const s = this.spill;
    const ringFrom = this.ringLo;
    if (s && p < ringFrom) {
      const m = Math.min(hi, ringFrom) - p;
      return { start: p, count: m, k: s.k.run(p - s.lo, bytes), v: s.v.run(p - s.lo, bytes), region: 'window', read: 'exact' };
    }
    // [p, hi) holds no sink or anchor (view() cuts there): consecutive slots up to the wrap.
    const slot = this.slot(p);
    const m = Math.min(hi - p, R - slot);
    return { start: p, count: m, k: this.ring.k.run(slot, bytes), v: this.ring.v.run(slot, bytes), region: 'window', read: 'exact' };
  }

  /** Bytes of data held, by region: positions before `evicted` count nowhere. */
  regionBytes(): RegionBytes {
    const n = this.n;
    const e = Math.min(this.evicted, n);
    const [a0, a1] = this.anchorRange();
    const anchors = overlap(a0, a1, e, n);
    const sinks = overlap(0, this.plan.sinks, e, n);
    const w0 = Math.max(Math.min(this.windowStart(), n), e);
    const window = n - w0 - overlap(0, this.plan.sinks, w0, n) - overlap(a0, a1, w0, n);
    const row = (rs: RowStore) => this.heads * rs.rowBytes;
    const staged = (b: BulkTensor) => b.pending * this.heads * this.headDim * 4;
    const r: RegionBytes = {
      sinks: sinks * (row(this.sinks.k) + row(this.sinks.v)),
      anchors: this.anchors ? anchors * (row(this.anchors.k) + row(this.anchors.v)) : 0,
      bulk: this.bulk.k.stream.usedBytes + this.bulk.v.stream.usedBytes,
      window: window * (row(this.ring.k) + row(this.ring.v)),
      staging: staged(this.bulk.k) + staged(this.bulk.v),
      total: 0,
    };
    r.total = r.sinks + r.anchors + r.bulk + r.window + r.staging;
    return r;
  }

  private regions(): Regions<RowStore> {
    return { sinks: this.sinks, ring: this.ring, anchors: this.anchors, staging: { k: this.bulk.k.staging, v: this.bulk.v.staging } };
  }

  /** Every RowStore of this layer, in regionList order (save/fork). */
  private stores(): RowStore[] {
    return regionList(this.regions());
  }

  /** Bytes actually allocated in wasm memory for this layer. */
  allocatedBytes(): number {
    const exact: { bytes: number }[] = this.held ?? this.stores();
    return exact.reduce((s, r) => s + r.bytes, 0) + this.bulk.k.stream.allocatedBytes + this.bulk.v.stream.allocatedBytes + this.transientBytes();
  }

  get frozen(): boolean {
    return this.held !== null;
  }

  /**
   * Keeps of each exact region only the rows holding positions this layer still reads (compacted) and frees
   * the regions: a frozen snapshot allocates what it holds. Only forks, images and accounting read it after.
   */
  freeze(): void {
    if (this.held) return;
    this.dropSpill();
    // The ring rows kept are the data ones: from here on only they are valid.
    this.ringLo = Math.max(this.ringLo, this.windowStart());
    const stores = this.stores();
    const slots = this.heldSlots();
    const held: HeldRows[] = [];
    try {
      stores.forEach((s, i) => held.push(new HeldRows(this.arena, s, slots[i]![0], slots[i]![1])));
    } catch (e) {
      for (const h of held) h.free();
      throw e;
    }
    for (const s of stores) s.free();
    this.held = held;
  }

  /** Per store of stores(): the slots [first, first + count) that hold data (as regionBytes counts it). */
  private heldSlots(): [number, number][] {
    const n = this.n;
    const e = Math.min(this.evicted, n);
    const [a0, a1] = this.anchorRange();
    const span = (lo: number, hi: number): [number, number] => [lo, Math.max(0, hi - lo)];
    const sinks = span(e, Math.min(this.plan.sinks, n));
    // The ring's slots of the positions in [w0, n) that enter it (consecutive ring indices).
    const R = this.ring.k.rows;
    const w0 = Math.max(Math.min(this.windowStart(), n), e, Math.min(this.plan.sinks, n));
    const ri = (p: number) => ringIndexOf(this.plan, p, a0, a1);
    const ring: [number, number] = R > 0 ? [ri(w0) % R, ri(n) - ri(w0)] : [0, 0];
    const anchors = span(Math.max(a0, e) - a0, Math.min(a1, n) - a0);
    const out = [sinks, sinks, ring, ring];
    if (this.anchors) out.push(anchors, anchors);
    for (const b of [this.bulk.k, this.bulk.v]) if (b.staging) out.push([0, b.pending]);
    return out;
  }

  /** Each store's raw bytes in stores() order, as a cache file holds them (a frozen layer's unheld rows are zero). */
  private storeImages(): Uint8Array[] {
    return this.held ? this.held.map((h) => h.image()) : this.stores().map((s) => s.raw());
  }

  /**
   * fromState for a fork of `src` (live or frozen) into this empty layer: its meta, its exact regions copied
   * store to store (a frozen source's held rows only), its bulk chunks shared (copy-on-write), not copied.
   */
  adoptFrom(src: LayerCache): void {
    if (this.n !== 0 || this.frozen) throw new ArgumentError('LayerCache.adoptFrom: the layer must be empty and live');
    const mine = this.stores();
    if (src.held) src.held.forEach((h, i) => h.restore(mine[i]!));
    else src.stores().forEach((s, i) => mine[i]!.copyFrom(s));
    for (const w of ['k', 'v'] as const) this.bulk[w].shareFrom(src.bulk[w]);
    this.setMeta(src.meta());
  }

  free(): void {
    this.dropSpill();
    // stores() already includes the staging buffers (a frozen layer freed them: its held rows go); the streams free their chunks.
    if (this.held) for (const h of this.held) h.free();
    else for (const s of this.stores()) s.free();
    this.bulk.k.stream.free();
    this.bulk.v.stream.free();
  }
}
