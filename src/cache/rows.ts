// RowStore: a fixed block of per-head token rows in wasm memory (sinks, window ring, anchors, staging).
import { checkScratch, rowBytes, type KvFormat } from '../formats/format.js';
import type { Arena } from '../kernels/runtime/arena.js';
import type { PackedRun } from '../kernels/attention/view.js';
import { encoderFor } from '../kernels/attention/encode.js';

export class RowStore {
  readonly format: KvFormat;
  readonly heads: number;
  readonly headDim: number;
  /** Row slots per head. */
  readonly rows: number;
  readonly rowBytes: number;
  readonly offset: number; // arena offset; layout [heads][rows][rowBytes]
  private readonly arena: Arena;

  constructor(arena: Arena, format: KvFormat, heads: number, headDim: number, rows: number) {
    this.arena = arena;
    this.format = format;
    this.heads = heads;
    this.headDim = headDim;
    this.rows = rows;
    this.rowBytes = rowBytes(format, headDim);
    this.offset = rows > 0 ? arena.alloc(this.bytes) : 0;
  }

  get bytes(): number {
    return this.heads * this.rows * this.rowBytes;
  }

  /** Encodes one token (all heads) into `slot`: head h reads src[srcOff + h*headDim ..]. */
  write(slot: number, src: Float32Array, srcOff: number): void {
    const mem = this.arena.u8();
    const encode = encoderFor(this.format);
    for (let h = 0; h < this.heads; h++) {
      encode(src, srcOff + h * this.headDim, this.headDim, 1, this.headDim, mem, this.offset + (h * this.rows + slot) * this.rowBytes);
    }
  }

  /** Decodes head h of `slot` into dst[dstOff .. dstOff+headDim). */
  read(slot: number, h: number, dst: Float32Array, dstOff: number, scratch: Float32Array): void {
    const f = this.format;
    checkScratch(f, scratch);
    const mem = this.arena.u8();
    const base = this.offset + (h * this.rows + slot) * this.rowBytes;
    for (let ib = 0; ib * f.blockValues < this.headDim; ib++) {
      f.decodeBlock(mem, base + ib * f.blockBytes, scratch, 0);
      const n = Math.min(f.blockValues, this.headDim - ib * f.blockValues);
      for (let j = 0; j < n; j++) dst[dstOff + ib * f.blockValues + j] = scratch[j]!;
    }
  }

  run(first: number, bytes: Uint8Array): PackedRun {
    return { format: this.format, bytes, offset: this.offset, headStride: this.rows * this.rowBytes, first };
  }

  /** Raw bytes (for save/fork). */
  raw(): Uint8Array {
    return this.arena.u8().subarray(this.offset, this.offset + this.bytes);
  }

  /** Float32 view of an f32 store ([heads][rows][headDim]). */
  f32(): Float32Array {
    return new Float32Array(this.arena.memory.buffer, this.offset, this.bytes / 4);
  }

  copyFrom(other: RowStore): void {
    this.arena.u8().set(other.raw(), this.offset);
  }

  free(): void {
    if (this.rows > 0) this.arena.free(this.offset);
  }
}

/**
 * The rows of a RowStore a frozen cache still holds (KvCache.freeze), compacted: slots first, first+1, ...
 * (mod the store's rows, so a window ring may wrap), laid out [heads][count][rowBytes]. The source store
 * is freed after; restore() puts the rows back into their slots of a store shaped like it.
 */
export class HeldRows {
  readonly heads: number;
  readonly rows: number;
  readonly rowBytes: number;
  readonly first: number;
  readonly count: number;
  private readonly offset: number;
  private readonly arena: Arena;

  constructor(arena: Arena, src: RowStore, first: number, count: number) {
    this.arena = arena;
    this.heads = src.heads;
    this.rows = src.rows;
    this.rowBytes = src.rowBytes;
    this.first = first;
    this.count = Math.min(count, src.rows);
    this.offset = this.count > 0 ? arena.alloc(this.bytes) : 0;
    const mem = arena.u8();
    this.runs((h, slot, i, m) =>
      mem.copyWithin(this.at(h, i), src.offset + (h * this.rows + slot) * this.rowBytes, src.offset + (h * this.rows + slot + m) * this.rowBytes),
    );
  }

  get bytes(): number {
    return this.heads * this.count * this.rowBytes;
  }

  /** Writes the held rows into their slots of `dst` (same heads, rows and format as the source). */
  restore(dst: RowStore): void {
    const mem = this.arena.u8();
    this.runs((h, slot, i, m) => mem.copyWithin(dst.offset + (h * this.rows + slot) * this.rowBytes, this.at(h, i), this.at(h, i + m)));
  }

  /** The source store's raw bytes [heads][rows][rowBytes] as a cache file holds them: rows not held are zero. */
  image(): Uint8Array {
    const out = new Uint8Array(this.heads * this.rows * this.rowBytes);
    const mem = this.arena.u8();
    this.runs((h, slot, i, m) => out.set(mem.subarray(this.at(h, i), this.at(h, i + m)), (h * this.rows + slot) * this.rowBytes));
    return out;
  }

  free(): void {
    if (this.count > 0) this.arena.free(this.offset);
  }

  private at(h: number, i: number): number {
    return this.offset + (h * this.count + i) * this.rowBytes;
  }

  /** Calls fn(head, first slot, first held index, rows) for each contiguous run of slots (two when the range wraps). */
  private runs(fn: (h: number, slot: number, i: number, m: number) => void): void {
    if (this.count === 0) return;
    const s0 = this.first % this.rows;
    const m0 = Math.min(this.count, this.rows - s0);
    for (let h = 0; h < this.heads; h++) {
      fn(h, s0, 0, m0);
      if (m0 < this.count) fn(h, 0, m0, this.count - m0);
    }
  }
}
