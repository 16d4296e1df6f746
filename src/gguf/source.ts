// Byte sources for binary parsers: positioned reads from a file, or views of bytes already in memory.
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { FileFormatError } from '../errors.js';

/** Random access to a file's bytes; `read` returns exactly `length` bytes or throws. */
export interface ByteSource {
  readonly size: number;
  /** Where the bytes came from, for error messages. */
  readonly name: string;
  read(offset: number, length: number): Uint8Array;
}

/** Views into one Uint8Array (tests, files already in memory); reads return subarrays, never copies. */
export function memorySource(bytes: Uint8Array, name = '<memory>'): ByteSource {
  return {
    size: bytes.length,
    name,
    read(offset, length) {
      if (offset < 0 || length < 0 || offset + length > bytes.length) {
        throw new FileFormatError(name, `read of ${length} B at ${offset} is past the end (${bytes.length} B)`);
      }
      return bytes.subarray(offset, offset + length);
    },
  };
}

/**
 * Positioned reads from a path. Each read opens the file, checks it still has the size seen at first
 * open (a file rewritten under us is an error, not garbage), reads, and closes: nothing stays open.
 */
export function fileSource(path: string): ByteSource {
  const fd = openSync(path, 'r');
  let size: number;
  try {
    size = fstatSync(fd).size;
  } finally {
    closeSync(fd);
  }
  return {
    size,
    name: path,
    read(offset, length) {
      if (offset < 0 || length < 0 || offset + length > size) {
        throw new FileFormatError(path, `read of ${length} B at ${offset} is past the end (${size} B)`);
      }
      const out = new Uint8Array(length);
      const fd = openSync(path, 'r');
      try {
        if (fstatSync(fd).size !== size) throw new FileFormatError(path, 'file changed size since it was opened');
        let done = 0;
        while (done < length) {
          const n = readSync(fd, out, done, Math.min(length - done, 1 << 30), offset + done);
          if (n === 0) throw new FileFormatError(path, `unexpected end of file at ${offset + done}`);
          done += n;
        }
      } finally {
        closeSync(fd);
      }
      return out;
    },
  };
}
