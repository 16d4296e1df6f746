// Cache files: a versioned binary snapshot (header JSON, packed bytes, sha256) written atomically. Files are
// written and read piece by piece (io/framed-file.ts): a cache may be several GiB; images in memory (slot
// files, shared stores) have the same bytes.
import { FileFormatError, KvpackError } from '../errors.js';
import { readFrame, writeFrame, type FrameSpec } from '../io/framed.js';
import { readFrameFile, writeFrameFile } from '../io/framed-file.js';
import type { KvCache, KvCacheOptions } from './kvcache.js';
import type { CachePolicy } from './policy.js';

/**
 * Layout: "KVPK" | u32 version | u32 header length | header JSON (UTF-8) | payload | sha256 of all before.
 * Payload per layer: every RowStore (sinks K/V, window K/V, anchors K/V, staging) then the K chunks held,
 * then the V chunks held. Version 2 adds sliding-window eviction (`evicted`, per-stream `dropped`
 * leading chunks, absent from the payload); version 1 files read as "nothing dropped". Version 3 packs
 * adjacent heads when a block is longer than a head (head-packing.ts); older files of such caches padded
 * each head and are refused. Version 4 sizes the window ring for batch-invariant reads (exact-from.ts: the
 * window plus an open channel group) and keeps the rows the next queries read; older files hold a ring of
 * W rows filled by the old batch-dependent rule and are refused (re-create the cache).
 */
export const CACHE_FILE_VERSION = 4;
/** The frame (io/framed.ts); a header over 16 MiB is not a cache header (guards JSON.parse). */
const FRAME: FrameSpec = { kind: 'cache file', magic: 'KVPK', versions: [1, 2, 3, 4], maxHeader: 16 << 20, checksum: true };

interface StreamState {
  length: number;
  encoded: number;
  /** Chunks in the payload. */
  chunks: number;
  /** Leading chunks dropped before them (version 2). */
  dropped: number;
}

interface LayerState {
  n: number;
  prompt: number | null;
  ringLo: number;
  streamEnd: number;
  /** First position held (version 2). */
  evicted: number;
  k: StreamState;
  v: StreamState;
}

interface Header {
  layers: number;
  kvHeads: number;
  headDim: number;
  capacity: number;
  chunkTokens: number;
  policy: CachePolicy;
  state: LayerState[];
  payloadBytes: number;
}

/** The header and payload parts of a cache (views of its memory: write them before the cache changes). */
function cacheParts(cache: KvCache): { header: Header; parts: Uint8Array[] } {
  const parts: Uint8Array[] = [];
  const state: LayerState[] = [];
  for (let i = 0; i < cache.layers; i++) {
    const l = cache.layerCache(i);
    for (const img of l.storeImages()) parts.push(img);
    for (const w of ['k', 'v'] as const) {
      const s = l.bulk[w].stream;
      for (let c = s.dropped; c < s.dropped + s.chunks.length; c++) parts.push(s.chunkBytesAt(c));
    }
    const t = (w: 'k' | 'v'): StreamState => ({
      length: l.bulk[w].length,
      encoded: l.bulk[w].stream.encoded,
      chunks: l.bulk[w].stream.chunks.length,
      dropped: l.bulk[w].stream.dropped,
    });
    state.push({ n: l.n, prompt: l.prompt ?? null, ringLo: l.ringLo, streamEnd: l.streamEnd, evicted: l.evicted, k: t('k'), v: t('v') });
  }
  const payloadBytes = parts.reduce((s, p) => s + p.length, 0);
  const header: Header = {
    layers: cache.layers,
    kvHeads: cache.kvHeads,
    headDim: cache.headDim,
    capacity: cache.capacity,
    chunkTokens: cache.chunkTokens,
    policy: cache.policy,
    state,
    payloadBytes,
  };
  return { header, parts };
}

/** The cache as one cache-file image (header, payload, checksum): for stores that hold bytes. */
export function encodeCache(cache: KvCache): Uint8Array {
  const { header, parts } = cacheParts(cache);
  return writeFrame(FRAME, header, parts, CACHE_FILE_VERSION);
}

export function saveCache(cache: KvCache, path: string): void {
  // Written beside the target then renamed (a crash never leaves a half-written cache file), straight from
  // the cache's memory: no copy of the cache is made.
  const { header, parts } = cacheParts(cache);
  writeFrameFile(path, FRAME, header, parts, CACHE_FILE_VERSION);
}

function bad(message: string): never {
  throw new FileFormatError('cache file', message);
}

/** Verifies a cache file completely (checksum first), then builds the cache reading its payload in pieces. */
export function loadCache(path: string, make: (o: KvCacheOptions) => KvCache): KvCache {
  const f = readFrameFile<Header>(FRAME, path);
  try {
    return build(f.version, f.header, f.bodyBytes, (n) => f.take(n), path, make);
  } finally {
    f.close();
  }
}

/** Verifies a cache-file image completely, then builds the cache it holds; `path` names it in errors. */
export function decodeCache(buf: Uint8Array, path: string, make: (o: KvCacheOptions) => KvCache): KvCache {
  const { version, header, body } = readFrame<Header>(FRAME, buf, path);
  let off = 0;
  return build(
    version,
    header,
    body.length,
    (n) => {
      if (off + n > body.length) bad(`${path}: payload shorter than its header describes`);
      const s = body.subarray(off, off + n);
      off += n;
      return s;
    },
    path,
    make,
  );
}

/**
 * The cache a verified header describes, its payload (`payload` bytes) read in order by take(n) (a view
 * valid until the next take). Counts are checked before they are trusted; on any error nothing is kept.
 */
function build(version: number, h: Header, payload: number, take: (n: number) => Uint8Array, path: string, make: (o: KvCacheOptions) => KvCache): KvCache {
  if (payload !== h.payloadBytes) bad(`${path}: payload is ${payload} bytes, header says ${h.payloadBytes}`);
  let cache: KvCache;
  try {
    cache = make({ layers: h.layers, kvHeads: h.kvHeads, headDim: h.headDim, capacity: h.capacity, policy: h.policy, chunkTokens: h.chunkTokens });
  } catch (e) {
    if (e instanceof KvpackError) bad(`${path}: header describes an invalid cache (${e.message})`);
    throw e;
  }
  if (version < 4) {
    cache.dispose();
    bad(`${path} is version ${version}: its window ring predates batch-invariant exact windows (version 4); re-create the cache`);
  }
  try {
    let off = 0;
    const next = (n: number) => {
      if (off + n > payload) bad(`${path}: payload shorter than its header describes`);
      off += n;
      return take(n);
    };
    if (!Array.isArray(h.state) || h.state.length !== h.layers) bad(`${path}: header has ${h.state?.length} layer states for ${h.layers} layers`);
    h.state.forEach((st, i) => {
      const l = cache.layerCache(i);
      checkState(
        st,
        i,
        h,
        l.bulk.k.staging ? l.bulk.k.stream.format.blockValues : 1,
        l.bulk.v.staging ? l.bulk.v.stream.format.blockValues : 1,
        l.plan.slidingWindow,
        path,
      );
      for (const s of l.stores()) s.raw().set(next(s.bytes));
      for (const w of ['k', 'v'] as const) {
        const stream = l.bulk[w].stream;
        stream.dropped = st[w].dropped;
        for (let c = 0; c < st[w].chunks; c++) stream.loadChunk(next(stream.chunkBytes));
        stream.encoded = st[w].encoded;
        l.bulk[w].length = st[w].length;
      }
      l.n = st.n;
      l.prompt = st.prompt ?? undefined;
      l.ringLo = st.ringLo;
      l.streamEnd = st.streamEnd;
      l.evicted = st.evicted;
    });
    if (off !== payload) bad(`${path}: ${payload - off} trailing payload bytes`);
  } catch (e) {
    cache.dispose();
    throw e;
  }
  return cache;
}

const isCount = (x: unknown): x is number => typeof x === 'number' && Number.isInteger(x) && x >= 0;

/** A checksum only proves the bytes are the writer's; the counts must still describe a possible cache. */
function checkState(st: LayerState, i: number, h: Header, kB: number, vB: number, slidingWindow: number, path: string): void {
  const where = `${path}: layer ${i}`;
  if (!st || typeof st !== 'object') bad(`${where}: missing state`);
  if (!isCount(st.n) || st.n > h.capacity) bad(`${where} holds ${st.n} positions, capacity is ${h.capacity}`);
  if (!isCount(st.ringLo) || !isCount(st.streamEnd) || st.ringLo > st.n || st.streamEnd > st.n) bad(`${where} has window bounds outside [0, ${st.n}]`);
  if (st.prompt !== null && (!isCount(st.prompt) || st.prompt > st.n)) bad(`${where} has prompt ${st.prompt} beyond its length`);
  for (const [w, B] of [
    ['k', kB],
    ['v', vB],
  ] as const) {
    const t = st[w];
    if (!t || !isCount(t.length) || !isCount(t.encoded) || !isCount(t.chunks)) bad(`${where} ${w}: bad stream counts`);
    // B is the staging group size (1 for token-axis formats, which encode on arrival).
    const pending = t.length - t.encoded;
    if (t.length > st.n || pending < 0 || pending >= B || t.encoded % B !== 0) bad(`${where} ${w}: ${t.encoded} encoded of ${t.length} is impossible`);
    if (!isCount(t.dropped) || t.dropped * h.chunkTokens > t.encoded) bad(`${where} ${w}: ${t.dropped} dropped chunks of ${t.encoded} encoded positions`);
    if (t.chunks !== Math.ceil(t.encoded / h.chunkTokens) - t.dropped)
      bad(`${where} ${w}: ${t.chunks} chunks held for ${t.encoded} encoded positions, ${t.dropped} dropped`);
  }
  // Only a sliding-window layer drops anything, K and V alike, and never past what it holds.
  if (!isCount(st.evicted) || st.evicted > st.n) bad(`${where} has first held position ${st.evicted} beyond its length ${st.n}`);
  if (st.k.dropped !== st.v.dropped) bad(`${where}: K dropped ${st.k.dropped} chunks, V ${st.v.dropped}`);
  if (slidingWindow === 0 && (st.k.dropped > 0 || st.evicted > 0)) bad(`${where} dropped positions but its policy keeps every position`);
}
