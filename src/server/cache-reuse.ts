// Reusing a cache's positions for a new request: rewind to the deepest resumable point of the shared prefix,
// and forget where the previous request's decode began, so the new prompt's positions are not taken for that
// request's decode anchors.
import type { KvCache } from '../cache/kvcache.js';
import { rewindForReuse } from '../model/generate.js';
import type { ResumeRule } from './resume-point.js';

/**
 * The positions of `cached` (the tokens `cache` holds) a request for `prompt` may keep: the common prefix, at
 * least one prompt token left to feed, with decode anchors never past the previous request's prompt
 * (`decodeStart`, whose anchors a new prompt must not continue), down to where `resume` says the cache is
 * resumable. The caller rewinds there (0: a cold start).
 */
export function reusable(
  cache: KvCache,
  cached: readonly number[],
  prompt: readonly number[],
  decodeStart: number | undefined,
  resume: ResumeRule,
): { matched: number; keep: number } {
  let matched = commonPrefix(cached, prompt, Math.min(cache.length, prompt.length - 1));
  // The cache's own decode start counts too: a restored slot file carries its anchors but no decodeStart.
  const anchored = decodeStart ?? cache.decodeStart;
  if (cache.policy.anchors && anchored !== undefined) matched = Math.min(matched, anchored);
  return { matched, keep: resume(cache, matched) };
}

/** Rewinds a cache to `keep` for a new prompt (clears it when that fails: see rewindForReuse); returns what is kept. */
export function rewindTo(cache: KvCache, keep: number): number {
  const kept = rewindForReuse(cache, keep);
  cache.dropDecodeStart();
  return kept;
}

export function commonPrefix(a: readonly number[], b: readonly number[], max = Infinity): number {
  const n = Math.min(a.length, b.length, max);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}
