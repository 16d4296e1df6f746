// The mixed cache view: positions 0..length-1 of one layer. A position is read from one run for every query
// (sinks, anchors), or from a packed run by queries whose exact-from bound lies above it and from an exact
// run by the others: which one a query reads depends on the query's position, never on its batch.
import { checkScratch, rowBytes, type KvFormat } from '../../formats/format.js';
import { ShapeError } from '../../errors.js';

/**
 * K or V values of a stretch of positions, for every kv head.
 * Token axis: token t (origin-relative) of head h starts at offset + h*headStride + t*rowBytes.
 * Channel axis: group g = floor(t / blockValues) of head h starts at offset + h*headStride + g*headDim*blockBytes;
 * inside it channel c's block is at c*blockBytes and holds element t % blockValues.
 */
export interface PackedRun {
  readonly format: KvFormat;
  /** Backing bytes (a plain array or a view of wasm memory). */
  readonly bytes: Uint8Array;
  /** Byte offset of the run origin (head 0, token 0 of the origin). */
  readonly offset: number;
  /** Bytes between consecutive kv heads. */
  readonly headStride: number;
  /** Origin-relative token index of the segment's first position (channel runs start mid-group). */
  readonly first: number;
}

/**
 * Who reads a segment: every query (absent), or by the query's exact-from bound x (MixedView.exactFrom):
 * 'packed' for positions t < x, 'exact' for t >= x.
 */
export type SegmentRead = 'packed' | 'exact';

/** Positions [start, start+count) read from runs k and v. `region` names where they live (for audits). */
export interface Segment {
  readonly start: number;
  readonly count: number;
  readonly k: PackedRun;
  readonly v: PackedRun;
  readonly region: string;
  readonly read?: SegmentRead;
}

export interface MixedView {
  readonly headDim: number;
  readonly kvHeads: number;
  readonly length: number;
  /** First position held (default 0): sliding-window layers drop older ones, which no query may read. */
  readonly start?: number;
  /**
   * Ordered by start. Each position of [start, length) lies in one segment read by every query, or in a
   * 'packed' and/or an 'exact' one; each of the three kinds is contiguous-ascending and non-overlapping.
   */
  readonly segments: readonly Segment[];
  /**
   * Exact-from bound of the query at p: it reads 'packed' segments below it, 'exact' ones from it on. The
   * packed segments cover [start, exactFrom(p)) and the exact ones [exactFrom(p), length) wherever no
   * segment for every query does. Needed only when a segment has `read`.
   */
  readonly exactFrom?: (p: number) => number;
}

/** Throws ShapeError unless every position in [start, length) is covered as MixedView.segments says. */
export function checkView(view: MixedView): void {
  const lo = view.start ?? 0;
  const ends: Record<string, number> = { all: -Infinity, packed: -Infinity, exact: -Infinity };
  // Coverage: [lo, covered) is covered; segments arrive by start, so a gap shows as a start past it.
  let covered = lo;
  let prevStart = -Infinity;
  for (const s of view.segments) {
    const kind = s.read ?? 'all';
    if (s.count <= 0) throw new ShapeError(`view: segment '${s.region}' is empty`);
    if (s.start < prevStart) throw new ShapeError(`view: segment '${s.region}' at ${s.start} is out of order`);
    if (s.start < ends[kind]!) throw new ShapeError(`view: segment '${s.region}' at ${s.start} overlaps the previous ${kind} one`);
    if (kind === 'all' ? s.start < Math.max(ends.packed!, ends.exact!) : s.start < ends.all!)
      throw new ShapeError(`view: segment '${s.region}' at ${s.start} overlaps one of another kind`);
    if (s.start !== covered && !(s.start < covered)) throw new ShapeError(`view: segment '${s.region}' starts at ${s.start}, expected ${covered}`);
    if (s.start < lo) throw new ShapeError(`view: segment '${s.region}' starts at ${s.start}, before the view's start ${lo}`);
    if (s.read && !view.exactFrom) throw new ShapeError(`view: segment '${s.region}' is read by bound, the view has no exactFrom`);
    ends[kind] = s.start + s.count;
    covered = Math.max(covered, s.start + s.count);
    prevStart = s.start;
  }
  if (covered !== view.length) throw new ShapeError(`view: segments cover ${covered} positions, length is ${view.length}`);
}

/** The query at p's bound (no bound: every segment is for every query, any value does). */
export function exactFromOf(view: MixedView, p: number): number {
  return view.exactFrom ? view.exactFrom(p) : p + 1;
}

/** True when the query with bound x reads segment s at position t. */
export function reads(s: Segment, x: number, t: number): boolean {
  return s.read === undefined || (s.read === 'packed' ? t < x : t >= x);
}

/** Byte offset of token t's row (token-axis run) for head h. */
export function tokenRowOffset(run: PackedRun, headDim: number, h: number, t: number): number {
  return run.offset + h * run.headStride + t * rowBytes(run.format, headDim);
}

/** Byte offset of group g, channel c (channel-axis run) for head h. */
export function channelBlockOffset(run: PackedRun, headDim: number, h: number, g: number, c: number): number {
  return run.offset + h * run.headStride + (g * headDim + c) * run.format.blockBytes;
}

/**
 * Decodes tokens [from, from+count) of a run (origin-relative) for head h into tile[count, headDim],
 * reading one block at a time. count must stay inside one channel group for channel runs.
 */
export function readTile(run: PackedRun, headDim: number, h: number, from: number, count: number, tile: Float32Array, scratch: Float32Array): void {
  const f = run.format;
  const B = f.blockValues;
  checkScratch(f, scratch);
  if (f.axis === 'token') {
    const nb = Math.ceil(headDim / B);
    for (let i = 0; i < count; i++) {
      const base = tokenRowOffset(run, headDim, h, from + i);
      for (let ib = 0; ib < nb; ib++) {
        f.decodeBlock(run.bytes, base + ib * f.blockBytes, scratch, 0);
        const n = Math.min(B, headDim - ib * B);
        for (let j = 0; j < n; j++) tile[i * headDim + ib * B + j] = scratch[j]!;
      }
    }
  } else {
    const g = Math.floor(from / B);
    const t0 = from - g * B;
    if (t0 + count > B) throw new ShapeError('readTile: channel tile crosses a group boundary');
    for (let c = 0; c < headDim; c++) {
      f.decodeBlock(run.bytes, channelBlockOffset(run, headDim, h, g, c), scratch, 0);
      for (let i = 0; i < count; i++) tile[i * headDim + c] = scratch[t0 + i]!;
    }
  }
}

/** Largest tile (in tokens) starting at origin-relative token t that readTile accepts, capped at max. */
export function tileSpan(run: PackedRun, t: number, max: number): number {
  if (run.format.axis === 'token') return max;
  const B = run.format.blockValues;
  return Math.min(max, B - (t % B));
}
