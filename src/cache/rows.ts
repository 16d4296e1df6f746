// RowStore: a fixed block of per-head token rows in wasm memory (sinks, window ring, anchors, staging).
import { checkScratch, rowBytes, type KvFormat } from '../formats/format.js';
import type { Arena } from '../kernels/arena.js';
import type { PackedRun } from '../attention/view.js';
import { encodeRows } from '../kernels/encode.js';

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
    for (let h = 0; h < this.heads; h++) {
      encodeRows(this.format, src, srcOff + h * this.headDim, this.headDim, 1, this.headDim, mem, this.offset + (h * this.rows + slot) * this.rowBytes);
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
