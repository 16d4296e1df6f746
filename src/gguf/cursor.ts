// A little-endian reader over a ByteSource that fetches the header in chunks (DataView over each chunk).
import { FileFormatError } from '../errors.js';
import type { ByteSource } from './source.js';
import { HEADER_CHUNK_BYTES } from './limits.js';

const utf8 = new TextDecoder('utf-8', { fatal: false });

export class Cursor {
  /** Absolute position of the next byte. */
  pos = 0;
  private chunk: Uint8Array = new Uint8Array(0);
  private view = new DataView(this.chunk.buffer);
  private chunkStart = 0;

  constructor(
    readonly src: ByteSource,
    readonly kind: string,
  ) {}

  get remaining(): number {
    return this.src.size - this.pos;
  }

  fail(message: string): FileFormatError {
    return new FileFormatError(this.kind, `${this.src.name}: ${message}`);
  }

  /** Makes `n` bytes at pos addressable; `what` names the field for the truncation error. */
  private need(n: number, what: string): number {
    if (n > this.remaining) {
      throw this.fail(`truncated: ${what} needs ${n} B at offset ${this.pos}, file is ${this.src.size} B`);
    }
    const rel = this.pos - this.chunkStart;
    if (rel < 0 || rel + n > this.chunk.length) {
      const len = Math.min(Math.max(n, HEADER_CHUNK_BYTES), this.remaining);
      this.chunk = this.src.read(this.pos, len);
      this.view = new DataView(this.chunk.buffer, this.chunk.byteOffset, this.chunk.byteLength);
      this.chunkStart = this.pos;
      return 0;
    }
    return rel;
  }

  u32(what: string): number {
    const r = this.need(4, what);
    this.pos += 4;
    return this.view.getUint32(r, true);
  }
  u64(what: string): bigint {
    const r = this.need(8, what);
    this.pos += 8;
    return this.view.getBigUint64(r, true);
  }

  /** UTF-8 text of `n` bytes; invalid sequences become U+FFFD rather than failing the whole file. */
  text(n: number, what: string): string {
    const r = this.need(n, what);
    this.pos += n;
    return utf8.decode(this.chunk.subarray(r, r + n));
  }

  /** A DataView over `n` bytes at pos for bulk typed reads, then advances. */
  span(n: number, what: string): DataView {
    const r = this.need(n, what);
    this.pos += n;
    return new DataView(this.chunk.buffer, this.chunk.byteOffset + r, n);
  }
}
