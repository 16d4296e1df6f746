// Scheme evaluation against the stored reference: per arm (a named CachePolicy) and prompt, a teacher-forced
// pass along the reference continuation (logits) and a greedy free run (exact-match, tokens/s, real bytes).
// Scoring is a pure function of saved logits and tokens, so audits recompute it from the files.
import { kvBytes } from '../cache/accounting.js';
import { planLayers, type CachePolicy } from '../cache/policy.js';
import { bitsPerValue } from '../formats/format.js';
import type { Model } from '../model/model.js';
import { exactMatch } from './metrics.js';
import { digestRows, klDigest, nllDigest, top1Digest, topIds, type DigestRows } from './logit-digest.js';
import type { ReferenceSet } from './reference-logits.js';
import { runSequencePair } from './sequence.js';
import type { LayerStoreError } from './stored-error.js';

export interface EvalArm {
  readonly name: string;
  readonly policy: CachePolicy;
}

/** What one arm produced on one prompt (saved by protocols; logits in a separate file). */
export interface PromptOutcome {
  readonly prompt: string;
  /** Greedy continuation of the free run. */
  readonly continuation: number[];
  /** Teacher-forced logits along the reference continuation [prompt + horizon - 1, vocab]. */
  readonly logits: Float32Array;
  readonly decodeMs: number;
  readonly decodeSteps: number;
  /** Positions held at the end of the free run, prompt length, and the cache's real bytes then. */
  readonly positions: number;
  readonly promptTokens: number;
  readonly bytes: number;
  readonly layerErrors?: LayerStoreError[];
}

export interface ModelShape {
  readonly layers: number;
  readonly kvHeads: number;
  readonly headDim: number;
}

export interface ArmScore {
  readonly arm: string;
  /**
   * Mean KL(reference || arm) over every position (prompt prefill and decode), over the reference's top-k
   * tokens plus one tail bucket (logit-digest.ts): the full KL when klExact, a lower bound otherwise.
   */
  readonly kl: number;
  /** The same over decode positions only (where decode anchors act). */
  readonly klDecode: number;
  /** Reference token ids the KL sums before its tail bucket; the KL is exact only when this covers the vocabulary. */
  readonly klTopK: number;
  readonly klExact: boolean;
  readonly top1Agree: number;
  readonly nllRef: number;
  readonly nllTest: number;
  readonly pplDelta: number;
  /** Share of greedy continuations equal to the reference's over the first h tokens, per horizon. */
  readonly exactAt: Record<number, number>;
  readonly prefixMean: number;
  readonly decodeTps: number;
  /** Real cache bytes summed over prompts, the formula's bytes for the same runs, and K/V elements held. */
  readonly bytes: number;
  readonly formulaBytes: number;
  readonly elements: number;
  /** bytes x 8 / elements: every region, scales and padding included. */
  readonly effectiveBits: number;
  /** Mean over layers of the bulk K and V formats' bits per value (scales included, padding not): the nominal rate. */
  readonly formatBits: number;
}

/** Runs one arm over every reference prompt. `actualPolicy` is a test hook (sabotage). */
export function runArm(model: Model, ref: ReferenceSet, arm: EvalArm, o: { checkLayers?: boolean; actualPolicy?: CachePolicy; onPrompt?: () => void } = {}): PromptOutcome[] {
  const H = ref.spec.horizon;
  return ref.entries.map((e, i) => {
    // Layer read-back on the first prompt: enough to show each layer holds what the policy says.
    const { forced, free } = runSequencePair(model, arm.policy, e.prompt.tokens, e.continuation, H, { actualPolicy: o.actualPolicy, checkLayers: o.checkLayers && i === 0 ? arm.policy : undefined });
    o.onPrompt?.();
    return {
      prompt: e.prompt.id, continuation: free.continuation, logits: forced.logits, decodeMs: free.decodeMs, decodeSteps: free.decodeSteps,
      positions: free.positions, promptTokens: e.prompt.tokens.length, bytes: free.bytes.total, layerErrors: free.layerErrors,
    };
  });
}

/** Targets of every row of prompt i: row r predicts token r + 1 of prompt ++ reference continuation. */
function rowTargets(ref: ReferenceSet, i: number): number[] {
  const e = ref.entries[i]!;
  return [...e.prompt.tokens.slice(1), ...e.continuation.slice(0, ref.spec.horizon)];
}

/** The reference's own digests at its top-k ids (k >= vocab: every id, so KL is the full KL). */
export function referenceDigests(ref: ReferenceSet, topK: number): { ids: Int32Array[][]; digests: Float32Array[] } {
  const V = ref.vocab;
  const ids = ref.entries.map((e) => topIds(e.logits, e.logits.length / V, V, topK));
  return { ids, digests: ref.entries.map((e, i) => digestRows(e.logits, V, ids[i]!, rowTargets(ref, i))) };
}

/** An arm's digest of prompt i's logits at the reference's ids. */
export function armDigest(ref: ReferenceSet, ids: readonly Int32Array[], i: number, logits: Float32Array): Float32Array {
  return digestRows(logits, ref.vocab, ids, rowTargets(ref, i));
}

/** An outcome as scored: saved fields plus the logit digest (protocols save the digest, not the logits). */
export type ScoredOutcome = Omit<PromptOutcome, 'logits'> & { readonly digest: Float32Array };

/** Mean of f over prompts' row ranges, weighted by rows (pooling every row, as the metric is per row). */
function pooledMean(ranges: readonly [number, number][], f: (i: number, from: number, to: number) => number): number {
  let sum = 0, n = 0;
  ranges.forEach(([a, b], i) => {
    sum += f(i, a, b) * (b - a);
    n += b - a;
  });
  return n > 0 ? sum / n : 0;
}

/**
 * Every number of one arm from the reference digests and the arm's outcomes (pure: the audit calls it on the
 * saved digests). `refDigests` come from referenceDigests with the same k the arm's digests used.
 */
export function scoreDigests(ref: ReferenceSet, refDigests: readonly Float32Array[], topK: number, arm: EvalArm, runs: readonly ScoredOutcome[], shape: ModelShape, horizons: readonly number[]): ArmScore {
  const H = ref.spec.horizon;
  const k = Math.min(topK, ref.vocab);
  const P = (i: number) => ref.entries[i]!.prompt.tokens.length;
  const all = ref.entries.map((_, i): [number, number] => [0, P(i) + H - 1]);
  const dec = ref.entries.map((_, i): [number, number] => [P(i), P(i) + H - 1]);
  const R = (i: number): DigestRows => ({ digest: refDigests[i]!, k });
  const T = (i: number): DigestRows => ({ digest: runs[i]!.digest, k });
  // Per-row KL is clamped at 0 as in metrics.klMean: float32 log-probs can put an exact match a hair below.
  const kl = (i: number, a: number, b: number) => {
    let s = 0;
    for (let r = a; r < b; r++) s += Math.max(0, klDigest(R(i), T(i), r, r + 1));
    return b > a ? s / (b - a) : 0;
  };
  const nllRef = pooledMean(all, (i, a, b) => nllDigest(R(i), a, b));
  const nllTest = pooledMean(all, (i, a, b) => nllDigest(T(i), a, b));
  const em = exactMatch(ref.entries.map((e) => e.continuation), runs.map((r) => r.continuation), horizons);
  const formulaBytes = runs.reduce((s, r) => s + kvBytes({ ctx: r.positions, prompt: r.promptTokens, policy: arm.policy, ...shape }).total, 0);
  const bytes = runs.reduce((s, r) => s + r.bytes, 0);
  const elements = runs.reduce((s, r) => s + r.positions * shape.layers * shape.kvHeads * shape.headDim * 2, 0);
  const plans = planLayers(arm.policy, shape.layers, Number.MAX_SAFE_INTEGER);
  const decodeMs = runs.reduce((s, r) => s + r.decodeMs, 0);
  return {
    arm: arm.name,
    kl: pooledMean(all, kl),
    klDecode: H > 1 ? pooledMean(dec, kl) : 0,
    klTopK: k,
    klExact: k >= ref.vocab,
    top1Agree: pooledMean(all, (i, a, b) => top1Digest(R(i), T(i), a, b)),
    nllRef,
    nllTest,
    pplDelta: Math.exp(nllTest) - Math.exp(nllRef),
    exactAt: em.fullAt,
    prefixMean: em.prefixMean,
    decodeTps: decodeMs > 0 ? (1000 * runs.reduce((s, r) => s + r.decodeSteps, 0)) / decodeMs : 0,
    bytes,
    formulaBytes,
    elements,
    effectiveBits: (bytes * 8) / elements,
    formatBits: plans.reduce((s, p) => s + (bitsPerValue(p.k) + bitsPerValue(p.v)) / 2, 0) / plans.length,
  };
}

/** Scores outcomes that still hold their logits (the eval CLI): digests over the whole vocabulary, so exact KL. */
export function scoreArm(ref: ReferenceSet, arm: EvalArm, runs: readonly PromptOutcome[], shape: ModelShape, horizons: readonly number[], topK = ref.vocab): ArmScore {
  const { ids, digests } = referenceDigests(ref, topK);
  const scored = runs.map(({ logits, ...rest }, i) => ({ ...rest, digest: armDigest(ref, ids[i]!, i, logits) }));
  return scoreDigests(ref, digests, topK, arm, scored, shape, horizons);
}

/** Column label for a KL figure: a top-k digest only bounds the KL from below, and says so. */
export function klLabel(scores: readonly Pick<ArmScore, 'klExact' | 'klTopK'>[], what = 'KL'): string {
  const s = scores.find((x) => !x.klExact);
  return s ? `${what} >= (top-${s.klTopK} + tail)` : `${what}`;
}

/** The one-table summary of an eval run (markdown pipe table). */
export function evalTable(scores: readonly ArmScore[], horizons: readonly number[]): string[] {
  const f = (x: number, d: number) => (Number.isFinite(x) ? x.toFixed(d) : String(x));
  return [
    `| arm | ${klLabel(scores, 'KL mean')} | ${klLabel(scores, 'KL decode')} | top-1 | PPL delta | ${horizons.map((h) => `exact@${h}`).join(' | ')} | prefix | KV bytes | format bits | eff. bits | decode tok/s |`,
    `|---|---:|---:|---:|---:|${horizons.map(() => '---:').join('|')}|---:|---:|---:|---:|---:|`,
    ...scores.map((s) => `| ${s.arm} | ${f(s.kl, 5)} | ${f(s.klDecode, 5)} | ${(100 * s.top1Agree).toFixed(1)}% | ${f(s.pplDelta, 4)} | ${horizons.map((h) => `${(100 * s.exactAt[h]!).toFixed(0)}%`).join(' | ')} | ${f(s.prefixMean, 1)} | ${s.bytes} | ${f(s.formatBits, 2)} | ${f(s.effectiveBits, 2)} | ${f(s.decodeTps, 0)} |`),
  ];
}
