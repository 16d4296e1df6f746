// Scheme evaluation against the stored reference: per arm (a named CachePolicy) and prompt, a teacher-forced
// pass along the reference continuation (logits) and a greedy free run (exact-match, tokens/s, real bytes).
// Scoring is a pure function of saved logits and tokens, so audits recompute it from the files.
import { kvBytes } from '../cache/accounting.js';
import { planLayers, type CachePolicy } from '../cache/policy.js';
import { bitsPerValue } from '../formats/format.js';
import type { Model } from '../model/model.js';
import { exactMatch, klMean, nllDelta, top1Agree, type LogitRows } from './metrics.js';
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
  /** Mean KL(reference || arm) over every position (prompt prefill and decode). */
  readonly klMean: number;
  /** The same over decode positions only (where decode anchors act). */
  readonly klDecode: number;
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

function concat(parts: readonly Float32Array[]): Float32Array {
  const out = new Float32Array(parts.reduce((s, p) => s + p.length, 0));
  let o = 0;
  for (const p of parts) out.set(p, (o += p.length) - p.length);
  return out;
}

/** Rows [from, to) of each prompt's logits, pooled. */
function pooled(logits: readonly Float32Array[], V: number, range: (i: number) => [number, number]): LogitRows {
  return { logits: concat(logits.map((l, i) => { const [a, b] = range(i); return l.subarray(a * V, b * V); })), vocab: V };
}

/** Every number of one arm from the reference and the arm's outcomes (pure: the audit calls it too). */
export function scoreArm(ref: ReferenceSet, arm: EvalArm, runs: readonly PromptOutcome[], shape: ModelShape, horizons: readonly number[]): ArmScore {
  const V = ref.vocab;
  const H = ref.spec.horizon;
  const P = (i: number) => ref.entries[i]!.prompt.tokens.length;
  const all = (i: number): [number, number] => [0, P(i) + H - 1];
  const dec = (i: number): [number, number] => [P(i), P(i) + H - 1];
  const refL = ref.entries.map((e) => e.logits);
  const testL = runs.map((r) => r.logits);
  const targets = ref.entries.flatMap((e) => [...e.prompt.tokens.slice(1), ...e.continuation]);
  const nll = nllDelta(pooled(refL, V, all), pooled(testL, V, all), targets);
  const em = exactMatch(ref.entries.map((e) => e.continuation), runs.map((r) => r.continuation), horizons);
  const decodeRows = H > 1;
  const formulaBytes = runs.reduce((s, r) => s + kvBytes({ ctx: r.positions, prompt: r.promptTokens, policy: arm.policy, ...shape }).total, 0);
  const bytes = runs.reduce((s, r) => s + r.bytes, 0);
  const elements = runs.reduce((s, r) => s + r.positions * shape.layers * shape.kvHeads * shape.headDim * 2, 0);
  const plans = planLayers(arm.policy, shape.layers, Number.MAX_SAFE_INTEGER);
  const decodeMs = runs.reduce((s, r) => s + r.decodeMs, 0);
  return {
    arm: arm.name,
    klMean: klMean(pooled(refL, V, all), pooled(testL, V, all)),
    klDecode: decodeRows ? klMean(pooled(refL, V, dec), pooled(testL, V, dec)) : 0,
    top1Agree: top1Agree(pooled(refL, V, all), pooled(testL, V, all)),
    nllRef: nll.nllRef,
    nllTest: nll.nllTest,
    pplDelta: nll.pplDelta,
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

/** The one-table summary of an eval run (markdown pipe table). */
export function evalTable(scores: readonly ArmScore[], horizons: readonly number[]): string[] {
  const f = (x: number, d: number) => (Number.isFinite(x) ? x.toFixed(d) : String(x));
  return [
    `| arm | KL mean | KL decode | top-1 | PPL delta | ${horizons.map((h) => `exact@${h}`).join(' | ')} | prefix | KV bytes | format bits | eff. bits | decode tok/s |`,
    `|---|---:|---:|---:|---:|${horizons.map(() => '---:').join('|')}|---:|---:|---:|---:|---:|`,
    ...scores.map((s) => `| ${s.arm} | ${f(s.klMean, 5)} | ${f(s.klDecode, 5)} | ${(100 * s.top1Agree).toFixed(1)}% | ${f(s.pplDelta, 4)} | ${horizons.map((h) => `${(100 * s.exactAt[h]!).toFixed(0)}%`).join(' | ')} | ${f(s.prefixMean, 1)} | ${s.bytes} | ${f(s.formatBits, 2)} | ${f(s.effectiveBits, 2)} | ${f(s.decodeTps, 0)} |`),
  ];
}
