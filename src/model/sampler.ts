// Token sampling from logits: logit bias and penalties (repetition; OpenAI's presence and frequency), then
// greedy (temperature 0) or top-k -> top-p -> min-p -> temperature -> a seeded draw. The order follows
// llama.cpp's default chain (penalties first, temp last).
import { ArgumentError } from '../errors.js';
import { Prng } from '../numeric/prng.js';

export interface SamplerOptions {
  /** 0 = greedy (argmax). Default 0.8 (llama.cpp's). */
  temperature?: number;
  /** Keep the k most likely tokens; 0 = off. */
  topK?: number;
  /** Keep the smallest set whose probability reaches p; 1 = off. */
  topP?: number;
  /** Drop tokens below minP x the top probability; 0 = off. */
  minP?: number;
  /** Divide positive logits (multiply negative) of recently seen tokens by this; 1 = off. */
  repeatPenalty?: number;
  /** How many recent tokens the penalty looks at. */
  repeatLastN?: number;
  /** OpenAI's presence_penalty: subtracted once from every token already generated; 0 = off. */
  presencePenalty?: number;
  /** OpenAI's frequency_penalty: subtracted per earlier occurrence among generated tokens; 0 = off. */
  frequencyPenalty?: number;
  /** OpenAI's logit_bias: added to a token's logit (-100 bans it, 100 all but forces it). */
  logitBias?: ReadonlyMap<number, number>;
  seed?: number;
}

function check(name: string, x: number, lo: number, hi: number): number {
  if (!(x >= lo && x <= hi)) throw new ArgumentError(`sampler: ${name} must be in [${lo}, ${hi}], got ${x}`);
  return x;
}

/** Index of the largest value (first on ties, like llama.cpp's greedy sampler). */
export function argmax(x: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < x.length; i++) if (x[i]! > x[best]!) best = i;
  return best;
}

export class Sampler {
  readonly temperature: number;
  readonly topK: number;
  readonly topP: number;
  readonly minP: number;
  readonly repeatPenalty: number;
  readonly repeatLastN: number;
  readonly presencePenalty: number;
  readonly frequencyPenalty: number;
  readonly logitBias: ReadonlyMap<number, number>;
  private readonly rng: Prng;

  constructor(o: SamplerOptions = {}) {
    this.temperature = check('temperature', o.temperature ?? 0.8, 0, 100);
    this.topK = check('topK', o.topK ?? 40, 0, Number.MAX_SAFE_INTEGER);
    this.topP = check('topP', o.topP ?? 0.95, 0, 1);
    this.minP = check('minP', o.minP ?? 0.05, 0, 1);
    this.repeatPenalty = check('repeatPenalty', o.repeatPenalty ?? 1, 0.01, 100);
    this.repeatLastN = check('repeatLastN', o.repeatLastN ?? 64, 0, Number.MAX_SAFE_INTEGER);
    this.presencePenalty = check('presencePenalty', o.presencePenalty ?? 0, -2, 2);
    this.frequencyPenalty = check('frequencyPenalty', o.frequencyPenalty ?? 0, -2, 2);
    this.logitBias = o.logitBias ?? new Map();
    for (const [t, b] of this.logitBias) {
      if (!Number.isInteger(t) || t < 0) throw new ArgumentError(`sampler: logitBias token ${t} must be a non-negative integer`);
      check(`logitBias[${t}]`, b, -100, 100);
    }
    this.rng = new Prng(o.seed ?? 0);
  }

  /**
   * Picks the next token from `logits` [vocab]; `history` (prompt + generated) feeds the repetition penalty,
   * its last `generated` entries the presence and frequency penalties.
   */
  sample(logits: Float32Array, history: readonly number[] = [], generated = 0): number {
    let z = logits;
    const own = () => (z === logits ? (z = logits.slice()) : z);
    for (const [t, b] of this.logitBias) if (t < z.length) own()[t]! += b;
    if ((this.presencePenalty !== 0 || this.frequencyPenalty !== 0) && generated > 0) {
      const counts = new Map<number, number>();
      for (let i = history.length - generated; i < history.length; i++) counts.set(history[i]!, (counts.get(history[i]!) ?? 0) + 1);
      const y = own();
      for (const [t, c] of counts) if (t >= 0 && t < y.length) y[t]! -= c * this.frequencyPenalty + this.presencePenalty;
    }
    if (this.repeatPenalty !== 1 && history.length > 0) {
      z = own();
      // Each seen token is penalised once, however often it appeared (llama.cpp's repeat penalty).
      for (const t of new Set(history.slice(-this.repeatLastN))) {
        if (t < 0 || t >= z.length) continue;
        z[t] = z[t]! > 0 ? z[t]! / this.repeatPenalty : z[t]! * this.repeatPenalty;
      }
    }
    if (this.temperature === 0) return argmax(z);

    // Candidates sorted by logit (ties: lower id first), cut by top-k: with k set only the k best are
    // selected and sorted (a vocab-sized sort per token is most of the sampler's time and garbage).
    let ids =
      this.topK > 0 && this.topK < z.length ? topIds(z, this.topK) : Array.from({ length: z.length }, (_, i) => i).sort((a, b) => z[b]! - z[a]! || a - b);
    // Probabilities at temperature 1 for the p cuts (llama.cpp applies temp after them).
    let p = softmax(ids.map((i) => z[i]!));
    if (this.topP < 1) {
      let cum = 0;
      let keep = ids.length;
      for (let i = 0; i < p.length; i++) {
        cum += p[i]!;
        if (cum >= this.topP) {
          keep = i + 1;
          break;
        }
      }
      ids = ids.slice(0, keep);
      p = p.slice(0, keep);
    }
    if (this.minP > 0) {
      const cut = p[0]! * this.minP;
      const keep = Math.max(1, p.filter((x) => x >= cut).length);
      ids = ids.slice(0, keep);
    }
    // Temperature, then a seeded draw.
    const q = softmax(ids.map((i) => z[i]! / this.temperature));
    let r = this.rng.next();
    for (let i = 0; i < q.length; i++) {
      r -= q[i]!;
      if (r < 0) return ids[i]!;
    }
    return ids[ids.length - 1]!;
  }
}

/** The k best ids of z (larger value first, lower id on ties), in that order: a bounded min-heap, O(n log k). */
export function topIds(z: Float32Array, k: number): number[] {
  // worse(a, b): a ranks below b.
  const worse = (a: number, b: number) => z[a]! < z[b]! || (z[a] === z[b] && a > b);
  const heap: number[] = [];
  const down = (i: number) => {
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < heap.length && worse(heap[l]!, heap[m]!)) m = l;
      if (r < heap.length && worse(heap[r]!, heap[m]!)) m = r;
      if (m === i) return;
      [heap[i], heap[m]] = [heap[m]!, heap[i]!];
      i = m;
    }
  };
  for (let id = 0; id < z.length; id++) {
    if (heap.length < k) {
      heap.push(id);
      for (let i = heap.length - 1; i > 0; ) {
        const p = (i - 1) >> 1;
        if (!worse(heap[i]!, heap[p]!)) break;
        [heap[i], heap[p]] = [heap[p]!, heap[i]!];
        i = p;
      }
    } else if (worse(heap[0]!, id)) {
      heap[0] = id;
      down(0);
    }
  }
  return heap.sort((a, b) => z[b]! - z[a]! || a - b);
}

/** Softmax in float64 of values sorted descending or not. */
export function softmax(x: readonly number[]): number[] {
  let max = -Infinity;
  for (const v of x) if (v > max) max = v;
  const e = x.map((v) => Math.exp(v - max));
  const s = e.reduce((a, b) => a + b, 0);
  return e.map((v) => v / s);
}
