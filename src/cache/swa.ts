// Sliding-window retention (llama.cpp's SWA cache): a layer whose queries read only the last N positions
// frees bulk chunks wholly older than that. The live cache (layer.ts) and the closed-form accounting
// (accounting.ts) both use these functions, so what is dropped and what is counted cannot disagree.
import { PolicyError } from '../errors.js';
import type { CachePolicy, LayerOverride, LayerPlan } from './policy.js';

/**
 * Bulk stream index of position p: overlay p; residual p minus the exact positions before it (sinks
 * [0, S), anchors [a0, a1)), since those never enter the stream.
 */
export function streamIndexOf(plan: LayerPlan, p: number, a0: number, a1: number): number {
  if (plan.windowMode === 'overlay') return p;
  return p - Math.min(p, plan.sinks) - Math.max(0, Math.min(a1, p) - a0);
}

/** Smallest position p with streamIndexOf(p) >= i: a layer whose stream starts at index i holds positions >= p. */
export function firstPositionOf(plan: LayerPlan, i: number, a0: number, a1: number): number {
  if (plan.windowMode === 'overlay' || i === 0) return i;
  // Stream index j sits at j + S, shifted past the anchors once it reaches them; p is one past index i - 1.
  let last = i - 1 + plan.sinks;
  if (a1 > a0 && last >= a0) last += a1 - a0;
  return last + 1;
}

/**
 * First bulk stream index a layer keeps after an append whose first position is `batchStart`: every
 * whole chunk before the first position that batch's first query reads is dropped (0 on global layers).
 * `streamLength` caps it: a chunk is dropped only once complete.
 */
export function keptStreamStart(plan: LayerPlan, batchStart: number, streamLength: number, chunkTokens: number, a0: number, a1: number): number {
  if (plan.slidingWindow === 0) return 0;
  const bound = Math.max(0, batchStart - plan.slidingWindow + 1);
  return Math.floor(Math.min(streamIndexOf(plan, bound, a0, a1), streamLength) / chunkTokens) * chunkTokens;
}

/**
 * The policy a model's cache is built with: `windows[l]` > 0 marks layer l as sliding-window, and the
 * layer keeps only that many positions unless the policy says otherwise. A policy may keep more (a
 * larger window, or 0 = everything), never less, and may not drop positions on a global layer.
 */
export function withSlidingWindows(policy: CachePolicy, windows: readonly number[]): CachePolicy {
  const layers: Record<string, LayerOverride> = { ...(policy.layers ?? {}) };
  windows.forEach((w, l) => {
    const o = policy.layers?.[String(l)];
    const own = o !== undefined && 'slidingWindow' in o;
    const field = own ? `layers.${l}.slidingWindow` : 'slidingWindow';
    const set = own ? o.slidingWindow : policy.slidingWindow;
    if (set === undefined) {
      if (w > 0) layers[String(l)] = { ...o, slidingWindow: w };
    } else if (typeof set === 'number' && set > 0 && w === 0) {
      throw new PolicyError(field, `${set} on layer ${l}, which attends over every position (a global layer cannot drop any)`);
    } else if (typeof set === 'number' && set > 0 && set < w) {
      throw new PolicyError(field, `${set} on layer ${l} is shorter than the model's sliding window ${w}: attention would read dropped positions`);
    }
  });
  return Object.keys(layers).length > 0 ? { ...policy, layers } : { ...policy };
}
