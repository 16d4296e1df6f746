// Capture files: Q/K/V per layer dumped from a live model, so protocols can probe real caches (seed 000).
// `kvpack capture` (engine side, later) writes these; the lab only reads them.
//
// Layout (a framed file, io/framed.ts): 8 B magic "KVPKCAP1" | u32 header length H | H B JSON header (UTF-8),
// space-padded so the data starts 4-byte aligned | data: float32 arrays at header offsets (bytes, from the
// start of the data).
// Per layer: q [tokens, heads, headDim] and k, v [kvHeads, tokens, headDim], as attention sees them (after
// RoPE and any q/k norm), so the lab needs no model code to use them.
import { FileFormatError } from '../errors.js';
import { readFrame, writeFrame, type FrameSpec } from '../io/framed.js';
import { f32Bytes, readF32 } from './arrays.js';

export const CAPTURE_MAGIC = 'KVPKCAP1';
/** Guards against a corrupt length field making us parse gigabytes of "JSON". */
export const MAX_CAPTURE_HEADER = 16 << 20;
/** Guards against absurd shapes from a corrupt header (no real head has more dims, no capture more tokens). */
export const MAX_CAPTURE_DIM = 1 << 16;
export const MAX_CAPTURE_TOKENS = 1 << 22;
const FRAME: FrameSpec = { kind: 'capture', magic: CAPTURE_MAGIC, maxHeader: MAX_CAPTURE_HEADER, pad: true };

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
  return writeFrame(FRAME, header, [f32Bytes(...c.layers.flatMap((l) => [l.q, l.k, l.v]))]);
}

function checkShape(layer: number, tokens: number, heads: number, kvHeads: number, D: number, qn: number, kn: number, vn: number): void {
  const int = (x: number, max: number) => Number.isInteger(x) && x >= 1 && x <= max;
  if (
    !(
      Number.isInteger(layer) &&
      layer >= 0 &&
      int(tokens, MAX_CAPTURE_TOKENS) &&
      int(heads, MAX_CAPTURE_DIM) &&
      int(kvHeads, MAX_CAPTURE_DIM) &&
      int(D, MAX_CAPTURE_DIM)
    )
  ) {
    throw new FileFormatError('capture', `layer ${layer}: bad shape tokens=${tokens} heads=${heads} kvHeads=${kvHeads} headDim=${D}`);
  }
  if (heads % kvHeads) throw new FileFormatError('capture', `layer ${layer}: heads ${heads} is not a multiple of kvHeads ${kvHeads}`);
  if (qn !== tokens * heads * D || kn !== kvHeads * tokens * D || vn !== kvHeads * tokens * D) {
    throw new FileFormatError('capture', `layer ${layer}: array lengths ${qn}/${kn}/${vn} do not match the shape`);
  }
}

/** Parses a capture file; every length and offset is checked before any array is read. */
export function readCapture(bytes: Uint8Array): Capture {
  const { header, body: data } = readFrame<Header>(FRAME, bytes);
  if (header.format !== 'kvpack-capture' || header.version !== 1 || !Array.isArray(header.layers))
    throw new FileFormatError('capture', 'unsupported header (format/version)');
  const read = (b: Blob, want: number, what: string): Float32Array => {
    if (!b || !Number.isInteger(b.offset) || b.offset < 0 || b.offset % 4 || b.length !== want || b.offset + 4 * want > data.length) {
      throw new FileFormatError('capture', `${what}: blob ${JSON.stringify(b)} is outside the data or not ${want} floats`);
    }
    return readF32(data.subarray(b.offset, b.offset + 4 * want), want)[0]!;
  };
  const layers = header.layers.map((l) => {
    checkShape(l.layer, l.tokens, l.heads, l.kvHeads, l.headDim, l.q?.length, l.k?.length, l.v?.length);
    const n = l.tokens * l.headDim;
    return {
      layer: l.layer,
      tokens: l.tokens,
      heads: l.heads,
      kvHeads: l.kvHeads,
      headDim: l.headDim,
      q: read(l.q, n * l.heads, `layer ${l.layer} q`),
      k: read(l.k, n * l.kvHeads, `layer ${l.layer} k`),
      v: read(l.v, n * l.kvHeads, `layer ${l.layer} v`),
    };
  });
  return { meta: header.meta ?? {}, layers };
}
