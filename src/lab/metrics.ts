// Quality metrics, each named for exactly what it computes. Sums run in float64.
import { ShapeError, ArgumentError } from '../errors.js';

function sameLength(where: string, a: ArrayLike<number>, b: ArrayLike<number>): void {
  if (a.length !== b.length) throw new ShapeError(`${where}: lengths ${a.length} and ${b.length} differ`);
}

/** ||test - ref||_2 / ||ref||_2. A zero reference gives 0 when test equals it, Infinity otherwise. */
export function relL2(test: ArrayLike<number>, ref: ArrayLike<number>): number {
  sameLength('relL2', test, ref);
  let num = 0;
  let den = 0;
  for (let i = 0; i < ref.length; i++) {
    const d = test[i]! - ref[i]!;
    num += d * d;
    den += ref[i]! * ref[i]!;
  }
  if (den === 0) return num === 0 ? 0 : Infinity;
  return Math.sqrt(num / den);
}

/**
 * rms(test - ref) / rms(ref) over the same elements: numerically relL2, named as seed 000 reports its
 * attention-output probe ("relative RMS vs FP16").
 */
export function relRms(test: ArrayLike<number>, ref: ArrayLike<number>): number {
  return relL2(test, ref);
}

/** ||test - ref||^2 / ||ref||^2 (normalized mean squared error; the square of relL2). */
export function nmse(test: ArrayLike<number>, ref: ArrayLike<number>): number {
  const r = relL2(test, ref);
  return r * r;
}

/** max |test - ref|. */
export function maxAbs(test: ArrayLike<number>, ref: ArrayLike<number>): number {
  sameLength('maxAbs', test, ref);
  let m = 0;
  for (let i = 0; i < ref.length; i++) m = Math.max(m, Math.abs(test[i]! - ref[i]!));
  return m;
}

/** Softmax in float64 of scores[off .. off+n) (max subtracted first, so large logits do not overflow). */
export function softmax64(scores: ArrayLike<number>, off = 0, n = scores.length - off): Float64Array {
  let max = -Infinity;
  for (let i = 0; i < n; i++) max = Math.max(max, scores[off + i]!);
  const p = new Float64Array(n);
  let sum = 0;
  for (let i = 0; i < n; i++) sum += p[i] = Math.exp(scores[off + i]! - max);
  for (let i = 0; i < n; i++) p[i]! /= sum;
  return p;
}

/** log-softmax in float64 (stable: x - max - log(sum(exp(x - max)))). */
export function logSoftmax64(scores: ArrayLike<number>, off = 0, n = scores.length - off): Float64Array {
  let max = -Infinity;
  for (let i = 0; i < n; i++) max = Math.max(max, scores[off + i]!);
  let sum = 0;
  for (let i = 0; i < n; i++) sum += Math.exp(scores[off + i]! - max);
  const lse = max + Math.log(sum);
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) out[i] = scores[off + i]! - lse;
  return out;
}

/**
 * Share of attention probability on the last `window` positions: weights are one query's reference
 * attention probabilities over positions 0..n-1 (need not be normalized). window = 0 gives 0.
 */
export function massInWindow(weights: ArrayLike<number>, window: number): number {
  const n = weights.length;
  if (!Number.isInteger(window) || window < 0 || window > n) throw new ArgumentError(`massInWindow: window ${window} outside [0, ${n}]`);
  let total = 0;
  let inside = 0;
  for (let i = 0; i < n; i++) {
    total += weights[i]!;
    // Explicit index test, not a negative slice: x[-0:] would be the whole array.
    if (i >= n - window) inside += weights[i]!;
  }
  return total === 0 ? 0 : inside / total;
}

/** Logits of `positions` x `vocab`, row-major. */
export interface LogitRows {
  readonly logits: ArrayLike<number>;
  readonly vocab: number;
}

function rowsOf(where: string, ref: LogitRows, test: LogitRows): number {
  if (ref.vocab !== test.vocab || ref.vocab <= 0) throw new ShapeError(`${where}: vocab ${ref.vocab} vs ${test.vocab}`);
  sameLength(where, ref.logits, test.logits);
  if (ref.logits.length % ref.vocab !== 0) throw new ShapeError(`${where}: ${ref.logits.length} logits is not rows x ${ref.vocab}`);
  const n = ref.logits.length / ref.vocab;
  if (n === 0) throw new ShapeError(`${where}: no positions`);
  return n;
}

function argmax(x: ArrayLike<number>, off: number, n: number): number {
  let best = 0;
  for (let i = 1; i < n; i++) if (x[off + i]! > x[off + best]!) best = i;
  return best;
}

/** Mean over positions of KL(softmax(ref) || softmax(test)), float64 log-softmax (stable). */
export function klMean(ref: LogitRows, test: LogitRows): number {
  const n = rowsOf('klMean', ref, test);
  const V = ref.vocab;
  let total = 0;
  for (let r = 0; r < n; r++) {
    const lp = logSoftmax64(ref.logits, r * V, V);
    const lq = logSoftmax64(test.logits, r * V, V);
    let kl = 0;
    for (let i = 0; i < V; i++) {
      const p = Math.exp(lp[i]!);
      if (p > 0) kl += p * (lp[i]! - lq[i]!);
    }
    total += Math.max(0, kl);
  }
  return total / n;
}

/**
 * Share of positions whose argmax token agrees. (llama-perplexity's "Same top p" is this number; our
 * sameTopP below compares whole nucleus sets.)
 */
export function top1Agree(ref: LogitRows, test: LogitRows): number {
  const n = rowsOf('top1Agree', ref, test);
  let same = 0;
  for (let r = 0; r < n; r++) if (argmax(ref.logits, r * ref.vocab, ref.vocab) === argmax(test.logits, r * ref.vocab, ref.vocab)) same++;
  return same / n;
}

/** Sorted token ids of the top-p nucleus (smallest prefix by probability reaching mass p; ties by id). */
export function nucleus(logits: ArrayLike<number>, off: number, vocab: number, p: number): number[] {
  const probs = softmax64(logits, off, vocab);
  const order = [...probs.keys()].sort((a, b) => probs[b]! - probs[a]! || a - b);
  const out: number[] = [];
  let mass = 0;
  for (const id of order) {
    out.push(id);
    mass += probs[id]!;
    if (mass >= p) break;
  }
  return out.sort((a, b) => a - b);
}

/** Share of positions where ref and test have the same top-p nucleus (same token set). */
export function sameTopP(ref: LogitRows, test: LogitRows, p = 0.9): number {
  const n = rowsOf('sameTopP', ref, test);
  if (!(p > 0 && p <= 1)) throw new ArgumentError(`sameTopP: p ${p} outside (0, 1]`);
  let same = 0;
  for (let r = 0; r < n; r++) {
    const a = nucleus(ref.logits, r * ref.vocab, ref.vocab, p);
    const b = nucleus(test.logits, r * ref.vocab, ref.vocab, p);
    if (a.length === b.length && a.every((x, i) => x === b[i])) same++;
  }
  return same / n;
}

/** Mean negative log-likelihood (nats) of targets[r] under row r's logits. */
export function nllMean(rows: LogitRows, targets: ArrayLike<number>): number {
  const V = rows.vocab;
  const n = rows.logits.length / V;
  if (!Number.isInteger(n) || n !== targets.length || n === 0)
    throw new ShapeError(`nllMean: ${rows.logits.length} logits / ${V} vocab vs ${targets.length} targets`);
  let total = 0;
  for (let r = 0; r < n; r++) {
    const t = targets[r]!;
    if (!(t >= 0 && t < V)) throw new ArgumentError(`nllMean: target ${t} outside [0, ${V})`);
    total -= logSoftmax64(rows.logits, r * V, V)[t]!;
  }
  return total / n;
}

/** NLL and perplexity of test minus ref on the same targets (positive = test is worse). */
export function nllDelta(
  ref: LogitRows,
  test: LogitRows,
  targets: ArrayLike<number>,
): { nllRef: number; nllTest: number; nllDelta: number; pplRef: number; pplTest: number; pplDelta: number } {
  rowsOf('nllDelta', ref, test);
  const nllRef = nllMean(ref, targets);
  const nllTest = nllMean(test, targets);
  return { nllRef, nllTest, nllDelta: nllTest - nllRef, pplRef: Math.exp(nllRef), pplTest: Math.exp(nllTest), pplDelta: Math.exp(nllTest) - Math.exp(nllRef) };
}

/** Length of the common prefix of two token sequences. */
export function matchedPrefix(ref: ArrayLike<number>, test: ArrayLike<number>): number {
  const n = Math.min(ref.length, test.length);
  let i = 0;
  while (i < n && ref[i] === test[i]) i++;
  return i;
}

export interface ExactMatch {
  /** Matched prefix length per continuation. */
  readonly prefix: number[];
  /** Mean matched prefix length. */
  readonly prefixMean: number;
  /** horizon -> share of continuations whose first `horizon` tokens all match. */
  readonly fullAt: Record<number, number>;
}

/**
 * Exact match of greedy continuations vs the reference, at horizons (seed 002: 50 and 100). A
 * continuation shorter than a horizon counts as matched there only if it equals the whole reference.
 */
export function exactMatch(ref: readonly ArrayLike<number>[], test: readonly ArrayLike<number>[], horizons: readonly number[] = [50, 100]): ExactMatch {
  if (ref.length !== test.length || ref.length === 0) throw new ShapeError(`exactMatch: ${ref.length} references vs ${test.length} continuations`);
  const prefix = ref.map((r, i) => matchedPrefix(r, test[i]!));
  const fullAt: Record<number, number> = {};
  for (const h of horizons) {
    let ok = 0;
    for (let i = 0; i < ref.length; i++) {
      const need = Math.min(h, ref[i]!.length);
      if (prefix[i]! >= need && test[i]!.length >= need) ok++;
    }
    fullAt[h] = ok / ref.length;
  }
  return { prefix, prefixMean: prefix.reduce((s, x) => s + x, 0) / prefix.length, fullAt };
}
