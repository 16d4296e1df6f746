// The mixed cache view: positions 0..length-1 of one layer, each read from exactly one packed run.
import { checkScratch, rowBytes, type KvFormat } from '../formats/format.js';
import { ShapeError } from '../errors.js';

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

/** Positions [start, start+count) read from runs k and v. `region` names where they live (for audits). */
export interface Segment {
  readonly start: number;
  readonly count: number;
  readonly k: PackedRun;
  readonly v: PackedRun;
  readonly region: string;
}

export interface MixedView {
  readonly headDim: number;
  readonly kvHeads: number;
  readonly length: number;
  /** First position held (default 0): sliding-window layers drop older ones, which no query may read. */
  readonly start?: number;
  /** In position order, contiguous, non-overlapping, covering [start, length). */
  readonly segments: readonly Segment[];
}

/** Throws ShapeError unless every position in [start, length) is covered exactly once, in order. */
export function checkView(view: MixedView): void {
  let next = view.start ?? 0;
  for (const s of view.segments) {
    if (s.start !== next) throw new ShapeError(`view: segment '${s.region}' starts at ${s.start}, expected ${next}`);
    if (s.count <= 0) throw new ShapeError(`view: segment '${s.region}' is empty`);
    next += s.count;
  }
  if (next !== view.length) throw new ShapeError(`view: segments cover ${next} positions, length is ${view.length}`);
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
