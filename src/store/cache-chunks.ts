// Cache chunks as bytes: the packed bulk of positions [c*C, (c+1)*C) of every layer (C = chunkTokens), for
// prefix stores that hand a prefill's chunks to another cache (another slot, another server instance).
import type { KvCache } from '../cache/kvcache.js';
import type { LayerLayout, LayerState, RowShape } from '../cache/layer-state.js';
import { ArgumentError, CacheStateError, EvictedError, FileFormatError } from '../errors.js';
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

/** Sink rows [a, b) of chunk c (sinks are rows [0, S) of their store). */
function sinkRange(sinks: RowShape, c: number, C: number): [number, number] {
  const a = Math.min(c * C, sinks.rows);
  return [a, Math.min((c + 1) * C, sinks.rows)];
}

/** Rows [a, b) of a store's bytes, per head ([heads][b - a][rowBytes]). */
function sinkRows(s: RowShape, bytes: Uint8Array, a: number, b: number): Uint8Array {
  const out = new Uint8Array(s.heads * (b - a) * s.rowBytes);
  for (let h = 0; h < s.heads; h++) out.set(bytes.subarray((h * s.rows + a) * s.rowBytes, (h * s.rows + b) * s.rowBytes), h * (b - a) * s.rowBytes);
  return out;
}

/** A copy of a store's bytes with rows [a, b) set from sinkRows() bytes. */
function withSinkRows(s: RowShape, bytes: Uint8Array, a: number, b: number, rows: Uint8Array): Uint8Array {
  const out = bytes.slice();
  const n = (b - a) * s.rowBytes;
  for (let h = 0; h < s.heads; h++) out.set(rows.subarray(h * n, (h + 1) * n), (h * s.rows + a) * s.rowBytes);
  return out;
}

/**
 * The bytes of chunk c of every layer (encodeChunk layout), from the cache's state; the chunk must be complete
 * and still held. A caller exporting several chunks passes one `cache.state()` taken before, so each chunk does
 * not rebuild every chunk's views.
 */
export function exportChunk(cache: KvCache, c: number, states: ReturnType<KvCache['state']> = cache.state()): Buffer {
  checkOverlay(cache, 'exportChunk');
  const C = cache.chunkTokens;
  if (!Number.isInteger(c) || c < 0) throw new ArgumentError(`exportChunk: chunk index must be a non-negative integer, got ${c}`);
  const layers: Uint8Array[][] = [];
  states.forEach(({ meta, arrays }, i) => {
    const { k, v } = meta;
    if (Math.min(k.encoded, v.encoded, meta.n) < (c + 1) * C)
      throw new ArgumentError(
        `exportChunk: chunk ${c} (positions ${c * C}..${(c + 1) * C - 1}) is not complete in layer ${i} (${Math.min(k.encoded, v.encoded)} encoded)`,
      );
    if (c < Math.max(k.dropped, v.dropped)) throw new EvictedError(`exportChunk: layer ${i} (sliding window) already dropped chunk ${c}`);
    const sinks = cache.layerLayout(i).sinks;
    const [a, b] = sinkRange(sinks.k, c, C);
    layers.push([
      arrays.chunks.k[c - k.dropped]!,
      arrays.chunks.v[c - v.dropped]!,
      sinkRows(sinks.k, arrays.sinks.k, a, b),
      sinkRows(sinks.v, arrays.sinks.v, a, b),
    ]);
  });
  return encodeChunk(layers);
}

/** Part sizes a chunk c of a layer of this layout has. */
function expectedSizes(layout: LayerLayout, c: number): number[] {
  const [a, b] = sinkRange(layout.sinks.k, c, layout.chunkTokens);
  const rows = (s: RowShape) => s.heads * (b - a) * s.rowBytes;
  return [layout.chunkBytes.k, layout.chunkBytes.v, rows(layout.sinks.k), rows(layout.sinks.v)];
}

/**
 * Appends chunks first, first+1, ... (exportChunk bytes) to a live cache holding exactly first*C positions
 * (an empty cache, or a prefill-stage fork of one) through its state: every chunk is validated before
 * anything changes, then each layer is rebuilt from its state plus the chunks (KvCache.restoreState). The
 * window is left empty: the imported positions read from the bulk, exactly as after a rewind that reaches
 * past the window (KvCache.rewind), and the window refills as positions are appended.
 */
export function importChunks(cache: KvCache, chunks: readonly Uint8Array[], first = 0): void {
  checkOverlay(cache, 'importChunks');
  const C = cache.chunkTokens;
  const n0 = first * C;
  const n1 = (first + chunks.length) * C;
  if (cache.length !== n0) throw new ArgumentError(`importChunks: cache holds ${cache.length} positions, chunk ${first} starts at ${n0}`);
  if (n1 > cache.capacity) throw new ArgumentError(`importChunks: ${n1} positions exceed capacity ${cache.capacity}`);
  if (cache.frozen) throw new ArgumentError('importChunks: the cache is frozen (a prefix-cache entry): fork() it first');
  const states = cache.state();
  states.forEach(({ meta }, i) => {
    const aligned = meta.n === n0 && [meta.k, meta.v].every((t) => t.length === n0 && t.encoded === n0 && t.dropped === 0);
    if (!aligned) throw new ArgumentError(`importChunks: layer ${i} is not at a whole-chunk boundary ${n0} (or dropped chunks)`);
    if (meta.prompt !== null) throw new ArgumentError('importChunks: the cache already began decoding (beginDecode)');
  });
  const parsed = chunks.map((buf, j) => {
    const layers = decodeChunk(buf);
    if (layers.length !== cache.layers) throw new FileFormatError('kv chunk', `chunk ${first + j} has ${layers.length} layers, the cache has ${cache.layers}`);
    layers.forEach((parts, i) => {
      const want = expectedSizes(cache.layerLayout(i), first + j);
      const sizes = parts.map((p) => p.length);
      if (sizes.join() !== want.join())
        throw new FileFormatError(
          'kv chunk',
          `chunk ${first + j} layer ${i}: parts of ${sizes.join('/')} bytes, this cache needs ${want.join('/')} (${PARTS.join('/')})`,
        );
    });
    return layers;
  });
  if (chunks.length === 0) return;
  const next = states.map((s, i) =>
    withChunks(
      s,
      cache.layerLayout(i),
      parsed.map((layers) => layers[i]!),
      first,
      n1,
    ),
  );
  cache.restoreState(
    next.map((s) => s.meta),
    (i) => next[i]!.arrays,
  );
}

/** A layer's state at first*C positions plus chunks first.. (their parts): n1 positions, all in the bulk. */
function withChunks(s: LayerState, layout: LayerLayout, parts: readonly Uint8Array[][], first: number, n1: number): LayerState {
  let sinkK = s.arrays.sinks.k;
  let sinkV = s.arrays.sinks.v;
  parts.forEach(([, , sk, sv], j) => {
    const [a, b] = sinkRange(layout.sinks.k, first + j, layout.chunkTokens);
    if (b <= a) return;
    sinkK = withSinkRows(layout.sinks.k, sinkK, a, b, sk!);
    sinkV = withSinkRows(layout.sinks.v, sinkV, a, b, sv!);
  });
  const stream = (w: 'k' | 'v') => ({ ...s.meta[w], length: n1, encoded: n1, chunks: s.meta[w].chunks + parts.length });
  return {
    meta: { ...s.meta, n: n1, ringLo: n1, k: stream('k'), v: stream('v') },
    arrays: {
      ...s.arrays,
      sinks: { k: sinkK, v: sinkV },
      chunks: { k: [...s.arrays.chunks.k, ...parts.map((p) => p[0]!)], v: [...s.arrays.chunks.v, ...parts.map((p) => p[1]!)] },
    },
  };
}

/**
 * Resume rows at position r: per layer the exact rows [max(sinks, exactFrom(r)), r) (KvCache.resumeRows),
 * which a store that resumes at r keeps beside the packed chunks. Cost per layer: about W - 1 rows (up to 31
 * more over a per-channel bulk) x kvHeads x (exact K + exact V row bytes), e.g. W 128, f16, 8 x 128:
 * 127 x 8 x 512 = 508 KiB. Parts per layer of a resume-rows image, in this order:
 */
const RESUME_PARTS = ['exactK', 'exactV'] as const;

/** The resume rows at position r of every layer (encodeChunk layout); the cache must still hold them. */
export function exportResumeRows(cache: KvCache, r: number): Buffer {
  checkOverlay(cache, 'exportResumeRows');
  if (!Number.isInteger(r) || r < 0 || r > cache.length)
    throw new ArgumentError(`exportResumeRows: position must be an integer in [0, ${cache.length}], got ${r}`);
  try {
    return encodeChunk(cache.resumeRows(r).map((rows) => [rows.k, rows.v]));
  } catch (e) {
    if (e instanceof EvictedError) throw new EvictedError(`exportResumeRows: ${e.message}`);
    if (e instanceof ArgumentError) throw new ArgumentError(`exportResumeRows: ${e.message}`);
    throw e;
  }
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
  const want = cache.resumeBytes(r);
  layers.forEach((parts, i) => {
    const sizes = parts.map((p) => p.length);
    if (sizes.join() !== want[i]!.join())
      throw new FileFormatError(
        'kv resume rows',
        `layer ${i}: parts of ${sizes.join('/')} bytes, this cache needs ${want[i]!.join('/')} (${RESUME_PARTS.join('/')})`,
      );
  });
  try {
    cache.setResumeRows(
      r,
      layers.map(([k, v]) => ({ k: k!, v: v! })),
    );
  } catch (e) {
    if (e instanceof CacheStateError) throw new FileFormatError('kv resume rows', e.message);
    throw e;
  }
}
