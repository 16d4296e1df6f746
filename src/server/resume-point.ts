// Where a cache can take a new prompt's positions: the deepest position r at which it is resumable
// (KvCache.resumableAt: it holds [0, r) and every exact row a query at r or later reads), so rewinding there
// and appending the rest computes what a cold prefill computes, bit for bit. Recomputing positions does not
// bring back exact rows a cache no longer holds (each position's K/V read them at every lower layer), so a
// finished slot resumes only at its own end; resume points elsewhere are frozen snapshots (prefix-cache.ts).
import type { KvCache } from '../cache/kvcache.js';

/** The deepest r <= max a cache resumes at (0: only a cold start). Tests swap it for an unsafe rule. */
export type ResumeRule = (cache: KvCache, max: number) => number;

export const deepestResumable: ResumeRule = (cache, max) => {
  const top = Math.min(max, cache.length);
  if (cache.frozen) {
    // A frozen entry never changes: find its resume points once (every lookup would scan them again).
    let points = frozenPoints.get(cache);
    if (!points) frozenPoints.set(cache, (points = scan(cache, cache.length, true)));
    return points.find((r) => r <= top) ?? 0;
  }
  return scan(cache, top, false)[0] ?? 0;
};

/** Resume points of frozen caches, descending. */
const frozenPoints = new WeakMap<KvCache, number[]>();

/**
 * The resume points in (sinks, top], descending (all of them, or only the first found). A point inside the
 * sinks is resumable but saves nothing worth a fork: a cold start.
 */
function scan(cache: KvCache, top: number, all: boolean): number[] {
  const out: number[] = [];
  let floor = 0;
  for (const plan of cache.plans) floor = Math.max(floor, plan.sinks);
  for (let r = top; r > floor && (all || out.length === 0); r--) if (cache.resumableAt(r)) out.push(r);
  return out;
}

/**
 * Negative control only: resumes at the whole match whether or not the cache still holds the exact rows
 * there (what the server did before the cache was batch-invariant). Its answers must differ from cold ones.
 */
export const wholeMatchUnsafe: ResumeRule = (cache, max) => Math.min(max, cache.length);
