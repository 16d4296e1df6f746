// BulkTensor: one tensor's (K or V) bulk in one layer: the encoded stream plus float32 staging for the channel
// group still filling; bulkPieces / mergePieces cut the K and V bulks into a view's packed segments.
import type { LayerPlan } from './policy.js';
import { RowStore } from './rows.js';
import { BulkStream } from './stream.js';
import type { Arena } from '../kernels/runtime/arena.js';
import type { PackedRun, Segment } from '../kernels/attention/view.js';
import { f32 } from '../formats/f32.js';
import { checkScratch } from '../formats/format.js';
import type { StreamMeta } from './layer-state.js';

/** One tensor's bulk: the encoded stream plus exact float32 staging for channel groups not yet full. */
export class BulkTensor {
  readonly stream: BulkStream;
  /** [heads][blockValues][headDim] float32; null for token-axis formats (encoded on arrival). */
  readonly staging: RowStore | null;
  /** Stream positions received (encoded + staged). */
  private received = 0;

  constructor(arena: Arena, plan: LayerPlan, which: 'k' | 'v', heads: number, headDim: number, chunkTokens: number) {
    const f = plan[which];
    this.stream = new BulkStream(arena, f, heads, headDim, chunkTokens);
    this.staging = f.axis === 'channel' ? new RowStore(arena, f32, heads, headDim, f.blockValues) : null;
  }

  get length(): number {
    return this.received;
  }

  /** Counts as a LayerState holds them. */
  meta(): StreamMeta {
    return { length: this.length, encoded: this.stream.encoded, chunks: this.stream.held.length, dropped: this.stream.dropped };
  }

  /** Takes a checked state's counts and chunks (staging bytes are the layer's region). */
  load(m: StreamMeta, chunks: readonly Uint8Array[]): void {
    this.stream.load(m.encoded, m.dropped, chunks);
    this.received = m.length;
  }

  /** Shares the chunks of `src` (fork, copy-on-write); staging is copied by the layer with its other regions. */
  shareFrom(src: BulkTensor): void {
    this.stream.shareFrom(src.stream);
    this.received = src.length;
  }

  get pending(): number {
    return this.length - this.stream.encoded;
  }

  /** Appends one position (row [heads*headDim] at src[off..]); a full channel group is encoded atomically. */
  push(src: Float32Array, off: number, stride: number): void {
    if (!this.staging) {
      this.stream.append(src, off, stride, 1);
    } else {
      this.staging.write(this.pending, src, off);
      if (this.pending + 1 === this.staging.rows) {
        // Encode from staging, never from the caller's rows, so batching cannot change the bytes.
        this.encodeStaged(this.staging.f32());
      }
    }
    this.received++;
  }

  private encodeStaged(staged: Float32Array): void {
    const st = this.staging!;
    // Staging is [heads][B][headDim]; the stream wants rows [B][heads*headDim]: transpose once per group.
    const B = st.rows;
    const D = st.headDim;
    const rows = new Float32Array(B * st.heads * D);
    for (let h = 0; h < st.heads; h++) for (let t = 0; t < B; t++) rows.set(staged.subarray((h * B + t) * D, (h * B + t + 1) * D), (t * st.heads + h) * D);
    this.stream.append(rows, 0, st.heads * D, B);
  }

  /** Keeps stream positions < n. Trims inside the last encoded group re-stage its exact values; deeper trims re-stage decoded values. */
  truncate(n: number, scratch: Float32Array): void {
    if (n >= this.length) return;
    const st = this.staging;
    if (n === 0) {
      // Nothing left to re-stage: free every chunk (and forget any dropped ones).
      this.stream.free();
    } else if (!st) {
      this.stream.truncate(n);
    } else {
      const B = st.rows;
      const groupStart = Math.floor(n / B) * B;
      if (n < this.stream.encoded) {
        const exactRestore = this.pending === 0 && groupStart === this.stream.encoded - B;
        if (!exactRestore) this.restageDecoded(groupStart, scratch);
        this.stream.truncate(groupStart);
      }
    }
    this.received = n;
  }

  /** Decodes the encoded group starting at stream index g0 into staging (lossy: only for deep trims). */
  private restageDecoded(g0: number, scratch: Float32Array): void {
    const st = this.staging!;
    const f = this.stream.format;
    const staged = st.f32();
    checkScratch(f, scratch);
    const bytes = this.stream.chunkBytesAt(Math.floor(g0 / this.stream.chunkTokens));
    const groupInChunk = (g0 % this.stream.chunkTokens) / f.blockValues;
    for (let h = 0; h < st.heads; h++) {
      for (let c = 0; c < st.headDim; c++) {
        f.decodeBlock(bytes, h * this.stream.headStride + (groupInChunk * st.headDim + c) * f.blockBytes, scratch, 0);
        for (let t = 0; t < f.blockValues; t++) staged[(h * f.blockValues + t) * st.headDim + c] = scratch[t]!;
      }
    }
  }

  /** PackedRun for stream index i: the chunk if encoded, else staging. */
  run(i: number, bytes: Uint8Array): PackedRun {
    return i < this.stream.encoded ? this.stream.run(i, bytes) : this.staging!.run(i - this.stream.encoded, bytes);
  }

  /** Positions readable from the run starting at stream index i. */
  span(i: number): number {
    if (i >= this.stream.encoded) return this.length - i;
    const chunkEnd = (Math.floor(i / this.stream.chunkTokens) + 1) * this.stream.chunkTokens;
    return Math.min(this.stream.encoded, chunkEnd) - i;
  }
}

/** A run of positions [start, start + count) of one tensor: its packed run and the region it lives in. */
export interface Piece {
  start: number;
  count: number;
  run: PackedRun;
  region: string;
}

/** Pieces of `b` covering positions [lo, hi) from stream index i0 on (one per chunk or staging run). */
export function bulkPieces(b: BulkTensor, lo: number, hi: number, i0: number, bytes: Uint8Array, out: Piece[]): void {
  for (let p = lo; p < hi; ) {
    const i = i0 + (p - lo);
    const m = Math.min(hi - p, b.span(i));
    out.push({ start: p, count: m, run: b.run(i, bytes), region: i < b.stream.encoded ? 'bulk' : 'staging' });
    p += m;
  }
}

/** Cuts K and V piece lists (both starting at `start`) at the union of their boundaries into segments. */
export function mergePieces(k: Piece[], v: Piece[], start: number): Segment[] {
  const segs: Segment[] = [];
  let i = 0;
  let j = 0;
  let p = start;
  while (i < k.length && j < v.length) {
    const a = k[i]!;
    const b = v[j]!;
    const end = Math.min(a.start + a.count, b.start + b.count);
    // (Fields spelled out, not spread: cheaper per view, and every run object gets one shape.)
    const shift = ({ run: r, start }: Piece): PackedRun => ({
      format: r.format,
      bytes: r.bytes,
      offset: r.offset,
      headStride: r.headStride,
      first: r.first + (p - start),
    });
    segs.push({ start: p, count: end - p, k: shift(a), v: shift(b), region: a.region === b.region ? a.region : `${a.region}/${b.region}` });
    p = end;
    if (a.start + a.count === end) i++;
    if (b.start + b.count === end) j++;
  }
  return segs;
}
