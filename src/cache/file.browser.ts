// Browser twin of file.ts (scripts/build-browser.mjs swaps it in): cache files are paths on disk, which a
// page does not have; everything else about a cache works the same.
import { PlatformError } from '../errors.js';
import type { KvCache, KvCacheOptions } from './kvcache.js';

export const CACHE_FILE_VERSION = 4;

const refuse = (path: string): never => {
  throw new PlatformError(`'${path}': cache files need Node's fs (KvCache.save/restore are not available in a browser)`);
};

export function saveCache(_cache: KvCache, path: string): void {
  refuse(path);
}

export function loadCache(path: string, _make: (o: KvCacheOptions) => KvCache): KvCache {
  return refuse(path);
}
