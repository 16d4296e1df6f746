// Byte sources for a browser: an ArrayBuffer, a File/Blob, or a URL read with HTTP Range requests. Reads
// are synchronous (the parsers and loaders are), which browsers allow only in a Worker: FileReaderSync and
// synchronous XHR. A tensor read into the arena moves in READ_STEP pieces, so a large GGUF reaches wasm
// memory without a second full copy anywhere.
import { FileFormatError, PlatformError } from '../errors.js';
import { checkRange, memorySource, type ByteSource } from './source.js';

/** Largest piece one read moves: bounds the transient copy a Blob slice or a Range response makes. */
export const READ_STEP = 8 << 20;

/** The bytes of an ArrayBuffer (or a view), read in place: reads are subarrays, never copies. */
export function arrayBufferSource(buf: ArrayBuffer | ArrayBufferView, name = '<ArrayBuffer>'): ByteSource {
  const bytes = ArrayBuffer.isView(buf) ? new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength) : new Uint8Array(buf);
  return memorySource(bytes, name);
}

/** A source over `fetchPiece(offset, length)` (length <= READ_STEP), which returns exactly those bytes. */
export function pieceSource(name: string, size: number, fetchPiece: (offset: number, length: number) => Uint8Array): ByteSource {
  const readInto = (offset: number, dst: Uint8Array): void => {
    checkRange(name, size, offset, dst.length);
    for (let done = 0; done < dst.length; ) {
      const n = Math.min(READ_STEP, dst.length - done);
      const piece = fetchPiece(offset + done, n);
      if (piece.length !== n) throw new FileFormatError(name, `read of ${n} B at ${offset + done} returned ${piece.length} B`);
      dst.set(piece, done);
      done += n;
    }
  };
  return {
    size,
    name,
    read(offset, length) {
      checkRange(name, size, offset, length);
      if (length <= READ_STEP) return fetchPiece(offset, length);
      const out = new Uint8Array(length);
      readInto(offset, out);
      return out;
    },
    readInto,
  };
}

type SyncReader = new () => { readAsArrayBuffer(b: Blob): ArrayBuffer };

/** A File or Blob (a file the user picked), read slice by slice with FileReaderSync (Workers only). */
export function blobSource(blob: Blob, name = (blob as File).name || '<Blob>'): ByteSource {
  const Reader = (globalThis as { FileReaderSync?: SyncReader }).FileReaderSync;
  if (!Reader) throw new PlatformError(`${name}: Blob sources read synchronously (FileReaderSync): use them inside a Worker`);
  const reader = new Reader();
  return pieceSource(name, blob.size, (offset, length) => new Uint8Array(reader.readAsArrayBuffer(blob.slice(offset, offset + length))));
}

/** One synchronous GET of bytes [offset, offset + length) (Workers only: a page's thread may not block). */
function rangeRequest(url: string, offset: number, length: number): { status: number; body: Uint8Array; contentRange: string | null } {
  const xhr = new XMLHttpRequest();
  xhr.open('GET', url, false);
  try {
    xhr.responseType = 'arraybuffer';
  } catch {
    throw new PlatformError(`${url}: URL sources read synchronously: use them inside a Worker`);
  }
  xhr.setRequestHeader('Range', `bytes=${offset}-${offset + length - 1}`);
  try {
    xhr.send();
  } catch (e) {
    throw new FileFormatError(url, `request failed: ${(e as Error).message}`);
  }
  return { status: xhr.status, body: new Uint8Array(xhr.response as ArrayBuffer), contentRange: xhr.getResponseHeader('Content-Range') };
}

/**
 * A URL served with HTTP Range support (`kvpack web --models DIR` does): the size comes from a 1-byte
 * request's Content-Range (or from `size`, when a listing gave it), then every read is one ranged GET of
 * at most READ_STEP bytes. A server that answers 200 (ignoring Range) is an error rather than a silent
 * whole-file download per read.
 */
export function urlSource(url: string, name = url, size?: number): ByteSource {
  return pieceSource(name, size ?? probeSize(url, name), (offset, length) => {
    const r = rangeRequest(url, offset, length);
    if (r.status === 404) throw new FileFormatError(name, 'not found (HTTP 404)');
    if (r.status !== 206) throw new FileFormatError(name, `range ${offset}+${length}: HTTP ${r.status}`);
    return r.body;
  });
}

/** The file's size from a 1-byte request's Content-Range. */
function probeSize(url: string, name: string): number {
  const first = rangeRequest(url, 0, 1);
  if (first.status === 404) throw new FileFormatError(name, 'not found (HTTP 404)');
  if (first.status !== 206) throw new FileFormatError(name, `the server does not answer Range requests (HTTP ${first.status})`);
  const total = /\/(\d+)\s*$/.exec(first.contentRange ?? '');
  if (!total) throw new FileFormatError(name, `no total size in Content-Range '${first.contentRange ?? ''}'`);
  return Number(total[1]);
}
