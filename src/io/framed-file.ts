// Framed files (framed.ts layout) written and read piece by piece: a cache of several GiB never exists as one
// buffer (Node caps a buffer at 4 GiB, a file read or write at 2 GiB, a sha256 update at 2 GiB). Same bytes
// and the same checks, in the same order, as writeFrame / readFrame.
import { createHash, type Hash } from 'node:crypto';
import { closeSync, fstatSync, readSync, writeSync } from 'node:fs';
import { FileFormatError } from '../errors.js';
import { writeAtomicWith } from './atomic.js';
import { openForRead, accessError } from './files.js';
import { frameHead, prefixBytes, readPrefix, SHA, type FrameSpec } from './framed.js';

/** Largest piece one read, write or hash update takes (well under Node's 2 GiB limits). */
const PIECE = 64 << 20;

function writeAll(fd: number, b: Uint8Array, hash: Hash | null): void {
  for (let o = 0; o < b.length; o += PIECE) {
    const piece = b.subarray(o, Math.min(b.length, o + PIECE));
    hash?.update(piece);
    let done = 0;
    while (done < piece.length) done += writeSync(fd, piece, done, piece.length - done);
  }
}

/** Writes the frame of `header` and the body parts to `path` atomically, each part as it is (no copy). */
export function writeFrameFile(path: string, spec: FrameSpec, header: unknown, body: readonly Uint8Array[], version?: number): void {
  const head = frameHead(spec, header, version);
  writeAtomicWith(path, (fd) => {
    const hash = spec.checksum ? createHash('sha256') : null;
    writeAll(fd, head, hash);
    for (const b of body) writeAll(fd, b, hash);
    if (hash) writeAll(fd, hash.digest(), null);
  });
}

/** A verified frame file open for reading its body in order: take(n) gives the next n bytes. */
export interface FrameFile<H> {
  readonly version: number;
  readonly header: H;
  readonly bodyBytes: number;
  /** The next n body bytes, in a buffer reused by the next call (copy what you keep). */
  take(n: number): Uint8Array;
  /** Body bytes not taken yet. */
  readonly left: number;
  close(): void;
}

/**
 * Opens `path` and checks magic, version, header length, the checksum (one streaming pass over the file) and
 * the header JSON, in that order, with readFrame's messages; the body is then read piece by piece.
 */
export function readFrameFile<H>(spec: FrameSpec, path: string): FrameFile<H> {
  const fd = openForRead(path, spec.kind);
  try {
    return open<H>(spec, path, fd);
  } catch (e) {
    closeSync(fd);
    throw accessError(e, path, spec.kind);
  }
}

function open<H>(spec: FrameSpec, path: string, fd: number): FrameFile<H> {
  const bad = (why: string): never => {
    throw new FileFormatError(spec.kind, `${path}: ${why}`);
  };
  const size = fstatSync(fd).size;
  const read = (pos: number, into: Uint8Array): void => {
    let done = 0;
    while (done < into.length) {
      const n = readSync(fd, into, done, into.length - done, pos + done);
      if (n === 0) bad(`truncated (ends at ${pos + done} bytes)`);
      done += n;
    }
  };
  const pre = prefixBytes(spec);
  const tail = spec.checksum ? SHA : 0;
  const prefix = new Uint8Array(pre);
  if (size >= pre) read(0, prefix);
  const { version, headerBytes: H } = readPrefix(spec, prefix, size, bad);
  const end = size - tail;
  const buf = new Uint8Array(Math.min(PIECE, Math.max(1, end)));
  if (spec.checksum) {
    const hash = createHash('sha256');
    for (let p = 0; p < end; p += buf.length) {
      const piece = buf.subarray(0, Math.min(buf.length, end - p));
      read(p, piece);
      hash.update(piece);
    }
    const sum = new Uint8Array(SHA);
    read(end, sum);
    if (!Buffer.from(sum).equals(hash.digest())) bad('corrupted or truncated (checksum mismatch)');
  }
  const hb = new Uint8Array(H);
  read(pre, hb);
  let header: H;
  try {
    header = JSON.parse(Buffer.from(hb).toString('utf8')) as H;
  } catch (e) {
    return bad(`header is not JSON (${(e as Error).message})`);
  }
  if (header === null || typeof header !== 'object') bad('header is not a JSON object');
  let pos = pre + H;
  let scratch = new Uint8Array(0);
  return {
    version,
    header,
    bodyBytes: end - pre - H,
    get left() {
      return end - pos;
    },
    take(n: number): Uint8Array {
      if (pos + n > end) bad('payload shorter than its header describes');
      if (scratch.length < n) scratch = new Uint8Array(n);
      const out = scratch.subarray(0, n);
      read(pos, out);
      pos += n;
      return out;
    },
    close: () => closeSync(fd),
  };
}
