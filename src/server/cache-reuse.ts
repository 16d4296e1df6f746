// Reusing a cache's positions for a new request: rewind to the shared prefix, and forget where the previous
// request's decode began, so the new prompt's positions are not taken for that request's decode anchors.
import type { KvCache } from '../cache/kvcache.js';
import { rewindForReuse } from '../model/generate.js';

/**
 * Clears each layer's decode start when it is at or past the cache's length: positions appended next
 * belong to a new prompt. (Starts below the length stay: anchors already written there are still read.)
 */
export function dropDecodeStart(cache: KvCache): void {
  const n = cache.length;
  for (let l = 0; l < cache.layers; l++) {
    const lc = cache.layerCache(l);
    if (lc.prompt !== undefined && lc.prompt >= n) lc.prompt = undefined;
  }
}

/**
 * Positions of `cached` (the tokens `cache` holds) a request for `prompt` can keep: the common prefix, at
 * least one prompt token left to feed, and with decode anchors never past the previous request's prompt
 * (`decodeStart`), whose anchors a new prompt must not continue. Rewinds the cache there and returns it
 * (0 when sliding-window layers already dropped what that position needs: see rewindForReuse).
 */
export function reuseCached(cache: KvCache, cached: readonly number[], prompt: readonly number[], decodeStart: number | undefined): number {
  let keep = commonPrefix(cached, prompt, Math.min(cache.length, prompt.length - 1));
  if (cache.policy.anchors && decodeStart !== undefined) keep = Math.min(keep, decodeStart);
  keep = rewindForReuse(cache, keep);
  dropDecodeStart(cache);
  return keep;
}

export function commonPrefix(a: readonly number[], b: readonly number[], max = Infinity): number {
  const n = Math.min(a.length, b.length, max);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}
