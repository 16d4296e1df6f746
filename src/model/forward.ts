// The forward pass of the llama-like families (llama, qwen2, qwen3, gemma3) over a batch of tokens at
// positions cache.length.. : prefill is matrix-matrix, decode is the same code with n = 1. Attention
// always goes through KvCache.attend, so every cache scheme runs in the engine.
import { ArgumentError, assertFinite } from '../errors.js';
import type { KvCache } from '../cache/kvcache.js';
import type { ArchSpec } from './arch/spec.js';
import { gatedAct, rmsNorm, softcap, type Rope } from './forward-ops.js';
import { matmulShared, type Weight } from './forward-weights.js';
import type { Hparams } from './hparams.js';

/** One block's weights; optional fields exist only for the architectures that have them. */
export interface LayerWeights {
  readonly attnNorm: Float32Array;
  readonly wq: Weight;
  readonly wk: Weight;
  readonly wv: Weight;
  readonly wo: Weight;
  readonly bq?: Float32Array;
  readonly bk?: Float32Array;
  readonly bv?: Float32Array;
  /** Per-head RMSNorm weights [headDim] (qwen3, gemma3). */
  readonly qNorm?: Float32Array;
  readonly kNorm?: Float32Array;
  readonly postAttnNorm?: Float32Array;
  readonly ffnNorm: Float32Array;
  readonly wGate: Weight;
  readonly wUp: Weight;
  readonly wDown: Weight;
  readonly postFfnNorm?: Float32Array;
}

export interface ForwardWeights {
  readonly spec: ArchSpec;
  readonly hp: Hparams;
  readonly tokenEmbd: Weight;
  /** The classifier: `output.weight`, or tokenEmbd when tied. */
  readonly output: Weight;
  readonly outputNorm: Float32Array;
  readonly layers: readonly LayerWeights[];
  /** RoPE of global layers and of sliding-window layers (the same object when they agree). */
  readonly ropeGlobal: Rope;
  readonly ropeLocal: Rope;
}

export interface ForwardOptions {
  /** Return logits for every position [n, vocab] (teacher forcing), not only the last [vocab]. */
  allLogits?: boolean;
  /**
   * Sees each layer's q [n, nHead, headDim] and k, v [n, nKvHead, headDim] as attention gets them (after
   * QK-norm and RoPE, before the cache stores them): the lab's capture and stored-error controls.
   * The arrays are scratch buffers reused by the next layer: copy what you keep.
   */
  observe?: (layer: number, q: Float32Array, k: Float32Array, v: Float32Array) => void;
}

function checkInputs(w: ForwardWeights, tokens: readonly number[], cache: KvCache): void {
  const hp = w.hp;
  if (tokens.length === 0) throw new ArgumentError('forward: no tokens');
  for (const t of tokens) {
    if (!Number.isInteger(t) || t < 0 || t >= hp.nVocab) throw new ArgumentError(`forward: token ${t} outside [0, ${hp.nVocab})`);
  }
  if (cache.layers !== hp.nLayer || cache.kvHeads !== hp.nHeadKv || cache.headDim !== hp.headDim) {
    throw new ArgumentError(
      `forward: cache is ${cache.layers} layers x ${cache.kvHeads} kv heads x ${cache.headDim}, the model needs ` +
        `${hp.nLayer} x ${hp.nHeadKv} x ${hp.headDim}`,
    );
  }
  if (cache.length + tokens.length > cache.capacity) {
    throw new ArgumentError(`forward: ${tokens.length} tokens at position ${cache.length} exceed the cache capacity ${cache.capacity}`);
  }
  for (let l = 0; l < hp.nLayer; l++) {
    if (cache.layerLength(l) !== cache.length) throw new ArgumentError(`forward: cache layer ${l} holds ${cache.layerLength(l)} positions, others ${cache.length} (rewind first)`);
  }
}

/**
 * Runs `tokens` at positions cache.length.. and appends their K/V to `cache`. Returns the last token's
 * logits [vocab], or every position's [n, vocab] with `allLogits`. On an error the cache is rewound.
 */
export function forward(w: ForwardWeights, tokens: readonly number[], cache: KvCache, opts: ForwardOptions = {}): Float32Array {
  checkInputs(w, tokens, cache);
  const pos0 = cache.length;
  try {
    return run(w, tokens, cache, pos0, opts);
  } catch (e) {
    // Layers before the failure already appended: drop them so the cache stays consistent.
    cache.rewind(pos0);
    throw e;
  }
}

function run(w: ForwardWeights, tokens: readonly number[], cache: KvCache, pos0: number, opts: ForwardOptions): Float32Array {
  const { hp, spec } = w;
  const n = tokens.length;
  const dim = hp.nEmbd;
  const hd = hp.headDim;
  const nh = hp.nHead;
  const nkv = hp.nHeadKv;
  const ff = hp.nFf;
  const eps = hp.rmsEps;
  const positions = Int32Array.from({ length: n }, (_, i) => pos0 + i);
  const ropeG = w.ropeGlobal.table(positions);
  const ropeL = w.ropeLocal === w.ropeGlobal ? ropeG : w.ropeLocal.table(positions);

  const x = new Float32Array(n * dim); // [n, dim] residual stream
  const xb = new Float32Array(n * dim); // [n, dim] normed input, then a block's output
  const q = new Float32Array(n * nh * hd); // [n, nHead, headDim]
  const k = new Float32Array(n * nkv * hd); // [n, nKvHead, headDim]
  const v = new Float32Array(n * nkv * hd); // [n, nKvHead, headDim]
  const att = new Float32Array(n * nh * hd); // [n, nHead, headDim] attention output
  const gate = new Float32Array(n * ff); // [n, ff] gate, then act(gate) * up
  const up = new Float32Array(n * ff); // [n, ff]

  // Token embeddings (gemma scales them by sqrt(dim)).
  for (let t = 0; t < n; t++) w.tokenEmbd.decodeRows(tokens[t]!, tokens[t]! + 1, x, t * dim);
  if (spec.embedScale) {
    const s = Math.sqrt(dim);
    for (let i = 0; i < x.length; i++) x[i] *= s;
  }

  for (let l = 0; l < hp.nLayer; l++) {
    const L = w.layers[l]!;
    const local = hp.swaLayers[l]!;

    // Attention: RMSNorm, Q/K/V projections (+ bias).
    rmsNorm(xb, x, L.attnNorm, n, dim, eps);
    // One input for three weights: its activations are quantized once.
    matmulShared([L.wq, L.wk, L.wv], xb, n, [q, k, v], [L.bq, L.bk, L.bv]);
    // Per-head QK-norm before RoPE (qwen3, gemma3).
    if (L.qNorm) rmsNorm(q, q, L.qNorm, n * nh, hd, eps);
    if (L.kNorm) rmsNorm(k, k, L.kNorm, n * nkv, hd, eps);
    // RoPE on q and k; local layers use their own base.
    const rope = local ? w.ropeLocal : w.ropeGlobal;
    const tab = local ? ropeL : ropeG;
    rope.apply(q, n, nh, hd, tab);
    rope.apply(k, n, nkv, hd, tab);
    opts.observe?.(l, q, k, v);
    // K/V into the cache, then causal attention over everything it holds.
    cache.append(l, k, v);
    cache.attend(l, q, att, {
      positions,
      scale: hp.attnScale,
      slidingWindow: local ? hp.slidingWindow : undefined,
      softcap: hp.attnSoftcap > 0 ? hp.attnSoftcap : undefined,
    });
    // Output projection (+ gemma's post-attention norm), residual add.
    L.wo.matmul(att, n, xb);
    if (L.postAttnNorm) rmsNorm(xb, xb, L.postAttnNorm, n, dim, eps);
    for (let i = 0; i < x.length; i++) x[i] += xb[i]!;

    // FFN: RMSNorm, act(x Wg) * (x Wu), down projection (+ post-FFN norm), residual add.
    rmsNorm(xb, x, L.ffnNorm, n, dim, eps);
    matmulShared([L.wGate, L.wUp], xb, n, [gate, up]);
    gatedAct(spec.act, gate, up, n * ff);
    L.wDown.matmul(gate, n, xb);
    if (L.postFfnNorm) rmsNorm(xb, xb, L.postFfnNorm, n, dim, eps);
    for (let i = 0; i < x.length; i++) x[i] += xb[i]!;
    assertFinite(`forward: layer ${l} output`, x);
  }

  // Final norm and classifier, only for the rows asked for.
  const rows = opts.allLogits ? n : 1;
  rmsNorm(xb, x.subarray((n - rows) * dim), w.outputNorm, rows, dim, eps);
  const logits = new Float32Array(rows * w.output.rows); // [rows, vocab]
  w.output.matmul(xb, rows, logits);
  if (hp.finalSoftcap > 0) softcap(logits, hp.finalSoftcap);
  assertFinite('forward: logits', logits);
  return logits;
}
