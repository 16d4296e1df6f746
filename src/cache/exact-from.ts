// Which positions a query reads exact, as a function of its position alone (never of its batch): the live
// cache (layer.ts), the accounting (accounting.ts) and the resume rows (store/cache-chunks.ts) share it.
import type { LayerPlan } from './policy.js';
import { firstPositionOf, streamIndexOf } from './swa.js';

/**
 * The exact-from bound of the query at p: it reads exact every position in [x, p] (besides the sinks and
 * anchors, exact for everyone), packed the ones below. x = p - W + 1, lowered over a per-channel bulk to
 * the first position of the group still open at p: stream positions that entered the bulk by p (overlay:
 * every position <= p; residual: those before the window) but whose group is not complete counting only
 * those. Nothing packed can hold them yet, so they stay exact.
 */
export function exactFrom(plan: LayerPlan, p: number, a0: number, a1: number): number {
  const base = Math.max(0, p - plan.window + 1);
  let x = base;
  for (const f of [plan.k, plan.v]) {
    if (f.axis !== 'channel') continue;
    const entered = plan.windowMode === 'overlay' ? p + 1 : streamIndexOf(plan, base, a0, a1);
    const open = Math.floor(entered / f.blockValues) * f.blockValues;
    if (open < entered) x = Math.min(x, firstPositionOf(plan, open, a0, a1));
  }
  return x;
}

/**
 * Ring index of position p (not a sink or anchor): the positions before it that enter the ring, counted.
 * Sinks [0, S) and anchors [a0, a1) (a0 >= S) never do, so the ring's rows are consecutive in ring index.
 */
export function ringIndexOf(plan: LayerPlan, p: number, a0: number, a1: number): number {
  return p - Math.min(p, plan.sinks) - Math.max(0, Math.min(a1, p) - a0);
}

/** The position with ring index i (the inverse of ringIndexOf on positions that enter the ring). */
export function positionOfRingIndex(plan: LayerPlan, i: number, a0: number, a1: number): number {
  const p = plan.sinks + i;
  return a1 > a0 && p >= a0 ? p + (a1 - a0) : p;
}

/**
 * Slots of the exact ring (slot = ring index mod slots): a query at p reads [exactFrom(p), p] from it, the
 * window plus, over a per-channel bulk, an open group of up to blockValues - 1 stream positions.
 */
export function ringSlots(plan: LayerPlan): number {
  const B = Math.max(...[plan.k, plan.v].map((f) => (f.axis === 'channel' ? f.blockValues : 0)));
  if (B === 0) return plan.window;
  if (plan.windowMode === 'overlay') return Math.max(plan.window, B - 1);
  return plan.window + B - 1;
}

/** "window W" as commands print it: a per-channel bulk still reads its open group exact (exactFrom). */
export function windowLabel(window: number): string {
  return `window ${window} (per-channel K/V: + up to 31 open-group positions exact)`;
}
