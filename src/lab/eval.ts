// Scheme evaluation against the stored reference: per arm (a named CachePolicy) and prompt, a teacher-forced
// pass along the reference continuation (logits) and a greedy free run (exact-match, tokens/s, real bytes).
// Scoring is a pure function of saved logits and tokens, so audits recompute it from the files.
import { kvBytes } from '../cache/accounting.js';
import { planLayers, type CachePolicy } from '../cache/policy.js';
import { bitsPerValue } from '../formats/format.js';
import type { Model } from '../model/model.js';
import { exactMatch, logSoftmax64 } from './metrics.js';
import { digestRows, klDigest, nllDigest, top1Digest, topIds, type DigestRows } from './logit-digest.js';
import type { ReferenceMeta, ReferenceSet } from './reference-logits.js';
import { runSequencePair } from './sequence.js';
import type { LayerStoreError } from './stored-error.js';
import type { CacheBytes } from '../cache/kvcache.js';
import type { LayerAttentionCheck, LayerPlacement } from './attention-check.js';
import { bootstrapCi, BOOTSTRAP_RESAMPLES } from './bootstrap.js';

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
  /** The cache's real bytes by region at the end of the free run. */
  readonly regions?: CacheBytes;
  readonly layerErrors?: LayerStoreError[];
  /** Per layer, the last attention call checked (attention-check.ts). */
  readonly attention?: LayerAttentionCheck[];
  /** Per layer, the positions each exact region covers, read back from the cache's view. */
  readonly placement?: LayerPlacement[];
}

export interface ModelShape {
  readonly layers: number;
  readonly kvHeads: number;
  readonly headDim: number;
}

/** Where an arm's KL figures come from (every one is the full KL except 'top-k bound'). */
export type KlSource = 'full-vocab digest' | 'exact rows' | 'top-k bound';

export interface ArmScore {
  readonly arm: string;
  /** Mean KL(reference || arm) over every row (prompt prefill and decode), pooled by row. */
  readonly kl: number;
  /** The same over the prompt rows (row P-1 predicts the first generated token) and the decode rows apart. */
  readonly klPrompt: number;
  /** null: no decode rows (horizon 1). */
  readonly klDecode: number | null;
  /** Reference token ids the digest keeps before its tail bucket. */
  readonly klTopK: number;
  /** The KL is the full KL (full-vocab digest, or exact per-row KLs saved from the full logits). */
  readonly klExact: boolean;
  readonly klSource: KlSource;
  /** Share of rows whose argmax agrees with the reference: all rows, prompt rows, decode rows (null: none). */
  readonly top1Agree: number;
  readonly top1Prompt: number;
  readonly top1Decode: number | null;
  /** Teacher-forced NLL of the reference text over every row. */
  readonly nllRef: number;
  readonly nllTest: number;
  readonly pplDelta: number;
  readonly pplDeltaPrompt: number;
  readonly pplDeltaDecode: number | null;
  /** Share of greedy continuations equal to the reference's over the first h tokens, only for h <= horizon. */
  readonly exactAt: Record<number, number>;
  readonly prefixMean: number;
  /** Bootstrap 95% intervals over prompts (bootstrap.ts): kl, klPrompt, klDecode, top1Prompt, top1Decode, exact@h. */
  readonly ci: Record<string, [number, number]>;
  readonly decodeTps: number;
  /** Real cache bytes summed over prompts, the formula's bytes for the same runs, and K/V elements held. */
  readonly bytes: number;
  readonly formulaBytes: number;
  readonly elements: number;
  /** bytes x 8 / elements: every region, scales and padding included. */
  readonly effectiveBits: number;
  /**
   * Bulk bytes x 8 / the values the bulk encodes: the quantized stream alone (blocks, scales, padding),
   * without the exact regions (sinks, window, anchors) or the f32 staging of part-filled per-channel groups.
   */
  readonly bulkBits: number | null;
  /** Positions per layer still held in f32 staging at the end (per-channel groups not yet full: exact). */
  readonly stagedPositions: number | null;
  /** Mean over layers of the bulk K and V formats' bits per value (scales included, padding not): the nominal rate. */
  readonly formatBits: number;
}

/** Runs one arm over every reference prompt. `actualPolicy` is a test hook (sabotage). */
export function runArm(
  model: Model,
  ref: ReferenceSet,
  arm: EvalArm,
  o: { checkLayers?: boolean; checkAttention?: boolean; actualPolicy?: CachePolicy; corruptRead?: boolean; onPrompt?: () => void } = {},
): PromptOutcome[] {
  const H = ref.spec.horizon;
  return ref.entries.map((e, i) => {
    // Layer read-back on the first prompt: enough to show each layer holds what the policy says.
    const { forced, free } = runSequencePair(model, arm.policy, e.prompt.tokens, e.continuation, H, {
      actualPolicy: o.actualPolicy,
      checkLayers: o.checkLayers && i === 0 ? arm.policy : undefined,
      checkAttention: o.checkAttention,
      corruptRead: o.corruptRead,
    });
    o.onPrompt?.();
    return {
      prompt: e.prompt.id,
      continuation: free.continuation,
      logits: forced.logits,
      decodeMs: free.decodeMs,
      decodeSteps: free.decodeSteps,
      positions: free.positions,
      promptTokens: e.prompt.tokens.length,
      bytes: free.bytes.total,
      regions: free.bytes,
      layerErrors: free.layerErrors,
      ...(free.attention && { attention: free.attention }),
      ...(free.placement && { placement: free.placement }),
    };
  });
}

/** Targets of every row of prompt i: row r predicts token r + 1 of prompt ++ reference continuation. */
function rowTargets(ref: ReferenceMeta, i: number): number[] {
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
export function armDigest(ref: ReferenceMeta, ids: readonly Int32Array[], i: number, logits: Float32Array): Float32Array {
  return digestRows(logits, ref.vocab, ids, rowTargets(ref, i));
}

/** An outcome as scored: saved fields plus the logit digest (protocols save the digest, not the logits). */
export type ScoredOutcome = Omit<PromptOutcome, 'logits'> & {
  readonly digest: Float32Array;
  /** Exact per-row KL(reference || arm) from the full logits (float64), when saved: then no KL is a bound. */
  readonly klRows?: Float64Array;
};

/** Exact KL(ref || test) per row over the whole vocabulary, float64 log-softmax, clamped at 0. */
export function exactKlRows(ref: Float32Array, test: Float32Array, V: number): Float64Array {
  const rows = ref.length / V;
  const out = new Float64Array(rows);
  for (let r = 0; r < rows; r++) {
    const lp = logSoftmax64(ref, r * V, V);
    const lq = logSoftmax64(test, r * V, V);
    let kl = 0;
    for (let i = 0; i < V; i++) kl += Math.exp(lp[i]!) * (lp[i]! - lq[i]!);
    out[r] = Math.max(0, kl);
  }
  return out;
}

type Range = [number, number];

/** Row-weighted mean of f over prompts' row ranges, and its bootstrap interval over prompts. */
function pooled(ranges: readonly Range[], f: (i: number, from: number, to: number) => number): { mean: number | null; ci: [number, number] | null } {
  const w = ranges.map(([a, b]) => b - a);
  const total = w.reduce((s, x) => s + x, 0);
  if (total === 0) return { mean: null, ci: null };
  const v = ranges.map(([a, b], i) => (b > a ? f(i, a, b) : 0));
  return { mean: v.reduce((s, x, i) => s + x * w[i]!, 0) / total, ci: bootstrapCi(v, w) };
}

/**
 * Every number of one arm from the reference digests and the arm's outcomes (pure: the audit calls it on the
 * saved digests). `refDigests` come from referenceDigests with the same k the arm's digests used.
 */
export function scoreDigests(
  ref: ReferenceMeta,
  refDigests: readonly Float32Array[],
  topK: number,
  arm: EvalArm,
  runs: readonly ScoredOutcome[],
  shape: ModelShape,
  horizons: readonly number[],
): ArmScore {
  const H = ref.spec.horizon;
  const k = Math.min(topK, ref.vocab);
  const P = (i: number) => ref.entries[i]!.prompt.tokens.length;
  const all = ref.entries.map((_, i): Range => [0, P(i) + H - 1]);
  const pro = ref.entries.map((_, i): Range => [0, P(i)]);
  const dec = ref.entries.map((_, i): Range => [P(i), P(i) + H - 1]);
  const R = (i: number): DigestRows => ({ digest: refDigests[i]!, k });
  const T = (i: number): DigestRows => ({ digest: runs[i]!.digest, k });
  const exactRows = runs.length > 0 && runs.every((r) => r.klRows !== undefined);
  // Per-row KL is clamped at 0 as in metrics.klMean: float32 log-probs can put an exact match a hair below.
  const kl = (i: number, a: number, b: number) => {
    let s = 0;
    const rows = runs[i]!.klRows;
    for (let r = a; r < b; r++) s += exactRows ? rows![r]! : Math.max(0, klDigest(R(i), T(i), r, r + 1));
    return s / (b - a);
  };
  const top1 = (i: number, a: number, b: number) => top1Digest(R(i), T(i), a, b);
  const ppl = (rs: readonly Range[]) => {
    const a = pooled(rs, (i, x, y) => nllDigest(R(i), x, y)).mean;
    const b = pooled(rs, (i, x, y) => nllDigest(T(i), x, y)).mean;
    return { ref: a, test: b, delta: a === null || b === null ? null : Math.exp(b) - Math.exp(a) };
  };
  const klAll = pooled(all, kl),
    klPro = pooled(pro, kl),
    klDec = pooled(dec, kl);
  const t1All = pooled(all, top1),
    t1Pro = pooled(pro, top1),
    t1Dec = pooled(dec, top1);
  const pAll = ppl(all),
    pPro = ppl(pro),
    pDec = ppl(dec);
  // Exact-match only where the horizon reaches: a horizon beyond the continuation would measure fewer tokens.
  const reach = horizons.filter((h) => h <= H);
  const refCont = ref.entries.map((e) => e.continuation);
  const em = exactMatch(
    refCont,
    runs.map((r) => r.continuation),
    reach,
  );
  const ci: Record<string, [number, number]> = { kl: klAll.ci!, klPrompt: klPro.ci!, top1Prompt: t1Pro.ci! };
  if (klDec.ci) ci.klDecode = klDec.ci;
  if (t1Dec.ci) ci.top1Decode = t1Dec.ci;
  for (const h of reach)
    ci[`exact@${h}`] = bootstrapCi(
      em.prefix.map((p, i) => (p >= Math.min(h, refCont[i]!.length) && runs[i]!.continuation.length >= Math.min(h, refCont[i]!.length) ? 1 : 0)),
    );
  const formulaBytes = runs.reduce((s, r) => s + kvBytes({ ctx: r.positions, prompt: r.promptTokens, policy: arm.policy, ...shape }).total, 0);
  const bytes = runs.reduce((s, r) => s + r.bytes, 0);
  const elements = runs.reduce((s, r) => s + r.positions * shape.layers * shape.kvHeads * shape.headDim * 2, 0);
  const plans = planLayers(arm.policy, shape.layers, Number.MAX_SAFE_INTEGER);
  const decodeMs = runs.reduce((s, r) => s + r.decodeMs, 0);
  const regions = runs.every((r) => r.regions !== undefined);
  const channelTensors = plans[0] ? (plans[0].k.axis === 'channel' ? 1 : 0) + (plans[0].v.axis === 'channel' ? 1 : 0) : 0;
  const rowBytes = shape.layers * shape.kvHeads * shape.headDim * 4;
  return {
    arm: arm.name,
    kl: klAll.mean!,
    klPrompt: klPro.mean!,
    klDecode: klDec.mean,
    klTopK: k,
    klExact: exactRows || k >= ref.vocab,
    klSource: exactRows ? 'exact rows' : k >= ref.vocab ? 'full-vocab digest' : 'top-k bound',
    top1Agree: t1All.mean!,
    top1Prompt: t1Pro.mean!,
    top1Decode: t1Dec.mean,
    nllRef: pAll.ref!,
    nllTest: pAll.test!,
    pplDelta: pAll.delta!,
    pplDeltaPrompt: pPro.delta!,
    pplDeltaDecode: pDec.delta,
    exactAt: em.fullAt,
    prefixMean: em.prefixMean,
    ci,
    decodeTps: decodeMs > 0 ? (1000 * runs.reduce((s, r) => s + r.decodeSteps, 0)) / decodeMs : 0,
    bytes,
    formulaBytes,
    elements,
    effectiveBits: (bytes * 8) / elements,
    // Per value the stream encodes: positions still staged (f32, exact) are not in it yet.
    bulkBits: regions
      ? (runs.reduce((s, r) => s + r.regions!.bulk, 0) * 8) / runs.reduce((s, r) => s + (2 * r.positions * rowBytes - r.regions!.staging) / 4, 0)
      : null,
    stagedPositions: regions ? (channelTensors ? Math.max(...runs.map((r) => r.regions!.staging / rowBytes / channelTensors)) : 0) : null,
    formatBits: plans.reduce((s, p) => s + (bitsPerValue(p.k) + bitsPerValue(p.v)) / 2, 0) / plans.length,
  };
}

/** Scores outcomes that still hold their logits (the eval CLI): digests over the whole vocabulary, so exact KL. */
export function scoreArm(
  ref: ReferenceSet,
  arm: EvalArm,
  runs: readonly PromptOutcome[],
  shape: ModelShape,
  horizons: readonly number[],
  topK = ref.vocab,
): ArmScore {
  const { ids, digests } = referenceDigests(ref, topK);
  const scored = runs.map(({ logits, ...rest }, i) => ({ ...rest, digest: armDigest(ref, ids[i]!, i, logits) }));
  return scoreDigests(ref, digests, topK, arm, scored, shape, horizons);
}

/** Column label for a KL figure: a top-k digest only bounds the KL from below, and says so. */
export function klLabel(scores: readonly Pick<ArmScore, 'klExact' | 'klTopK'>[], what = 'KL'): string {
  const s = scores.find((x) => !x.klExact);
  return s ? `${what} >= (top-${s.klTopK} + tail)` : `${what}`;
}

/** A number or n/a (no rows of that kind, or a horizon the run does not reach). */
export function fmt(x: number | null | undefined, d: number): string {
  if (x === null || x === undefined) return 'n/a';
  return Number.isFinite(x) ? x.toFixed(d) : String(x);
}

/** "x [lo, hi]" with the bootstrap interval when there is one. */
export function withCi(s: ArmScore, key: string, x: number | null | undefined, d: number, scale = 1): string {
  if (x === null || x === undefined) return 'n/a';
  const c = s.ci?.[key];
  const v = (y: number) => (scale * y).toFixed(d);
  return c ? `${v(x)} [${v(c[0])}, ${v(c[1])}]` : v(x);
}

/** "x% [lo, hi]" (percent). */
export function pct(s: ArmScore, key: string, x: number | null | undefined, d = 0): string {
  if (x === null || x === undefined) return 'n/a';
  const c = s.ci?.[key];
  const v = (y: number) => (100 * y).toFixed(d);
  return c ? `${v(x)}% [${v(c[0])}, ${v(c[1])}]` : `${v(x)}%`;
}

/** exact@h cell: n/a when the run's horizon does not reach h. */
export function exactCell(s: ArmScore, h: number): string {
  return h in s.exactAt ? pct(s, `exact@${h}`, s.exactAt[h]) : 'n/a';
}

/** The one-table summary of an eval run (markdown pipe table): prompt and decode rows apart, 95% intervals. */
export function evalTable(scores: readonly ArmScore[], horizons: readonly number[]): string[] {
  return [
    `| arm | ${klLabel(scores, 'KL prompt')} | ${klLabel(scores, 'KL decode')} | top-1 prompt | top-1 decode | PPL delta prompt | PPL delta decode | ${horizons.map((h) => `exact@${h}`).join(' | ')} | prefix | KV bytes | format bits | bulk bits | eff. bits | decode tok/s |`,
    `|---|---:|---:|---:|---:|---:|---:|${horizons.map(() => '---:').join('|')}|---:|---:|---:|---:|---:|---:|`,
    ...scores.map(
      (s) =>
        `| ${s.arm} | ${withCi(s, 'klPrompt', s.klPrompt, 5)} | ${withCi(s, 'klDecode', s.klDecode, 5)} | ${pct(s, 'top1Prompt', s.top1Prompt, 1)} | ${pct(s, 'top1Decode', s.top1Decode, 1)} | ${fmt(s.pplDeltaPrompt, 4)} | ${fmt(s.pplDeltaDecode, 4)} | ${horizons.map((h) => exactCell(s, h)).join(' | ')} | ${fmt(s.prefixMean, 1)} | ${s.bytes} | ${fmt(s.formatBits, 2)} | ${fmt(s.bulkBits, 2)} | ${fmt(s.effectiveBits, 2)} | ${s.decodeTps > 0 ? s.decodeTps.toFixed(0) : 'n/a'} |`,
    ),
  ];
}

/** The lines under a table saying what the brackets and the KL are. */
export function intervalNote(scores: readonly ArmScore[]): string[] {
  const src = [...new Set(scores.map((s) => s.klSource))];
  const kl = src.includes('top-k bound')
    ? `KL: top-${scores[0]?.klTopK} + tail lower bound (a digest, not the full KL).`
    : src.includes('exact rows')
      ? 'KL: exact over the full vocabulary (per-row KL computed in float64 from the full logits at run time and saved in kl/; the audit re-pools them and checks each row against its top-k + tail lower bound).'
      : 'KL: exact over the full vocabulary.';
  return [
    `[lo, hi]: bootstrap 95% interval over prompts (${BOOTSTRAP_RESAMPLES} resamples, fixed seed). Prompt rows: the prefill (its last row predicts the first generated token); decode rows: the rest. exact@h is n/a where the horizon does not reach h. Bulk bits: the quantized stream alone, per value it encodes (overlay mode: every position not still staged); eff. bits: every region (sinks, window, anchors, f32 staging of part-filled per-channel groups), scales and padding. ${kl}`,
  ];
}
