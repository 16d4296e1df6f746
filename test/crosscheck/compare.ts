// Metrics between two step runs of the same prompt: token agreement and logit distances per step.
import { logSoftmax64 } from '../../src/lab/metrics.js';

/** tokens[i] was chosen from logits[i] (the row after the prompt, then after each fed token). */
export interface StepRun {
  tokens: number[];
  logits: Float32Array[];
}

export interface RunDiff {
  steps: number;
  /** Steps before the first differing token (= steps when identical). */
  sameTokens: number;
  /** Steps whose logits were compared: up to and including the first differing token (same history). */
  compared: number;
  /** The reference's top-1 minus top-2 logit at the first differing token (NaN when identical). */
  divergeMargin: number;
  /** max |a - b| over all logits, divided by max |ref logit|: scale-free. */
  maxRel: number;
  maxAbs: number;
  /** KL(softmax(ref) || softmax(test)) per step: mean and max. */
  klMean: number;
  klMax: number;
  /** Share of steps whose argmax agrees. */
  top1: number;
  /** Smallest top-1 minus top-2 logit margin of the reference: how close the closest greedy call was. */
  minMargin: number;
  /**
   * Steps whose argmax differs although the reference's margin exceeds 2 x maxAbs: a logit error of at
   * most maxAbs cannot flip those, so each one is a real disagreement, not a near-tie.
   */
  unexplainedFlips: number;
}

/** Logit metrics over the steps both runs share a history for (after a differing token the histories differ). */
export function diffRuns(ref: StepRun, test: StepRun): RunDiff {
  const total = Math.min(ref.logits.length, test.logits.length);
  let sameTokens = 0;
  while (sameTokens < total && ref.tokens[sameTokens] === test.tokens[sameTokens]) sameTokens++;
  const steps = Math.min(total, sameTokens + 1);
  let maxAbs = 0;
  let scale = 0;
  let klSum = 0;
  let klMax = 0;
  let agree = 0;
  let minMargin = Infinity;
  for (let s = 0; s < steps; s++) {
    const a = ref.logits[s]!;
    const b = test.logits[s]!;
    for (let i = 0; i < a.length; i++) {
      maxAbs = Math.max(maxAbs, Math.abs(a[i]! - b[i]!));
      scale = Math.max(scale, Math.abs(a[i]!));
    }
    const kl = klDivergence(a, b);
    klSum += kl;
    klMax = Math.max(klMax, kl);
    const [ta, margin] = top2(a);
    if (ta === top2(b)[0]) agree++;
    minMargin = Math.min(minMargin, margin);
  }
  let unexplainedFlips = 0;
  for (let s = 0; s < steps; s++) {
    const [ta, margin] = top2(ref.logits[s]!);
    if (ta !== top2(test.logits[s]!)[0] && margin > 2 * maxAbs) unexplainedFlips++;
  }
  const divergeMargin = sameTokens < total ? top2(ref.logits[sameTokens]!)[1] : NaN;
  return {
    steps: total,
    sameTokens,
    compared: steps,
    divergeMargin,
    maxAbs,
    maxRel: maxAbs / scale,
    klMean: klSum / steps,
    klMax,
    top1: agree / steps,
    minMargin,
    unexplainedFlips,
  };
}

function klDivergence(ref: Float32Array, test: Float32Array): number {
  const lp = logSoftmax64(ref);
  const lq = logSoftmax64(test);
  let kl = 0;
  for (let i = 0; i < lp.length; i++) kl += Math.exp(lp[i]!) * (lp[i]! - lq[i]!);
  return Math.max(0, kl);
}

/** [argmax, top-1 minus top-2 value]. */
function top2(x: Float32Array): [number, number] {
  let best = 0;
  for (let i = 1; i < x.length; i++) if (x[i]! > x[best]!) best = i;
  let second = -Infinity;
  for (let i = 0; i < x.length; i++) if (i !== best) second = Math.max(second, x[i]!);
  return [best, x[best]! - second];
}

export function formatDiff(d: RunDiff): string {
  const split = d.sameTokens < d.steps ? ` (first differs at a margin of ${d.divergeMargin.toFixed(4)}; logits over ${d.compared} steps)` : '';
  return (
    `tokens ${d.sameTokens}/${d.steps} same${split}, logits maxAbs ${d.maxAbs.toExponential(2)} maxRel ${d.maxRel.toExponential(2)}, ` +
    `KL mean ${d.klMean.toExponential(2)} max ${d.klMax.toExponential(2)}, top1 ${(100 * d.top1).toFixed(1)}%, min margin ${d.minMargin.toFixed(3)}`
  );
}
