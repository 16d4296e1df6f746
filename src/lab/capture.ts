// Capture files: Q/K/V per layer dumped from a live model, so protocols can probe real caches (seed 000).
// `kvpack capture` (engine side, later) writes these; the lab only reads them.
//
// Layout (little-endian):
//   8 B  magic "KVPKCAP1"
//   4 B  u32 header length H
//   H B  JSON header (UTF-8), space-padded so the data starts 4-byte aligned
//   data: float32 arrays at header offsets (bytes, from the start of the data)
// Per layer: q [tokens, heads, headDim] and k, v [kvHeads, tokens, headDim], as attention sees them (after
// RoPE and any q/k norm), so the lab needs no model code to use them.
import { FileFormatError } from '../errors.js';
import { f32Bytes, readF32 } from './arrays.js';

export const CAPTURE_MAGIC = 'KVPKCAP1';
/** Guards against a corrupt length field making us parse gigabytes of "JSON". */
export const MAX_CAPTURE_HEADER = 16 << 20;
/** Guards against absurd shapes from a corrupt header (no real head has more dims, no capture more tokens). */
export const MAX_CAPTURE_DIM = 1 << 16;
export const MAX_CAPTURE_TOKENS = 1 << 22;

export interface CapturedLayer {
  readonly layer: number;
  readonly tokens: number;
  readonly heads: number;
  readonly kvHeads: number;
  readonly headDim: number;
  /** [tokens, heads, headDim] */
  readonly q: Float32Array;
  /** [kvHeads, tokens, headDim] */
  readonly k: Float32Array;
  readonly v: Float32Array;
}

export interface Capture {
  /** Free-form provenance: model file name and sha256, prompt, tool version. */
  readonly meta: Record<string, string | number>;
  readonly layers: readonly CapturedLayer[];
}

interface Blob {
  offset: number;
  length: number;
}

interface HeaderLayer {
  layer: number;
  tokens: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  q: Blob;
  k: Blob;
  v: Blob;
}

interface Header {
  format: 'kvpack-capture';
  version: 1;
  meta: Record<string, string | number>;
  layers: HeaderLayer[];
}

export function writeCapture(c: Capture): Uint8Array {
  let off = 0;
  const blob = (a: Float32Array): Blob => {
    const b = { offset: off, length: a.length };
    off += a.length * 4;
    return b;
  };
  const layers: HeaderLayer[] = c.layers.map((l) => {
    checkShape(l.layer, l.tokens, l.heads, l.kvHeads, l.headDim, l.q.length, l.k.length, l.v.length);
    return { layer: l.layer, tokens: l.tokens, heads: l.heads, kvHeads: l.kvHeads, headDim: l.headDim, q: blob(l.q), k: blob(l.k), v: blob(l.v) };
  });
  const header: Header = { format: 'kvpack-capture', version: 1, meta: c.meta, layers };
  let json = JSON.stringify(header);
  while ((12 + Buffer.byteLength(json)) % 4) json += ' ';
  const hb = Buffer.from(json, 'utf8');
  const data = f32Bytes(...c.layers.flatMap((l) => [l.q, l.k, l.v]));
  const out = new Uint8Array(12 + hb.length + data.length);
  out.set(Buffer.from(CAPTURE_MAGIC, 'latin1'), 0);
  new DataView(out.buffer).setUint32(8, hb.length, true);
  out.set(hb, 12);
  out.set(data, 12 + hb.length);
  return out;
}

function checkShape(layer: number, tokens: number, heads: number, kvHeads: number, D: number, qn: number, kn: number, vn: number): void {
  const int = (x: number, max: number) => Number.isInteger(x) && x >= 1 && x <= max;
  if (!(Number.isInteger(layer) && layer >= 0 && int(tokens, MAX_CAPTURE_TOKENS) && int(heads, MAX_CAPTURE_DIM) && int(kvHeads, MAX_CAPTURE_DIM) && int(D, MAX_CAPTURE_DIM))) {
    throw new FileFormatError('capture', `layer ${layer}: bad shape tokens=${tokens} heads=${heads} kvHeads=${kvHeads} headDim=${D}`);
  }
  if (heads % kvHeads) throw new FileFormatError('capture', `layer ${layer}: heads ${heads} is not a multiple of kvHeads ${kvHeads}`);
  if (qn !== tokens * heads * D || kn !== kvHeads * tokens * D || vn !== kvHeads * tokens * D) {
    throw new FileFormatError('capture', `layer ${layer}: array lengths ${qn}/${kn}/${vn} do not match the shape`);
  }
}

/** Parses a capture file; every length and offset is checked before any array is read. */
export function readCapture(bytes: Uint8Array): Capture {
  if (bytes.length < 12 || Buffer.from(bytes.subarray(0, 8)).toString('latin1') !== CAPTURE_MAGIC) throw new FileFormatError('capture', 'wrong magic (not a kvpack capture file)');
  const H = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(8, true);
  if (H > MAX_CAPTURE_HEADER || 12 + H > bytes.length) throw new FileFormatError('capture', `header length ${H} exceeds the file or the ${MAX_CAPTURE_HEADER} B limit`);
  let header: Header;
  try {
    header = JSON.parse(Buffer.from(bytes.subarray(12, 12 + H)).toString('utf8')) as Header;
  } catch (e) {
    throw new FileFormatError('capture', `header is not JSON: ${(e as Error).message}`);
  }
  if (header.format !== 'kvpack-capture' || header.version !== 1 || !Array.isArray(header.layers)) throw new FileFormatError('capture', 'unsupported header (format/version)');
  const data = bytes.subarray(12 + H);
  const read = (b: Blob, want: number, what: string): Float32Array => {
    if (!b || !Number.isInteger(b.offset) || b.offset < 0 || b.offset % 4 || b.length !== want || b.offset + 4 * want > data.length) {
      throw new FileFormatError('capture', `${what}: blob ${JSON.stringify(b)} is outside the data or not ${want} floats`);
    }
    return readF32(data.subarray(b.offset, b.offset + 4 * want), want)[0]!;
  };
  const layers = header.layers.map((l) => {
    checkShape(l.layer, l.tokens, l.heads, l.kvHeads, l.headDim, l.q?.length, l.k?.length, l.v?.length);
    const n = l.tokens * l.headDim;
    return { layer: l.layer, tokens: l.tokens, heads: l.heads, kvHeads: l.kvHeads, headDim: l.headDim, q: read(l.q, n * l.heads, `layer ${l.layer} q`), k: read(l.k, n * l.kvHeads, `layer ${l.layer} k`), v: read(l.v, n * l.kvHeads, `layer ${l.layer} v`) };
  });
  return { meta: header.meta ?? {}, layers };
}
