// Cache files: a versioned binary snapshot (header JSON, packed bytes, sha256) written atomically. Files are
// written and read piece by piece (io/framed-file.ts): a cache may be several GiB; images in memory (slot
// files, shared stores) have the same bytes.
import { CacheStateError, FileFormatError, KvpackError } from '../errors.js';
import { readFrame, writeFrame, type FrameSpec } from '../io/framed.js';
import { readFrameFile, writeFrameFile } from '../io/framed-file.js';
import type { KvCache, KvCacheOptions } from './kvcache.js';
import type { CachePolicy } from './policy.js';
import { arrayList, readArrays, stateBytes, type LayerMeta } from './layer-state.js';
import { CACHE_FILE_VERSION } from './file-version.js';

export { CACHE_FILE_VERSION };
/** Largest layer read in one piece (Node reads at most 2 GiB per call; a buffer is capped at 4 GiB). */
const ONE_TAKE_MAX = 1 << 30;
/** The frame (io/framed.ts); a header over 16 MiB is not a cache header (guards JSON.parse). */
const FRAME: FrameSpec = { kind: 'cache file', magic: 'KVPK', versions: [1, 2, 3, 4], maxHeader: 16 << 20, checksum: true };

interface Header {
  layers: number;
  kvHeads: number;
  headDim: number;
  capacity: number;
  chunkTokens: number;
  policy: CachePolicy;
  /** Each layer's LayerMeta (cache/layer-state.ts). */
  state: LayerMeta[];
  payloadBytes: number;
}

/** The header and payload parts of a cache (views of its memory: write them before the cache changes). */
function cacheParts(cache: KvCache): { header: Header; parts: Uint8Array[] } {
  const layers = cache.state();
  const parts = layers.flatMap((l) => arrayList(l.arrays));
  const payloadBytes = parts.reduce((s, p) => s + p.length, 0);
  const header: Header = {
    layers: cache.layers,
    kvHeads: cache.kvHeads,
    headDim: cache.headDim,
    capacity: cache.capacity,
    chunkTokens: cache.chunkTokens,
    policy: cache.policy,
    state: layers.map((l) => l.meta),
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
 * The cache a verified header describes, its payload (`payload` bytes) read in order by take(n), through
 * KvCache.restoreState (counts checked before they are trusted); on any error nothing is kept.
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
    // One take per layer (a view valid until the next take, i.e. until that layer is built), cut into its
    // arrays; a layer too large for one read takes each array and keeps a copy.
    cache.restoreState(h.state, (i, layout) => {
      const total = stateBytes(layout, h.state[i]!);
      if (total > ONE_TAKE_MAX) return readArrays(layout, h.state[i]!, (n) => next(n).slice());
      const bytes = next(total);
      let at = 0;
      return readArrays(layout, h.state[i]!, (n) => bytes.subarray(at, (at += n)));
    });
    if (off !== payload) bad(`${path}: ${payload - off} trailing payload bytes`);
  } catch (e) {
    cache.dispose();
    if (e instanceof CacheStateError) bad(`${path}: ${e.message}`);
    throw e;
  }
  return cache;
}
