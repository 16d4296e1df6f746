// Positioned reads from a path (Node's fs). The browser build swaps in file-source.browser.ts.
import { closeSync, fstatSync, readSync } from 'node:fs';
import { openForRead } from '../io/files.js';
import { GGUF_MAGIC } from './limits.js';
import { FileFormatError } from '../errors.js';
import { checkRange, type ByteSource } from './source.js';

/**
 * Positioned reads from a path. Each read opens the file, checks it still has the size seen at first
 * open (a file rewritten under us is an error, not garbage), reads, and closes: nothing stays open.
 */
export function fileSource(path: string, what = 'file'): ByteSource {
  const fd = openForRead(path, what);
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
      checkRange(path, size, offset, length);
      const out = new Uint8Array(length);
      readFileInto(path, size, offset, out);
      return out;
    },
    readInto(offset, dst) {
      checkRange(path, size, offset, dst.length);
      readFileInto(path, size, offset, dst);
    },
  };
}

/** Positioned reads of dst.length bytes at `offset` straight into dst (any ArrayBuffer, shared ones too). */
function readFileInto(path: string, size: number, offset: number, dst: Uint8Array): void {
  const fd = openForRead(path, 'file');
  try {
    if (fstatSync(fd).size !== size) throw new FileFormatError(path, 'file changed size since it was opened');
    let done = 0;
    while (done < dst.length) {
      // One readSync moves at most 2 GiB: read in 1 GiB steps.
      const n = readSync(fd, dst, done, Math.min(dst.length - done, 1 << 30), offset + done);
      if (n === 0) throw new FileFormatError(path, `unexpected end of file at ${offset + done}`);
      done += n;
    }
  } finally {
    closeSync(fd);
  }
}

/** True when the file starts with the GGUF magic (OS errors as FileAccessError naming `what`). */
export function isGgufFile(path: string, what = 'file'): boolean {
  const fd = openForRead(path, what);
  try {
    const b = new Uint8Array(4);
    return readSync(fd, b, 0, 4, 0) === 4 && new DataView(b.buffer).getUint32(0, true) === GGUF_MAGIC;
  } finally {
    closeSync(fd);
  }
}
