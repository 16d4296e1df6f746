// The forward pass of the llama-like families (llama, qwen2, qwen3, gemma3) over a batch of tokens at
// positions cache.length.. : prefill is matrix-matrix, decode is the same code with n = 1. Attention
// always goes through KvCache.attend, so every cache scheme runs in the engine.
import { ArgumentError } from '../errors.js';
import type { KvCache } from '../cache/kvcache.js';
import type { ArchSpec } from './arch/spec.js';
import type { Rope } from './forward-ops.js';
import { ForwardBuffers } from './forward-buffers.js';
import { addInPlace, applyRope, assertFinite, gatedAct, rmsNorm, scale, softcap } from './forward-wasm.js';
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
   * The arrays are scratch buffers (views of wasm memory) reused by the next layer and call: copy what you keep.
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
  const { hp } = w;
  const n = tokens.length;
  const rows = opts.allLogits ? n : 1;
  const half = w.ropeGlobal.dims / 2;
  const halfL = w.ropeLocal === w.ropeGlobal ? 0 : w.ropeLocal.dims / 2;
  const B = ForwardBuffers.acquire({
    x: n * hp.nEmbd, // [n, dim] residual stream
    xb: n * hp.nEmbd, // [n, dim] normed input, then a block's output
    q: n * hp.nHead * hp.headDim, // [n, nHead, headDim]
    k: n * hp.nHeadKv * hp.headDim, // [n, nKvHead, headDim]
    v: n * hp.nHeadKv * hp.headDim, // [n, nKvHead, headDim]
    att: n * hp.nHead * hp.headDim, // [n, nHead, headDim] attention output
    gate: n * hp.nFf, // [n, ff] gate, then act(gate) * up
    up: n * hp.nFf, // [n, ff]
    logits: rows * w.output.rows, // [rows, vocab]
    cosG: n * half, // [n, ropeDim/2] global RoPE table
    sinG: n * half,
    cosL: n * halfL, // [n, ropeDim/2] local RoPE table (when its base differs)
    sinL: n * halfL,
  });
  try {
    return blocks(w, tokens, cache, pos0, opts, B);
  } finally {
    B.release();
  }
}

/**
 * The blocks, reading and writing B's buffers in place. A buffer is fetched again (B.x, B.q...) after each
 * call that may allocate (cache append/attend, matmul workspaces): arena views go stale when memory grows.
 */
function blocks(w: ForwardWeights, tokens: readonly number[], cache: KvCache, pos0: number, opts: ForwardOptions, B: ForwardBuffers): Float32Array {
  const { hp, spec } = w;
  const n = tokens.length;
  const dim = hp.nEmbd;
  const hd = hp.headDim;
  const nh = hp.nHead;
  const nkv = hp.nHeadKv;
  const ff = hp.nFf;
  const eps = hp.rmsEps;
  const positions = Int32Array.from({ length: n }, (_, i) => pos0 + i);
  // RoPE tables once per call; local layers use their own base when it differs.
  const ownLocal = w.ropeLocal !== w.ropeGlobal;
  w.ropeGlobal.table(positions, { cos: B.get('cosG'), sin: B.get('sinG') });
  if (ownLocal) w.ropeLocal.table(positions, { cos: B.get('cosL'), sin: B.get('sinL') });

  // Token embeddings (gemma scales them by sqrt(dim)).
  for (let t = 0; t < n; t++) w.tokenEmbd.decodeRows(tokens[t]!, tokens[t]! + 1, B.x, t * dim);
  if (spec.embedScale) scale(B.x, Math.sqrt(dim));

  for (let l = 0; l < hp.nLayer; l++) {
    const L = w.layers[l]!;
    const local = hp.swaLayers[l]!;

    // Attention: RMSNorm, Q/K/V projections (+ bias).
    rmsNorm(B.xb, B.x, L.attnNorm, n, dim, eps);
    // One input for three weights: its activations are quantized once.
    matmulShared([L.wq, L.wk, L.wv], B.xb, n, [B.q, B.k, B.v], [L.bq, L.bk, L.bv]);
    // Per-head QK-norm before RoPE (qwen3, gemma3).
    if (L.qNorm) rmsNorm(B.q, B.q, L.qNorm, n * nh, hd, eps);
    if (L.kNorm) rmsNorm(B.k, B.k, L.kNorm, n * nkv, hd, eps);
    // RoPE on q and k; local layers use their own base.
    const rope = local ? w.ropeLocal : w.ropeGlobal;
    const tab = local && ownLocal ? { cos: B.get('cosL'), sin: B.get('sinL') } : { cos: B.get('cosG'), sin: B.get('sinG') };
    applyRope(rope, B.q, n, nh, hd, tab);
    applyRope(rope, B.k, n, nkv, hd, tab);
    opts.observe?.(l, B.q, B.k, B.v);
    // K/V into the cache, then causal attention over everything it holds.
    cache.append(l, B.k, B.v);
    cache.attend(l, B.q, B.att, {
      positions,
      scale: hp.attnScale,
      slidingWindow: local ? hp.slidingWindow : undefined,
      softcap: hp.attnSoftcap > 0 ? hp.attnSoftcap : undefined,
    });
    // Output projection (+ gemma's post-attention norm), residual add.
    L.wo.matmul(B.att, n, B.xb);
    if (L.postAttnNorm) rmsNorm(B.xb, B.xb, L.postAttnNorm, n, dim, eps);
    addInPlace(B.x, B.xb, n * dim);

    // FFN: RMSNorm, act(x Wg) * (x Wu), down projection (+ post-FFN norm), residual add.
    rmsNorm(B.xb, B.x, L.ffnNorm, n, dim, eps);
    matmulShared([L.wGate, L.wUp], B.xb, n, [B.gate, B.up]);
    gatedAct(spec.act, B.gate, B.up, n * ff);
    L.wDown.matmul(B.gate, n, B.xb);
    if (L.postFfnNorm) rmsNorm(B.xb, B.xb, L.postFfnNorm, n, dim, eps);
    addInPlace(B.x, B.xb, n * dim);
    assertFinite(`forward: layer ${l} output`, B.x);
  }

  // Final norm and classifier, only for the rows asked for.
  const rows = opts.allLogits ? n : 1;
  rmsNorm(B.xb, B.x.subarray((n - rows) * dim), w.outputNorm, rows, dim, eps);
  w.output.matmul(B.xb, rows, B.logits);
  if (hp.finalSoftcap > 0) softcap(B.logits, hp.finalSoftcap);
  assertFinite('forward: logits', B.logits);
  // The caller keeps the logits: copied out of the reused buffers.
  return B.logits.slice();
}
