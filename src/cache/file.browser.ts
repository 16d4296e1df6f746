// Browser twin of file.ts (scripts/build-browser.mjs swaps it in): cache files are paths on disk, which a
// page does not have; everything else about a cache works the same.
import { PlatformError } from '../errors.js';
import type { KvCache, KvCacheOptions } from './kvcache.js';

export { CACHE_FILE_VERSION } from './file-version.js';

const refuse = (path: string): never => {
  throw new PlatformError(`'${path}': cache files need Node's fs (KvCache.save/restore are not available in a browser)`);
};

export function saveCache(_cache: KvCache, path: string): void {
  refuse(path);
}

export function loadCache(path: string, _make: (o: KvCacheOptions) => KvCache): KvCache {
  return refuse(path);
}

// Cache-file images (slot files, stores) hash with node:crypto: the page has no use for them either.
export function encodeCache(_cache: KvCache): Uint8Array {
  return refuse('a cache-file image');
}

export function decodeCache(_buf: Uint8Array, path: string, _make: (o: KvCacheOptions) => KvCache): KvCache {
  return refuse(path);
}
