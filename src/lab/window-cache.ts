// The residual-window cache file (seed 003): older positions in the bulk formats, the last R in float32.
//
// Layout (little-endian), one kv head:
//   16 B shape metadata: u32 bulkTokens (N-R), u32 windowTokens (R), u32 headDim, u32 kvHeads
//   K bulk  encode(kFormat, K[0:cut],  [cut, D])   channel formats pad cut up to whole groups of 32
//   V bulk  encode(vFormat, V[0:cut],  [cut, D])   token formats pad each row to whole blocks
//   K window f32 [R, D], then V window f32 [R, D]
// The header is needed: a padded channel-axis bulk does not say how many of its tokens are real.
import { encode } from '../formats/codec.js';
import { bytesFor } from '../formats/format.js';
import { getFormat } from '../formats/registry.js';
import type { MixedView, Segment } from '../kernels/attention/view.js';
import { ArgumentError, FileFormatError } from '../errors.js';

export const WINDOW_HEADER_BYTES = 16;

export interface WindowFormats {
  readonly k: string;
  readonly v: string;
  readonly window: string;
}

/** Bytes of the file for N tokens with the last R in the window: header + padded bulk + window, from the format definitions. */
export function windowCacheBytes(f: WindowFormats, N: number, R: number, D: number): number {
  const cut = N - R;
  return WINDOW_HEADER_BYTES + bytesFor(getFormat(f.k), cut, D) + bytesFor(getFormat(f.v), cut, D) + 2 * bytesFor(getFormat(f.window), R, D);
}

/** Packs K/V [N, D] (one kv head) keeping the last R positions in the window format. */
export function packWindowCache(f: WindowFormats, k: Float32Array, v: Float32Array, N: number, D: number, R: number): Uint8Array {
  if (!(Number.isInteger(R) && R >= 0 && R <= N)) throw new ArgumentError(`window ${R} outside [0, ${N}]`);
  if (k.length !== N * D || v.length !== N * D) throw new ArgumentError(`K/V must be [${N}, ${D}]`);
  // cut = N - R and x[cut:], never a negative index: Python's x[-0:] is the whole array (seed 003).
  const cut = N - R;
  const parts = [
    encode(f.k, k.subarray(0, cut * D), [cut, D]),
    encode(f.v, v.subarray(0, cut * D), [cut, D]),
    encode(f.window, k.subarray(cut * D), [R, D]),
    encode(f.window, v.subarray(cut * D), [R, D]),
  ];
  const out = new Uint8Array(WINDOW_HEADER_BYTES + parts.reduce((s, p) => s + p.length, 0));
  const dv = new DataView(out.buffer);
  [cut, R, D, 1].forEach((x, i) => dv.setUint32(4 * i, x, true));
  let o = WINDOW_HEADER_BYTES;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

export interface WindowCache {
  readonly bulkTokens: number;
  readonly windowTokens: number;
  readonly headDim: number;
  readonly view: MixedView;
  /** Byte ranges of the four sections, for audits. */
  readonly sections: {
    readonly kBulk: [number, number];
    readonly vBulk: [number, number];
    readonly kWindow: [number, number];
    readonly vWindow: [number, number];
  };
}

/** Parses a cache file into a MixedView over its bytes; the size must equal the formula exactly. */
export function readWindowCache(f: WindowFormats, bytes: Uint8Array): WindowCache {
  if (bytes.length < WINDOW_HEADER_BYTES) throw new FileFormatError('window cache', `${bytes.length} bytes is shorter than the header`);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const [cut, R, D, kvHeads] = [0, 1, 2, 3].map((i) => dv.getUint32(4 * i, true)) as [number, number, number, number];
  if (kvHeads !== 1 || D === 0 || D > 4096 || cut + R === 0 || cut + R > 1 << 24)
    throw new FileFormatError('window cache', `bad header [${cut}, ${R}, ${D}, ${kvHeads}]`);
  const need = windowCacheBytes(f, cut + R, R, D);
  if (bytes.length !== need) throw new FileFormatError('window cache', `${bytes.length} bytes, formula says ${need}`);
  const K = getFormat(f.k),
    V = getFormat(f.v),
    W = getFormat(f.window);
  const kb = WINDOW_HEADER_BYTES;
  const vb = kb + bytesFor(K, cut, D);
  const kw = vb + bytesFor(V, cut, D);
  const vw = kw + bytesFor(W, R, D);
  const run = (format: typeof K, offset: number, size: number) => ({ format, bytes, offset, headStride: size, first: 0 });
  const segments: Segment[] = [];
  if (cut > 0) segments.push({ start: 0, count: cut, k: run(K, kb, vb - kb), v: run(V, vb, kw - vb), region: 'bulk' });
  if (R > 0) segments.push({ start: cut, count: R, k: run(W, kw, vw - kw), v: run(W, vw, bytes.length - vw), region: 'window' });
  return {
    bulkTokens: cut,
    windowTokens: R,
    headDim: D,
    view: { headDim: D, kvHeads: 1, length: cut + R, segments },
    sections: { kBulk: [kb, vb], vBulk: [vb, kw], kWindow: [kw, vw], vWindow: [vw, bytes.length] },
  };
}
