// BulkStream: the append-only quantized bulk of one tensor (K or V) of one layer, in chunks of wasm memory.
import { rowBytes, type KvFormat } from '../formats/format.js';
import type { Arena } from '../kernels/runtime/arena.js';
import type { PackedRun } from '../kernels/attention/view.js';
import { encoderFor } from '../kernels/attention/encode.js';
import { ArgumentError } from '../errors.js';

/** Bulk chunk size in tokens when the caller gives none (a multiple of 32). */
export const DEFAULT_CHUNK_TOKENS = 256;

/** Bytes per head of one chunk: token axis [chunkTokens][rowBytes]; channel axis [chunkTokens / blockValues][headDim blocks]. */
export function chunkHeadStride(format: KvFormat, headDim: number, chunkTokens: number): number {
  return format.axis === 'token' ? chunkTokens * rowBytes(format, headDim) : (chunkTokens / format.blockValues) * headDim * format.blockBytes;
}

/** A chunk of packed bytes; shared between forked caches until one writes to it (copy-on-write). */
export interface Chunk {
  offset: number;
  refs: number;
}

/**
 * The chunk (and its arena) each view heldViews() handed out shows: load() shares such a chunk (copy-on-write,
 * as a fork does) instead of copying its bytes, so a state rebuilt from a cache's own state keeps its sharing.
 */
const viewed = new WeakMap<Uint8Array, { readonly chunk: Chunk; readonly arena: Arena }>();

/**
 * Stream index i lives in chunk floor(i / chunkTokens), held at chunks[floor(i / chunkTokens) - dropped].
 * Chunk layout per head: token axis [chunkTokens][rowBytes]; channel axis [chunkTokens / blockValues
 * groups][headDim blocks].
 */
export class BulkStream {
  readonly format: KvFormat;
  readonly heads: number;
  readonly headDim: number;
  readonly chunkTokens: number;
  readonly headStride: number;
  readonly chunkBytes: number;
  /** Times an encoder ran (tokens for token axis, groups for channel axis): lets tests prove each position is encoded once. */
  encodeCalls = 0;
  /** Encoded stream positions (a multiple of blockValues for channel formats). */
  private encodedCount = 0;
  /** Retained chunks, oldest first. */
  private chunks: Chunk[] = [];
  /** Leading chunks freed by sliding-window eviction: stream indices < start are gone. */
  private droppedCount = 0;
  private readonly arena: Arena;

  constructor(arena: Arena, format: KvFormat, heads: number, headDim: number, chunkTokens: number) {
    this.arena = arena;
    this.format = format;
    this.heads = heads;
    this.headDim = headDim;
    this.chunkTokens = chunkTokens;
    this.headStride = chunkHeadStride(format, headDim, chunkTokens);
    this.chunkBytes = heads * this.headStride;
  }

  get encoded(): number {
    return this.encodedCount;
  }

  get dropped(): number {
    return this.droppedCount;
  }

  /** Chunks held, oldest first (identity shows sharing between forks). */
  get held(): readonly Readonly<Chunk>[] {
    return this.chunks;
  }

  /** First stream index held. */
  get start(): number {
    return this.dropped * this.chunkTokens;
  }

  /** Bytes of encoded data held (what accounting counts): stream indices [start, encoded). */
  get usedBytes(): number {
    const f = this.format;
    const held = this.encoded - this.start;
    return f.axis === 'token' ? held * this.heads * rowBytes(f, this.headDim) : (held / f.blockValues) * this.heads * this.headDim * f.blockBytes;
  }

  get allocatedBytes(): number {
    return this.chunks.length * this.chunkBytes;
  }

  /** Chunk for stream index i, allocated or un-shared (copy-on-write) as needed. */
  private writable(i: number): Chunk {
    const c = Math.floor(i / this.chunkTokens) - this.dropped;
    while (this.chunks.length <= c) this.chunks.push({ offset: this.arena.alloc(this.chunkBytes), refs: 1 });
    const chunk = this.chunks[c]!;
    if (chunk.refs > 1) {
      const copy = { offset: this.arena.alloc(this.chunkBytes), refs: 1 };
      const mem = this.arena.u8();
      mem.copyWithin(copy.offset, chunk.offset, chunk.offset + this.chunkBytes);
      chunk.refs--;
      this.chunks[c] = copy;
      return copy;
    }
    return chunk;
  }

  /**
   * Encodes the next `tokens` positions (token axis) or one whole group (channel axis, tokens = blockValues)
   * from src rows [tokens, heads*headDim] starting at srcOff with row stride srcStride.
   */
  append(src: Float32Array, srcOff: number, srcStride: number, tokens: number): void {
    const f = this.format;
    const chunk = this.writable(this.encoded);
    const t = this.encoded % this.chunkTokens;
    const at = f.axis === 'token' ? t * rowBytes(f, this.headDim) : (t / f.blockValues) * this.headDim * f.blockBytes;
    const mem = this.arena.u8();
    const encode = encoderFor(f);
    for (let h = 0; h < this.heads; h++) {
      encode(src, srcOff + h * this.headDim, srcStride, tokens, this.headDim, mem, chunk.offset + h * this.headStride + at);
    }
    this.encodedCount += tokens;
    this.encodeCalls += f.axis === 'token' ? tokens : 1;
  }

  /** Drops encoded positions >= n (n a multiple of blockValues for channel formats); frees whole chunks. */
  truncate(n: number): void {
    if (n === 0) return this.free();
    // The layer refuses rewinds that need dropped chunks (EvictedError); reaching here is a bug.
    if (n < this.start) throw new ArgumentError(`BulkStream.truncate: ${n} is before the first index held (${this.start})`);
    this.encodedCount = Math.min(this.encoded, n);
    const keep = Math.ceil(this.encoded / this.chunkTokens) - this.dropped;
    while (this.chunks.length > keep) this.release(this.chunks.pop()!);
  }

  /** Frees every whole chunk before stream index i (complete chunks only): sliding-window eviction. */
  dropBefore(i: number): void {
    const upTo = Math.floor(Math.min(i, this.encoded) / this.chunkTokens);
    while (this.dropped < upTo) {
      this.release(this.chunks.shift()!);
      this.droppedCount++;
    }
  }

  /** Run covering stream index i (within its chunk). */
  run(i: number, bytes: Uint8Array): PackedRun {
    const chunk = this.chunks[Math.floor(i / this.chunkTokens) - this.dropped]!;
    return { format: this.format, bytes, offset: chunk.offset, headStride: this.headStride, first: i % this.chunkTokens };
  }

  /** Frees this stream's chunks and shares every chunk of `src` instead (fork; copy-on-write). */
  shareFrom(src: BulkStream): void {
    this.free();
    this.encodedCount = src.encoded;
    this.droppedCount = src.dropped;
    this.chunks = src.chunks.map((c) => {
      c.refs++;
      return c;
    });
  }

  /** Raw bytes of chunk c (absolute index, c >= dropped). */
  chunkBytesAt(c: number): Uint8Array {
    const off = this.chunks[c - this.dropped]!.offset;
    return this.arena.u8().subarray(off, off + this.chunkBytes);
  }

  /** Views of the held chunks' bytes, oldest first (a LayerState's chunks): load() shares them, never copies. */
  heldViews(): Uint8Array[] {
    return this.chunks.map((chunk) => {
      const view = this.arena.u8().subarray(chunk.offset, chunk.offset + this.chunkBytes);
      viewed.set(view, { chunk, arena: this.arena });
      return view;
    });
  }

  /**
   * Replaces the stream by `chunks` after `dropped` freed ones, `encoded` positions (a checked LayerState):
   * a heldViews() view of a live chunk in this arena is shared (copy-on-write: every write goes through
   * writable()), other bytes are copied. Shares are taken before this stream's own chunks are released.
   */
  load(encoded: number, dropped: number, chunks: readonly Uint8Array[]): void {
    const shared = chunks.map((bytes) => {
      const v = viewed.get(bytes);
      return v && v.arena === this.arena && v.chunk.refs > 0 && bytes.length === this.chunkBytes ? v.chunk : null;
    });
    for (const c of shared) if (c) c.refs++;
    this.free();
    this.droppedCount = dropped;
    for (const [j, bytes] of chunks.entries()) {
      const had = shared[j];
      if (had) {
        this.chunks.push(had);
        continue;
      }
      const chunk = { offset: this.arena.alloc(this.chunkBytes), refs: 1 };
      this.chunks.push(chunk);
      this.arena.u8().set(bytes, chunk.offset);
    }
    this.encodedCount = encoded;
  }

  free(): void {
    for (const c of this.chunks) this.release(c);
    this.chunks = [];
    this.encodedCount = 0;
    this.droppedCount = 0;
  }

  private release(c: Chunk): void {
    if (--c.refs === 0) this.arena.free(c.offset);
  }
}
