// One evaluation sequence through the engine: prefill a prompt (logits at every position), mark the decode
// start, then decode `horizon` tokens, either greedily (free run) or forced along given tokens. The paired
// form prefills once and forks the cache for the two decodes.
import type { CacheBytes, KvCache } from '../cache/kvcache.js';
import type { CachePolicy } from '../cache/policy.js';
import { PREFILL_CHUNK } from '../model/generate.js';
import type { Model } from '../model/model.js';
import { argmax } from '../model/sampler.js';
import { ArgumentError } from '../errors.js';
import { AppendRecorder, storedErrors, type LayerStoreError } from './stored-error.js';
import { AttendTap, placement, type LayerAttentionCheck, type LayerPlacement } from './attention-check.js';
import { planLayers } from '../cache/policy.js';

export interface SequenceRun {
  /** Generated (free run) or fed (forced) tokens after the prompt: `horizon` of them. */
  readonly continuation: number[];
  /** [prompt + horizon - 1, vocab]: row i predicts token i + 1 of prompt ++ continuation. */
  readonly logits: Float32Array;
  /** Wall time of the decode steps (horizon - 1 forward calls plus argmax). */
  readonly decodeMs: number;
  readonly decodeSteps: number;
  /** Positions held at the end (prompt + horizon - 1: the last token is never fed) and real bytes. */
  readonly positions: number;
  readonly bytes: CacheBytes;
  /** Per-layer stored-vs-appended error, when asked for. */
  readonly layerErrors?: LayerStoreError[];
  /** Per layer, the last attention call checked against float64 attention (attention-check.ts), when asked for. */
  readonly attention?: LayerAttentionCheck[];
  /** Per layer, the positions each region of the cache covers at the end. */
  readonly placement?: LayerPlacement[];
}

export interface SequenceOptions {
  /** Record each layer's last attention call and check it (attention-check.ts). */
  readonly checkAttention?: boolean;
  /** Test hook: zero every byte attention reads during each call, restored after (a cache destroyed at read). */
  readonly corruptRead?: boolean;
  /** Measure each layer's stored-vs-appended error against this intended policy. */
  readonly checkLayers?: CachePolicy;
  /** Test hook: the policy the cache is really built with (default: `policy`). */
  readonly actualPolicy?: CachePolicy;
}

interface Prefilled {
  cache: KvCache;
  logits: Float32Array;
  rec?: AppendRecorder;
  tap?: AttendTap;
  rotated?: (layer: number) => boolean;
}

function check(prompt: readonly number[], horizon: number): void {
  if (prompt.length === 0 || !Number.isInteger(horizon) || horizon < 1)
    throw new ArgumentError(`runSequence: need a prompt and horizon >= 1 (got ${prompt.length}, ${horizon})`);
}

function prefillAll(model: Model, policy: CachePolicy, prompt: readonly number[], horizon: number, o: SequenceOptions): Prefilled {
  const V = model.nVocab;
  const logits = new Float32Array((prompt.length + horizon - 1) * V);
  const rec = o.checkLayers || o.checkAttention ? new AppendRecorder(model.hp.nLayer) : undefined;
  const capacity = prompt.length + horizon - 1;
  const cache = model.createCache({ policy: o.actualPolicy ?? policy, capacity });
  const tap = o.checkAttention || o.corruptRead ? new AttendTap(cache, o.corruptRead) : undefined;
  const plans = planLayers(o.actualPolicy ?? policy, model.hp.nLayer, capacity);
  const rotated = (l: number) => plans[l]?.rotation !== null && plans[l]?.rotation !== undefined;
  try {
    for (let i = 0; i < prompt.length; i += PREFILL_CHUNK) {
      logits.set(model.forward(prompt.slice(i, i + PREFILL_CHUNK), cache, { allLogits: true, observe: rec?.observe }), i * V);
    }
  } catch (e) {
    cache.dispose();
    throw e;
  }
  // Decode anchors (seed 002) start at the first generated position, as in generate().
  cache.beginDecode();
  return { cache, logits, rec, tap: o.checkAttention ? tap : undefined, rotated };
}

/** Decodes `horizon` tokens into p.cache / p.logits (disposes the cache). */
function decode(
  model: Model,
  p: Prefilled,
  promptLength: number,
  horizon: number,
  forced: readonly number[] | undefined,
  intended: CachePolicy | undefined,
): SequenceRun {
  const V = model.nVocab;
  const { cache, logits, rec } = p;
  try {
    const continuation: number[] = [];
    const t0 = performance.now();
    for (let s = 0; s < horizon; s++) {
      const row = promptLength - 1 + s;
      const next = forced ? forced[s]! : argmax(logits.subarray(row * V, (row + 1) * V));
      continuation.push(next);
      if (s + 1 < horizon) logits.set(model.forward([next], cache, { observe: rec?.observe }), (row + 1) * V);
    }
    const decodeMs = performance.now() - t0;
    const layerErrors = rec && intended ? storedErrors(cache, rec, intended) : undefined;
    const attention = p.tap && rec ? p.tap.check(rec, p.rotated ?? (() => false)) : undefined;
    return {
      continuation,
      logits,
      decodeMs,
      decodeSteps: horizon - 1,
      positions: cache.length,
      bytes: cache.nbytes(),
      layerErrors,
      ...(attention && { attention, placement: placement(cache) }),
    };
  } finally {
    cache.dispose();
  }
}

/** Runs prompt + horizon tokens under `policy` (greedy, or along `forced`) in a cache of exactly that size. */
export function runSequence(
  model: Model,
  policy: CachePolicy,
  prompt: readonly number[],
  horizon: number,
  o: SequenceOptions & { forced?: readonly number[] } = {},
): SequenceRun {
  check(prompt, horizon);
  if (o.forced && o.forced.length < horizon) throw new ArgumentError(`runSequence: ${o.forced.length} forced tokens < horizon ${horizon}`);
  return decode(model, prefillAll(model, policy, prompt, horizon, o), prompt.length, horizon, o.forced, o.checkLayers);
}

/**
 * One prefill, then two decodes on forks of the cache: along `forced` (teacher-forced logits) and greedy
 * (free run). Layer read-back, when asked for, is done on the free run.
 */
export function runSequencePair(
  model: Model,
  policy: CachePolicy,
  prompt: readonly number[],
  forced: readonly number[],
  horizon: number,
  o: SequenceOptions = {},
): { forced: SequenceRun; free: SequenceRun } {
  check(prompt, horizon);
  if (forced.length < horizon) throw new ArgumentError(`runSequencePair: ${forced.length} forced tokens < horizon ${horizon}`);
  const p = prefillAll(model, policy, prompt, horizon, o);
  const a: Prefilled = { cache: p.cache.fork(), logits: p.logits.slice() };
  if (o.corruptRead) new AttendTap(a.cache, true);
  const f = decode(model, a, prompt.length, horizon, forced, undefined);
  return { forced: f, free: decode(model, p, prompt.length, horizon, undefined, o.checkLayers) };
}
