// Sensitivity probe (seed 002): logit drift vs the f16 cache when ONLY one layer is quantized, and when only
// it is kept exact; layers ranked; a CachePolicy protecting the most sensitive ones within a bit budget.
// Every configuration reads its cache back: the negative control that catches quantization on the wrong layers.
import { kvBytes } from '../cache/accounting.js';
import type { AnchorPrecision, CachePolicy, LayerOverride } from '../cache/policy.js';
import { schemes } from '../cache/schemes.js';
import { ArgumentError, UnknownSchemeError } from '../errors.js';
import type { Model } from '../model/model.js';
import { klMean } from './metrics.js';
import type { EvalPrompt } from './reference-logits.js';
import { runSequence } from './sequence.js';
import { storeErrorOk, type LayerStoreError } from './stored-error.js';

export interface ProbeOptions {
  readonly scheme: string;
  readonly sequences: readonly EvalPrompt[];
  /** Effective bits per K/V element the written policy may use, at `budgetAt`. */
  readonly budgetBits?: number;
  /**
   * Where the budget is measured: the positions the evaluated cache will hold and its prompt length (decode
   * anchors cover positions after the prompt). Default: the probe's longest sequence, anchors at its end.
   */
  readonly budgetAt?: { readonly positions: number; readonly prompt: number };
  /** Protect with exact f16 layers (default) or with decode anchors on those layers. */
  readonly protect?: 'exact' | 'anchors';
  readonly anchors?: { count: number; precision: AnchorPrecision };
  /** Stored-vs-appended relL2 a quantized layer must exceed. */
  readonly errorFloor?: number;
  /** Test hook: the policy each cache is really built with, given the one the probe intends. */
  readonly actualPolicy?: (intended: CachePolicy) => CachePolicy;
}

export interface ProbeLayer {
  readonly layer: number;
  /** Mean KL(f16 cache || this config) over the probe sequences. */
  readonly klOnlyQuantized: number;
  readonly klOnlyExact: number;
}

export interface ProbeControl {
  readonly config: string;
  readonly pass: boolean;
  readonly layers: readonly LayerStoreError[];
}

export interface ProbeResult {
  readonly scheme: string;
  readonly klAllQuantized: number;
  readonly layers: readonly ProbeLayer[];
  /** Layer indices, most sensitive first (by klOnlyQuantized). */
  readonly ranking: readonly number[];
  readonly protectedLayers: readonly number[];
  readonly policy: CachePolicy;
  /** Effective bits of `policy` and of the all-quantized scheme at `ctx` positions, prompt `prompt`. */
  readonly effectiveBits: number;
  readonly schemeBits: number;
  readonly ctx: number;
  readonly prompt: number;
  readonly controls: readonly ProbeControl[];
  readonly controlsPass: boolean;
  readonly ms: number;
}

/** Every position goes through the bulk: the probe measures the formats, not windows or sinks. */
const BARE = { window: 0, sinks: 0 } as const;
export const PROBE_REFERENCE: CachePolicy = { k: 'f16', v: 'f16', ...BARE };

function withLayer(base: CachePolicy, layer: number, o: LayerOverride): CachePolicy {
  return { ...base, layers: { ...(base.layers ?? {}), [String(layer)]: o } };
}

/** The policy that protects `layers` of the bare scheme. */
export function protectLayers(
  scheme: string,
  layers: readonly number[],
  protect: 'exact' | 'anchors',
  anchors = { count: 32, precision: 'f16' as AnchorPrecision },
): CachePolicy {
  const s = schemes.get(scheme);
  if (!s) throw new UnknownSchemeError(scheme, [...schemes.keys()]);
  const base: CachePolicy = { k: s.k, v: s.v, ...BARE };
  if (layers.length === 0) return base;
  if (protect === 'anchors') return { ...base, anchors: { count: anchors.count, precision: anchors.precision, layers: [...layers].sort((a, b) => a - b) } };
  let p = base;
  for (const l of [...layers].sort((a, b) => a - b)) p = withLayer(p, l, { k: 'f16', v: 'f16' });
  return p;
}

export function runProbe(model: Model, o: ProbeOptions): ProbeResult {
  const t0 = performance.now();
  const s = schemes.get(o.scheme);
  if (!s) throw new UnknownSchemeError(o.scheme, [...schemes.keys()]);
  if (o.sequences.length === 0) throw new ArgumentError('probe: no sequences');
  const L = model.hp.nLayer;
  const floor = o.errorFloor ?? 1e-3;
  const controls: ProbeControl[] = [];
  // One teacher-forced prefill per sequence; the first sequence's cache is read back layer by layer.
  const logitsOf = (config: string, policy: CachePolicy) =>
    o.sequences.map((seq, i) => {
      const r = runSequence(model, policy, seq.tokens, 1, { checkLayers: i === 0 ? policy : undefined, actualPolicy: o.actualPolicy?.(policy) });
      if (r.layerErrors) controls.push({ config, pass: r.layerErrors.every((e) => storeErrorOk(e, floor)), layers: r.layerErrors });
      return r.logits;
    });
  const ref = logitsOf('f16 reference', PROBE_REFERENCE);
  const V = model.nVocab;
  const kl = (test: Float32Array[]) => test.reduce((sum, t, i) => sum + klMean({ logits: ref[i]!, vocab: V }, { logits: t, vocab: V }), 0) / test.length;
  const quantized: CachePolicy = { k: s.k, v: s.v, ...BARE };
  const klAllQuantized = kl(logitsOf(`all layers ${o.scheme}`, quantized));
  const layers: ProbeLayer[] = [];
  for (let l = 0; l < L; l++) {
    const onlyQ = kl(logitsOf(`only layer ${l} ${o.scheme}`, withLayer(PROBE_REFERENCE, l, { k: s.k, v: s.v })));
    const onlyE = kl(logitsOf(`only layer ${l} exact`, withLayer(quantized, l, { k: 'f16', v: 'f16' })));
    layers.push({ layer: l, klOnlyQuantized: onlyQ, klOnlyExact: onlyE });
  }
  // Most drift when quantized alone first; ties broken by the larger recovery when kept exact alone.
  const ranking = [...layers].sort((a, b) => b.klOnlyQuantized - a.klOnlyQuantized || a.klOnlyExact - b.klOnlyExact).map((x) => x.layer);
  const protect = o.protect ?? 'exact';
  const anchors = o.anchors ?? { count: 32, precision: 'f16' as AnchorPrecision };
  const seqCtx = Math.max(...o.sequences.map((q) => q.tokens.length));
  const ctx = o.budgetAt?.positions ?? seqCtx;
  const prompt = o.budgetAt?.prompt ?? Math.max(0, ctx - anchors.count);
  if (!(prompt >= 0 && prompt <= ctx)) throw new ArgumentError(`probe: budget prompt ${prompt} outside [0, ${ctx}]`);
  const bits = (p: CachePolicy) => kvBytes({ ctx, layers: L, kvHeads: model.hp.nHeadKv, headDim: model.hp.headDim, policy: p, prompt }).bitsPerElement;
  const schemeBits = bits(quantized);
  // Without a budget, protect the single most sensitive layer (seed 002's minimal recipe: one layer).
  let chosen: number[] = o.budgetBits === undefined ? ranking.slice(0, 1) : [];
  if (o.budgetBits !== undefined) {
    for (const l of ranking) {
      const next = [...chosen, l];
      if (bits(protectLayers(o.scheme, next, protect, anchors)) <= o.budgetBits) chosen = next;
    }
  }
  const policy = protectLayers(o.scheme, chosen, protect, anchors);
  return {
    scheme: o.scheme,
    klAllQuantized,
    layers,
    ranking,
    protectedLayers: [...chosen].sort((a, b) => a - b),
    policy,
    effectiveBits: bits(policy),
    schemeBits,
    ctx,
    prompt,
    controls,
    controlsPass: controls.every((c) => c.pass),
    ms: performance.now() - t0,
  };
}

/** The ranked table (markdown). */
export function probeTable(r: ProbeResult): string[] {
  const rank = new Map(r.ranking.map((l, i) => [l, i + 1]));
  return [
    `| layer | rank | KL only this layer ${r.scheme} | KL only this layer exact (all ${r.scheme}: ${r.klAllQuantized.toFixed(5)}) | protected |`,
    '|---:|---:|---:|---:|---|',
    ...r.layers.map(
      (x) =>
        `| ${x.layer} | ${rank.get(x.layer)} | ${x.klOnlyQuantized.toFixed(6)} | ${x.klOnlyExact.toFixed(6)} | ${r.protectedLayers.includes(x.layer) ? 'yes' : ''} |`,
    ),
  ];
}
