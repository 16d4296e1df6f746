// BulkStream: the append-only quantized bulk of one tensor (K or V) of one layer, in chunks of wasm memory.
import { rowBytes, type KvFormat } from '../formats/format.js';
import type { Arena } from '../kernels/runtime/arena.js';
import type { PackedRun } from '../kernels/attention/view.js';
import { encodeRows } from '../kernels/attention/encode.js';
import { ArgumentError } from '../errors.js';

/** Bulk chunk size in tokens when the caller gives none (a multiple of 32). */
export const DEFAULT_CHUNK_TOKENS = 256;

/** A chunk of packed bytes; shared between forked caches until one writes to it (copy-on-write). */
export interface Chunk {
  offset: number;
  refs: number;
}

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
  /** Encoded stream positions (a multiple of blockValues for channel formats). */
  encoded = 0;
  /** Times an encoder ran (tokens for token axis, groups for channel axis): lets tests prove each position is encoded once. */
  encodeCalls = 0;
  /** Retained chunks, oldest first. */
  chunks: Chunk[] = [];
  /** Leading chunks freed by sliding-window eviction: stream indices < start are gone. */
  dropped = 0;
  private readonly arena: Arena;

  constructor(arena: Arena, format: KvFormat, heads: number, headDim: number, chunkTokens: number) {
    this.arena = arena;
    this.format = format;
    this.heads = heads;
    this.headDim = headDim;
    this.chunkTokens = chunkTokens;
    this.headStride = format.axis === 'token' ? chunkTokens * rowBytes(format, headDim) : (chunkTokens / format.blockValues) * headDim * format.blockBytes;
    this.chunkBytes = heads * this.headStride;
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
    for (let h = 0; h < this.heads; h++) {
      encodeRows(f, src, srcOff + h * this.headDim, srcStride, tokens, this.headDim, mem, chunk.offset + h * this.headStride + at);
    }
    this.encoded += tokens;
    this.encodeCalls += f.axis === 'token' ? tokens : 1;
  }

  /** Drops encoded positions >= n (n a multiple of blockValues for channel formats); frees whole chunks. */
  truncate(n: number): void {
    if (n === 0) return this.free();
    // The layer refuses rewinds that need dropped chunks (EvictedError); reaching here is a bug.
    if (n < this.start) throw new ArgumentError(`BulkStream.truncate: ${n} is before the first index held (${this.start})`);
    this.encoded = Math.min(this.encoded, n);
    const keep = Math.ceil(this.encoded / this.chunkTokens) - this.dropped;
    while (this.chunks.length > keep) this.release(this.chunks.pop()!);
  }

  /** Frees every whole chunk before stream index i (complete chunks only): sliding-window eviction. */
  dropBefore(i: number): void {
    const upTo = Math.floor(Math.min(i, this.encoded) / this.chunkTokens);
    while (this.dropped < upTo) {
      this.release(this.chunks.shift()!);
      this.dropped++;
    }
  }

  /** Run covering stream index i (within its chunk). */
  run(i: number, bytes: Uint8Array): PackedRun {
    const chunk = this.chunks[Math.floor(i / this.chunkTokens) - this.dropped]!;
    return { format: this.format, bytes, offset: chunk.offset, headStride: this.headStride, first: i % this.chunkTokens };
  }

  /** A second stream sharing every chunk (fork). */
  share(): BulkStream {
    const s = new BulkStream(this.arena, this.format, this.heads, this.headDim, this.chunkTokens);
    s.encoded = this.encoded;
    s.dropped = this.dropped;
    s.chunks = this.chunks.map((c) => {
      c.refs++;
      return c;
    });
    return s;
  }

  /** Raw bytes of chunk c (absolute index, c >= dropped). */
  chunkBytesAt(c: number): Uint8Array {
    const off = this.chunks[c - this.dropped]!.offset;
    return this.arena.u8().subarray(off, off + this.chunkBytes);
  }

  /** Allocates the next chunk and fills it from bytes (restore; set `dropped` first). */
  loadChunk(bytes: Uint8Array): void {
    const chunk = { offset: this.arena.alloc(this.chunkBytes), refs: 1 };
    this.arena.u8().set(bytes, chunk.offset);
    this.chunks.push(chunk);
  }

  free(): void {
    for (const c of this.chunks) this.release(c);
    this.chunks = [];
    this.encoded = 0;
    this.dropped = 0;
  }

  private release(c: Chunk): void {
    if (--c.refs === 0) this.arena.free(c.offset);
  }
}
