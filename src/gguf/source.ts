// Byte sources for binary parsers: positioned reads from a file (file-source.ts, Node only; browsers get a
// twin that refuses paths), views of bytes already in memory, and browser sources (web-sources.ts).
import { FileFormatError } from '../errors.js';

export { fileSource } from './file-source.js';

/** Random access to a file's bytes; `read` returns exactly `length` bytes or throws. */
export interface ByteSource {
  readonly size: number;
  /** Where the bytes came from, for error messages. */
  readonly name: string;
  read(offset: number, length: number): Uint8Array;
  /**
   * Copies `dst.length` bytes at `offset` into `dst` (e.g. a view of wasm memory), allocating nothing of
   * that size. Optional: `readInto` below falls back to `read` + copy for sources without it.
   */
  readInto?(offset: number, dst: Uint8Array): void;
}

/** `src.readInto` when the source has it, else one `read` copied into dst. */
export function readInto(src: ByteSource, offset: number, dst: Uint8Array): void {
  if (src.readInto) src.readInto(offset, dst);
  else dst.set(src.read(offset, dst.length));
}

export function checkRange(name: string, size: number, offset: number, length: number): void {
  if (!Number.isSafeInteger(offset) || !Number.isSafeInteger(length) || offset < 0 || length < 0 || offset + length > size) {
    throw new FileFormatError(name, `read of ${length} B at ${offset} is past the end (${size} B)`);
  }
}

/** Views into one Uint8Array (tests, files already in memory); reads return subarrays, never copies. */
export function memorySource(bytes: Uint8Array, name = '<memory>'): ByteSource {
  return {
    size: bytes.length,
    name,
    read(offset, length) {
      checkRange(name, bytes.length, offset, length);
      return bytes.subarray(offset, offset + length);
    },
    readInto(offset, dst) {
      checkRange(name, bytes.length, offset, dst.length);
      dst.set(bytes.subarray(offset, offset + dst.length));
    },
  };
}
