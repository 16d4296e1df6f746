// The server's warm-up before it reports ready, as llama-server runs one (--no-warmup skips it): a throwaway
// cache takes a short prompt and greedy decode steps, so the first request does not pay for the thread pool's
// start (its workers compile the kernels: ~0.3 s) and V8 compiling the decode path. A process's first ~20
// decode steps ran at about half speed on two threads (bench/engine-long.ts WARM_STEPS). Nothing it does
// reaches a slot, the prefix cache or the metrics.
import type { AttentionPrecision } from '../cache/kvcache.js';
import type { CachePolicy } from '../cache/policy.js';
import type { Model } from '../model/model.js';
import { argmax } from '../model/sampler.js';

/** Prompt tokens, most decode steps and the time budget of a warm-up (it stops at whichever comes first). */
export const WARMUP_PROMPT = 32;
export const WARMUP_STEPS = 32;
export const WARMUP_MS = 2000;

export interface WarmupCache {
  readonly policy: CachePolicy;
  readonly attention: AttentionPrecision;
  readonly chunkTokens: number;
  /** Positions a slot holds: the warm-up's prompt and steps fit in it. */
  readonly ctx: number;
}

export interface WarmupReport {
  readonly promptTokens: number;
  readonly steps: number;
  readonly ms: number;
}

/** Runs the warm-up on a cache of its own (disposed after) and reports what it ran. */
export function warmUp(model: Model, c: WarmupCache, budgetMs = WARMUP_MS): WarmupReport {
  const t0 = performance.now();
  const promptTokens = Math.max(1, Math.min(WARMUP_PROMPT, c.ctx >> 1));
  const maxSteps = Math.max(0, Math.min(WARMUP_STEPS, c.ctx - promptTokens));
  const cache = model.createCache({ policy: c.policy, capacity: promptTokens + maxSteps, chunkTokens: c.chunkTokens, attention: c.attention });
  try {
    // The BOS, then ids spread over the vocabulary: the values do not matter, the code paths do.
    const prompt = Array.from({ length: promptTokens }, (_, i) => (i === 0 ? model.bos : (i * 7919) % model.nVocab));
    let next = argmax(model.forward(prompt, cache));
    let steps = 0;
    while (steps < maxSteps && performance.now() - t0 < budgetMs) {
      next = argmax(model.forward([next], cache));
      steps++;
    }
    return { promptTokens, steps, ms: performance.now() - t0 };
  } finally {
    cache.dispose();
  }
}
