// Where a cache can take a new prompt's positions: the deepest position r at which it is resumable
// (KvCache.resumableAt: it holds [0, r) and every exact row a query at r or later reads), so rewinding there
// and appending the rest computes what a cold prefill computes, bit for bit. Recomputing positions does not
// bring back exact rows a cache no longer holds (each position's K/V read them at every lower layer), so a
// finished slot resumes only at its own end; resume points elsewhere are frozen snapshots (prefix-cache.ts).
import type { KvCache } from '../cache/kvcache.js';

/** The deepest r <= max a cache resumes at (0: only a cold start). Tests swap it for an unsafe rule. */
export type ResumeRule = (cache: KvCache, max: number) => number;

export const deepestResumable: ResumeRule = (cache, max) => {
  for (let r = Math.min(max, cache.length); r > 0; r--) if (resumableAt(cache, r)) return r;
  return 0;
};

// TODO(a1 merge): KvCache.resumableAt; until then its contract for a W-row ring (the cache's end and one before).
function resumableAt(cache: KvCache, r: number): boolean {
  const own = (cache as unknown as { resumableAt?: (r: number) => boolean }).resumableAt;
  return own ? own.call(cache, r) : r === cache.length || r === cache.length - 1;
}

/**
 * Negative control only: resumes at the whole match whether or not the cache still holds the exact rows
 * there (what the server did before the cache was batch-invariant). Its answers must differ from cold ones.
 */
export const wholeMatchUnsafe: ResumeRule = (cache, max) => Math.min(max, cache.length);
