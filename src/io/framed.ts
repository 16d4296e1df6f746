// Framed binary files (cache files, reference logits, captures): one layout, one reader that checks every
// length before trusting it. Layout (little-endian):
//   magic (latin1, spec.magic.length bytes) | [u32 version] | u32 header bytes H | H bytes header JSON (UTF-8;
//   space-padded so the body starts 4-byte aligned when spec.pad) | body | [sha256 of everything before]
import { createHash } from 'node:crypto';
import { FileFormatError } from '../errors.js';

export interface FrameSpec {
  /** Names the file in errors ('cache file', 'capture', ...). */
  readonly kind: string;
  readonly magic: string;
  /** With a version word: the versions this reader accepts (the writer passes one). */
  readonly versions?: readonly number[];
  /** A larger header length is corruption (guards JSON.parse against a damaged length word). */
  readonly maxHeader: number;
  /** Pad the header JSON with spaces so the body starts at a multiple of 4 (float32 views). */
  readonly pad?: boolean;
  /** A trailing sha256 of everything before it, verified before the header is parsed. */
  readonly checksum?: boolean;
}

export const SHA = 32;

export function prefixBytes(spec: FrameSpec): number {
  return spec.magic.length + (spec.versions ? 4 : 0) + 4;
}

/** Magic, version, header length and header JSON: the bytes before the body. */
export function frameHead(spec: FrameSpec, header: unknown, version?: number): Uint8Array {
  const pre = prefixBytes(spec);
  let json = JSON.stringify(header);
  if (spec.pad) while ((pre + Buffer.byteLength(json)) % 4) json += ' ';
  const hb = Buffer.from(json, 'utf8');
  if (hb.length > spec.maxHeader) throw new FileFormatError(spec.kind, `header of ${hb.length} B exceeds the ${spec.maxHeader} B limit`);
  const out = new Uint8Array(pre + hb.length);
  const dv = new DataView(out.buffer);
  out.set(Buffer.from(spec.magic, 'latin1'), 0);
  let o = spec.magic.length;
  if (spec.versions) {
    if (version === undefined || !spec.versions.includes(version)) throw new FileFormatError(spec.kind, `cannot write version ${version}`);
    dv.setUint32(o, version, true);
    o += 4;
  }
  dv.setUint32(o, hb.length, true);
  out.set(hb, pre);
  return out;
}

/** The frame bytes for `header` and the body parts (one buffer: see framed-file.ts for big files). */
export function writeFrame(spec: FrameSpec, header: unknown, body: readonly Uint8Array[], version?: number): Uint8Array {
  const head = frameHead(spec, header, version);
  const bodyBytes = body.reduce((s, b) => s + b.length, 0);
  const out = new Uint8Array(head.length + bodyBytes + (spec.checksum ? SHA : 0));
  out.set(head, 0);
  let o = head.length;
  for (const b of body) {
    out.set(b, o);
    o += b.length;
  }
  if (spec.checksum) out.set(createHash('sha256').update(out.subarray(0, o)).digest(), o);
  return out;
}

/**
 * Checks a frame's prefix (magic, version word, header length) against a file of `size` bytes, in that order,
 * with `bad` raising the error; shared by readFrame and the piecewise reader (framed-file.ts).
 */
export function readPrefix(spec: FrameSpec, prefix: Uint8Array, size: number, bad: (why: string) => never): { version: number; headerBytes: number } {
  const pre = prefixBytes(spec);
  const tail = spec.checksum ? SHA : 0;
  if (size < pre + tail || prefix.length < pre) bad(`truncated (${size} bytes)`);
  if (Buffer.from(prefix.subarray(0, spec.magic.length)).toString('latin1') !== spec.magic) bad(`not a kvpack ${spec.kind} (bad magic)`);
  const dv = new DataView(prefix.buffer, prefix.byteOffset, pre);
  let o = spec.magic.length;
  let version = 0;
  if (spec.versions) {
    version = dv.getUint32(o, true);
    if (!spec.versions.includes(version)) bad(`has version ${version}; this kvpack reads versions ${spec.versions.join(', ')}`);
    o += 4;
  }
  const H = dv.getUint32(o, true);
  if (H > spec.maxHeader || pre + H + tail > size) bad(`truncated (header of ${H} bytes does not fit the file or the ${spec.maxHeader} B limit)`);
  return { version, headerBytes: H };
}

/** Magic, version, header length, checksum and header JSON checked in that order; the body is a view. */
export function readFrame<H>(spec: FrameSpec, bytes: Uint8Array, name?: string): { version: number; header: H; body: Uint8Array } {
  const bad = (why: string): never => {
    throw new FileFormatError(spec.kind, name ? `${name}: ${why}` : why);
  };
  const pre = prefixBytes(spec);
  const tail = spec.checksum ? SHA : 0;
  const { version, headerBytes: H } = readPrefix(spec, bytes.subarray(0, Math.min(bytes.length, pre)), bytes.length, bad);
  const end = bytes.length - tail;
  if (spec.checksum) {
    const sum = createHash('sha256').update(bytes.subarray(0, end)).digest();
    if (!Buffer.from(bytes.subarray(end)).equals(sum)) bad('corrupted or truncated (checksum mismatch)');
  }
  let header: H;
  try {
    header = JSON.parse(Buffer.from(bytes.subarray(pre, pre + H)).toString('utf8')) as H;
  } catch (e) {
    return bad(`header is not JSON (${(e as Error).message})`);
  }
  if (header === null || typeof header !== 'object') bad('header is not a JSON object');
  return { version, header, body: bytes.subarray(pre + H, end) };
}
