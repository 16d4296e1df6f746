// Cache chunks as bytes: the packed bulk of positions [c*C, (c+1)*C) of every layer (C = chunkTokens), for
// prefix stores that hand a prefill's chunks to another cache (another slot, another server instance).
import type { KvCache } from '../cache/kvcache.js';
import type { LayerCache } from '../cache/layer.js';
import type { RowStore } from '../cache/rows.js';
import { ArgumentError, EvictedError, FileFormatError } from '../errors.js';
import { decodeChunk, encodeChunk } from './chunk-codec.js';

/** Parts per layer, in this order. Sink rows are the exact copies of sink positions inside the chunk (empty elsewhere). */
const PARTS = ['k', 'v', 'sinkK', 'sinkV'] as const;

/**
 * Chunks are position-aligned only in overlay mode (the bulk holds every position; residual mode skips
 * the sinks in its stream, so its chunks straddle token chunks).
 */
function checkOverlay(cache: KvCache, what: string): void {
  const mode = cache.policy.windowMode ?? 'overlay';
  if (mode !== 'overlay') throw new ArgumentError(`${what}: chunks are position-aligned only in overlay window mode, the cache uses '${mode}'`);
}

/** Sink rows [a, b) of one store for chunk c, per head ([heads][b - a][rowBytes]). */
function sinkRange(l: LayerCache, c: number, C: number): [number, number] {
  const a = Math.min(c * C, l.plan.sinks);
  return [a, Math.min((c + 1) * C, l.plan.sinks)];
}

function sinkRows(s: RowStore, a: number, b: number): Uint8Array {
  const out = new Uint8Array(s.heads * (b - a) * s.rowBytes);
  const raw = s.raw();
  for (let h = 0; h < s.heads; h++) out.set(raw.subarray((h * s.rows + a) * s.rowBytes, (h * s.rows + b) * s.rowBytes), h * (b - a) * s.rowBytes);
  return out;
}

function setSinkRows(s: RowStore, a: number, b: number, bytes: Uint8Array): void {
  const raw = s.raw();
  const n = (b - a) * s.rowBytes;
  for (let h = 0; h < s.heads; h++) raw.set(bytes.subarray(h * n, (h + 1) * n), (h * s.rows + a) * s.rowBytes);
}

/** The bytes of chunk c of every layer (encodeChunk layout); the chunk must be complete and still held. */
export function exportChunk(cache: KvCache, c: number): Buffer {
  checkOverlay(cache, 'exportChunk');
  const C = cache.chunkTokens;
  if (!Number.isInteger(c) || c < 0) throw new ArgumentError(`exportChunk: chunk index must be a non-negative integer, got ${c}`);
  const layers: Uint8Array[][] = [];
  for (let i = 0; i < cache.layers; i++) {
    const l = cache.layerCache(i);
    const [k, v] = [l.bulk.k.stream, l.bulk.v.stream];
    if (Math.min(k.encoded, v.encoded, l.n) < (c + 1) * C)
      throw new ArgumentError(
        `exportChunk: chunk ${c} (positions ${c * C}..${(c + 1) * C - 1}) is not complete in layer ${i} (${Math.min(k.encoded, v.encoded)} encoded)`,
      );
    if (c < Math.max(k.dropped, v.dropped)) throw new EvictedError(`exportChunk: layer ${i} (sliding window) already dropped chunk ${c}`);
    const [a, b] = sinkRange(l, c, C);
    layers.push([k.chunkBytesAt(c), v.chunkBytesAt(c), sinkRows(l.sinks.k, a, b), sinkRows(l.sinks.v, a, b)]);
  }
  return encodeChunk(layers);
}

/** Part sizes a chunk c of this cache has, per layer. */
function expectedSizes(cache: KvCache, c: number): number[][] {
  return Array.from({ length: cache.layers }, (_, i) => {
    const l = cache.layerCache(i);
    const [a, b] = sinkRange(l, c, cache.chunkTokens);
    const rows = (s: RowStore) => s.heads * (b - a) * s.rowBytes;
    return [l.bulk.k.stream.chunkBytes, l.bulk.v.stream.chunkBytes, rows(l.sinks.k), rows(l.sinks.v)];
  });
}

/**
 * Appends chunks first, first+1, ... (exportChunk bytes) to a cache holding exactly first*C positions
 * (an empty cache, or a prefill-stage fork of one). Every chunk is validated before anything changes.
 * The window is left empty: the imported positions read from the bulk, exactly as after a rewind that
 * reaches past the window (KvCache.rewind), and the window refills as positions are appended.
 */
export function importChunks(cache: KvCache, chunks: readonly Uint8Array[], first = 0): void {
  checkOverlay(cache, 'importChunks');
  const C = cache.chunkTokens;
  const n0 = first * C;
  const n1 = (first + chunks.length) * C;
  if (cache.length !== n0) throw new ArgumentError(`importChunks: cache holds ${cache.length} positions, chunk ${first} starts at ${n0}`);
  if (n1 > cache.capacity) throw new ArgumentError(`importChunks: ${n1} positions exceed capacity ${cache.capacity}`);
  for (let i = 0; i < cache.layers; i++) {
    const l = cache.layerCache(i);
    const aligned = l.n === n0 && [l.bulk.k, l.bulk.v].every((t) => t.length === n0 && t.stream.encoded === n0 && t.stream.dropped === 0);
    if (!aligned) throw new ArgumentError(`importChunks: layer ${i} is not at a whole-chunk boundary ${n0} (or dropped chunks)`);
    if (l.prompt !== undefined) throw new ArgumentError('importChunks: the cache already began decoding (beginDecode)');
  }
  const parsed = chunks.map((buf, j) => {
    const layers = decodeChunk(buf);
    const want = expectedSizes(cache, first + j);
    if (layers.length !== want.length) throw new FileFormatError('kv chunk', `chunk ${first + j} has ${layers.length} layers, the cache has ${want.length}`);
    layers.forEach((parts, i) => {
      const sizes = parts.map((p) => p.length);
      if (sizes.join() !== want[i]!.join())
        throw new FileFormatError(
          'kv chunk',
          `chunk ${first + j} layer ${i}: parts of ${sizes.join('/')} bytes, this cache needs ${want[i]!.join('/')} (${PARTS.join('/')})`,
        );
    });
    return layers;
  });
  parsed.forEach((layers, j) => {
    const c = first + j;
    layers.forEach(([k, v, sk, sv], i) => {
      const l = cache.layerCache(i);
      l.bulk.k.stream.loadChunk(k!);
      l.bulk.v.stream.loadChunk(v!);
      const [a, b] = sinkRange(l, c, C);
      if (b > a) {
        setSinkRows(l.sinks.k, a, b, sk!);
        setSinkRows(l.sinks.v, a, b, sv!);
      }
    });
  });
  for (let i = 0; i < cache.layers; i++) {
    const l = cache.layerCache(i);
    for (const t of [l.bulk.k, l.bulk.v]) {
      t.stream.encoded = n1;
      t.length = n1;
    }
    l.n = n1;
    l.ringLo = n1;
  }
}

/**
 * Resume rows at position r: per layer the exact rows [max(sinks, exactFrom(r)), r) (cache/exact-from.ts),
 * the rows the query at r and later read exact below r. Recomputing positions cannot regenerate them (a
 * row's K/V depend on exact rows further back at every lower layer), so a store that resumes at r keeps
 * them beside the packed chunks. Cost per layer: about W - 1 rows (up to 31 more over a per-channel bulk)
 * x kvHeads x (exact K + exact V row bytes), e.g. W 128, f16, 8 x 128: 127 x 8 x 512 = 508 KiB.
 */
function resumeRange(l: LayerCache, r: number): [number, number] {
  return [Math.min(r, Math.max(l.plan.sinks, l.exactFrom(r))), r];
}

/** Parts per layer of a resume-rows image, in this order. */
const RESUME_PARTS = ['exactK', 'exactV'] as const;

/** The resume rows at position r of every layer (encodeChunk layout); the cache must still hold them. */
export function exportResumeRows(cache: KvCache, r: number): Buffer {
  checkOverlay(cache, 'exportResumeRows');
  if (!Number.isInteger(r) || r < 0 || r > cache.length)
    throw new ArgumentError(`exportResumeRows: position must be an integer in [0, ${cache.length}], got ${r}`);
  const layers: Uint8Array[][] = [];
  for (let i = 0; i < cache.layers; i++) {
    const l = cache.layerCache(i);
    const [lo, hi] = resumeRange(l, r);
    if (lo < hi && l.exactLo() > lo)
      throw new EvictedError(
        `exportResumeRows: layer ${i} no longer holds the exact rows ${lo}..${hi - 1} (it holds from ${l.exactLo()}); export right after the batch that reached ${r}`,
      );
    const [a0, a1] = l.anchorRange();
    if (lo < hi && a0 < hi && a1 > lo) throw new ArgumentError(`exportResumeRows: layer ${i} holds anchors inside ${lo}..${hi - 1} (the cache began decoding)`);
    const rows = l.exactRows(lo, hi);
    layers.push([rows.k, rows.v]);
  }
  return encodeChunk(layers);
}

/**
 * Writes exportResumeRows(…, r) bytes into a cache holding exactly r positions (after importChunks), so it
 * is resumableAt(r): appending the positions from r on gives the bits of the cache the rows came from.
 */
export function importResumeRows(cache: KvCache, r: number, bytes: Uint8Array): void {
  checkOverlay(cache, 'importResumeRows');
  if (cache.length !== r) throw new ArgumentError(`importResumeRows: cache holds ${cache.length} positions, the rows are for position ${r}`);
  const layers = decodeChunk(bytes);
  if (layers.length !== cache.layers) throw new FileFormatError('kv resume rows', `${layers.length} layers, the cache has ${cache.layers}`);
  layers.forEach((parts, i) => {
    const l = cache.layerCache(i);
    const [lo, hi] = resumeRange(l, r);
    const want = [l.ring.k, l.ring.v].map((s) => s.heads * (hi - lo) * s.rowBytes);
    const sizes = parts.map((p) => p.length);
    if (sizes.join() !== want.join())
      throw new FileFormatError(
        'kv resume rows',
        `layer ${i}: parts of ${sizes.join('/')} bytes, this cache needs ${want.join('/')} (${RESUME_PARTS.join('/')})`,
      );
  });
  layers.forEach(([k, v], i) => {
    const l = cache.layerCache(i);
    const [lo, hi] = resumeRange(l, r);
    if (lo < hi) l.setExactRows(lo, hi, k!, v!);
  });
}
