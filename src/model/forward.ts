// The forward pass of the llama-like families (llama, qwen2, qwen3, gemma3) over one or several sequences,
// each continuing its own KvCache at positions cache.length.. (continuous batching). Their tokens are
// stacked into one [N, dim] batch, so every weight is read once per call for all of them: prefill is
// matrix-matrix, decode is the same code with one row per sequence. K/V append and attention run per
// sequence over its own cache, always through KvCache.attend, so every cache scheme runs in the engine.
import { ArgumentError } from '../errors.js';
import type { KvCache } from '../cache/kvcache.js';
import type { ArchSpec } from './arch/spec.js';
import type { Rope } from '../kernels/ops/reference.js';
import { ForwardBuffers } from './forward-buffers.js';
import { addInPlace, applyRope, assertFinite, gatedAct, rmsNorm, scale, softcap } from '../kernels/ops/ops.js';
import { matmulShared, prefetchWeights, type Weight } from './forward-weights.js';
import { holdWorkers, releaseWorkers } from '../kernels/runtime/pool.js';
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

/** One sequence's share of a call: its next tokens and the cache they continue. */
export interface BatchSeq {
  readonly tokens: readonly number[];
  readonly cache: KvCache;
}

export interface ForwardOptions {
  /** Return logits for every position [n, vocab] of a sequence (teacher forcing), not only the last [vocab]. */
  allLogits?: boolean;
  /**
   * Sees each layer's q [n, nHead, headDim] and k, v [n, nKvHead, headDim] as attention gets them (after
   * QK-norm and RoPE, before the cache stores them), every sequence's rows stacked in order: the lab's
   * capture and stored-error controls.
   * The arrays are scratch buffers (views of wasm memory) reused by the next layer and call: copy what you keep.
   */
  observe?: (layer: number, q: Float32Array, k: Float32Array, v: Float32Array) => void;
}

/**
 * Runs `tokens` at positions cache.length.. and appends their K/V to `cache`. Returns the last token's
 * logits [vocab], or every position's [n, vocab] with `allLogits`. On an error the cache is rewound.
 */
export function forward(w: ForwardWeights, tokens: readonly number[], cache: KvCache, opts: ForwardOptions = {}): Float32Array {
  return forwardBatch(w, [{ tokens, cache }], opts)[0]!;
}

/**
 * Runs every sequence's tokens at positions cache.length.. of its own cache and appends their K/V there.
 * Returns each sequence's logits as forward() does, in order. Each row goes through the same ops as a call
 * of its own would give it; results equal those up to the matmul kernel the batch size picks (see
 * kernels/matmul/plan.ts TILE_MIN_TOKENS_*). On an error every cache is rewound to where it was.
 */
export function forwardBatch(w: ForwardWeights, seqs: readonly BatchSeq[], opts: ForwardOptions = {}): Float32Array[] {
  if (seqs.length === 0) return [];
  const caches = new Set<KvCache>();
  for (const s of seqs) {
    if (caches.has(s.cache)) throw new ArgumentError('forward: two sequences share one cache');
    caches.add(s.cache);
    checkInputs(w, s.tokens, s.cache);
  }
  const pos0 = seqs.map((s) => s.cache.length);
  try {
    return run(w, seqs, pos0, opts);
  } catch (e) {
    // Layers before the failure already appended: drop them so every cache stays consistent.
    seqs.forEach((s, i) => s.cache.rewind(pos0[i]!));
    throw e;
  }
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
    if (cache.layerLength(l) !== cache.length)
      throw new ArgumentError(`forward: cache layer ${l} holds ${cache.layerLength(l)} positions, others ${cache.length} (rewind first)`);
  }
}

/** Rows of the stacked batch: each sequence's first row, and each row's absolute position in its own cache. */
interface Rows {
  readonly n: number;
  readonly start: readonly number[];
  readonly positions: Int32Array;
  /** Rows that get logits: every row with allLogits, else each sequence's last. */
  readonly out: number;
}

function stack(seqs: readonly BatchSeq[], pos0: readonly number[], allLogits: boolean): Rows {
  const n = seqs.reduce((a, s) => a + s.tokens.length, 0);
  const start: number[] = [];
  const positions = new Int32Array(n);
  let r = 0;
  seqs.forEach((s, i) => {
    start.push(r);
    for (let t = 0; t < s.tokens.length; t++) positions[r + t] = pos0[i]! + t;
    r += s.tokens.length;
  });
  return { n, start, positions, out: allLogits ? n : seqs.length };
}

function run(w: ForwardWeights, seqs: readonly BatchSeq[], pos0: readonly number[], opts: ForwardOptions): Float32Array[] {
  const { hp } = w;
  const R = stack(seqs, pos0, !!opts.allLogits);
  const n = R.n;
  const half = w.ropeGlobal.dims / 2;
  const halfL = w.ropeLocal === w.ropeGlobal ? 0 : w.ropeLocal.dims / 2;
  const B = ForwardBuffers.acquire({
    x: n * hp.nEmbd, // [n, dim] residual stream, every sequence's rows stacked
    xb: n * hp.nEmbd, // [n, dim] normed input, then a block's output
    q: n * hp.nHead * hp.headDim, // [n, nHead, headDim]
    k: n * hp.nHeadKv * hp.headDim, // [n, nKvHead, headDim]
    v: n * hp.nHeadKv * hp.headDim, // [n, nKvHead, headDim]
    att: n * hp.nHead * hp.headDim, // [n, nHead, headDim] attention output
    gate: n * hp.nFf, // [n, ff] gate, then act(gate) * up
    up: n * hp.nFf, // [n, ff]
    logits: R.out * w.output.rows, // [out rows, vocab]
    cosG: n * half, // [n, ropeDim/2] global RoPE table, each row at its own sequence's position
    sinG: n * half,
    cosL: n * halfL, // [n, ropeDim/2] local RoPE table (when its base differs)
    sinL: n * halfL,
  });
  // The pool's workers stay awake through the pass's gaps between parallel jobs (kernels/runtime/pool.ts).
  holdWorkers();
  try {
    blocks(w, seqs, R, opts, B);
    return classify(w, seqs, R, B);
  } finally {
    releaseWorkers();
    B.release();
  }
}

/**
 * The blocks, reading and writing B's buffers in place. A buffer is fetched again (B.x, B.q...) after each
 * call that may allocate (cache append/attend, matmul workspaces): arena views go stale when memory grows.
 */
function blocks(w: ForwardWeights, seqs: readonly BatchSeq[], R: Rows, opts: ForwardOptions, B: ForwardBuffers): void {
  const { hp, spec } = w;
  const { n, start, positions } = R;
  const dim = hp.nEmbd;
  const hd = hp.headDim;
  const nh = hp.nHead;
  const nkv = hp.nHeadKv;
  const ff = hp.nFf;
  const eps = hp.rmsEps;
  const qRow = nh * hd;
  const kvRow = nkv * hd;
  // RoPE tables once per call; local layers use their own base when it differs.
  const ownLocal = w.ropeLocal !== w.ropeGlobal;
  w.ropeGlobal.table(positions, { cos: B.get('cosG'), sin: B.get('sinG') });
  if (ownLocal) w.ropeLocal.table(positions, { cos: B.get('cosL'), sin: B.get('sinL') });

  // Token embeddings (gemma scales them by sqrt(dim)).
  seqs.forEach((s, i) => {
    for (let t = 0; t < s.tokens.length; t++) w.tokenEmbd.decodeRows(s.tokens[t]!, s.tokens[t]! + 1, B.x, (start[i]! + t) * dim);
  });
  if (spec.embedScale) scale(B.x, Math.sqrt(dim));

  for (let l = 0; l < hp.nLayer; l++) {
    const L = w.layers[l]!;
    const local = hp.swaLayers[l]!;

    // Attention: RMSNorm, Q/K/V projections (+ bias).
    rmsNorm(B.xb, B.x, L.attnNorm, n, dim, eps);
    // One input for three weights: its activations are quantized once.
    matmulShared([L.wq, L.wk, L.wv], B.xb, n, [B.q, B.k, B.v], [L.bq, L.bk, L.bv]);
    // The workers would only wait through rope, append and attention: they read the next weights meanwhile.
    prefetchWeights([L.wo, L.wGate, L.wUp]);
    // Per-head QK-norm before RoPE (qwen3, gemma3).
    if (L.qNorm) rmsNorm(B.q, B.q, L.qNorm, n * nh, hd, eps);
    if (L.kNorm) rmsNorm(B.k, B.k, L.kNorm, n * nkv, hd, eps);
    // RoPE on q and k; local layers use their own base.
    const rope = local ? w.ropeLocal : w.ropeGlobal;
    const tab = local && ownLocal ? { cos: B.get('cosL'), sin: B.get('sinL') } : { cos: B.get('cosG'), sin: B.get('sinG') };
    applyRope(rope, B.q, n, nh, hd, tab);
    applyRope(rope, B.k, n, nkv, hd, tab);
    opts.observe?.(l, B.q, B.k, B.v);
    // Per sequence: its rows' K/V into its cache, then causal attention over that cache only.
    seqs.forEach((s, i) => {
      const r0 = start[i]!;
      const r1 = r0 + s.tokens.length;
      s.cache.append(l, B.k.subarray(r0 * kvRow, r1 * kvRow), B.v.subarray(r0 * kvRow, r1 * kvRow));
      s.cache.attend(l, B.q.subarray(r0 * qRow, r1 * qRow), B.att.subarray(r0 * qRow, r1 * qRow), {
        positions: positions.subarray(r0, r1),
        scale: hp.attnScale,
        slidingWindow: local ? hp.slidingWindow : undefined,
        softcap: hp.attnSoftcap > 0 ? hp.attnSoftcap : undefined,
      });
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
}

/** Final norm and classifier, only for the rows asked for; each sequence's logits copied out of the reused buffers. */
function classify(w: ForwardWeights, seqs: readonly BatchSeq[], R: Rows, B: ForwardBuffers): Float32Array[] {
  const { hp } = w;
  const dim = hp.nEmbd;
  const eps = hp.rmsEps;
  if (R.out === R.n || seqs.length === 1) {
    // The rows wanted are contiguous at the end of x: normed straight into xb.
    rmsNorm(B.xb, B.x.subarray((R.n - R.out) * dim), w.outputNorm, R.out, dim, eps);
  } else {
    // Each sequence's last row, gathered into xb [sequences, dim], then normed in place.
    const x = B.x;
    const xb = B.xb;
    seqs.forEach((s, i) => {
      const last = R.start[i]! + s.tokens.length - 1;
      xb.set(x.subarray(last * dim, (last + 1) * dim), i * dim);
    });
    rmsNorm(B.xb, B.xb, w.outputNorm, R.out, dim, eps);
  }
  w.output.matmul(B.xb, R.out, B.logits);
  if (hp.finalSoftcap > 0) softcap(B.logits, hp.finalSoftcap);
  assertFinite('forward: logits', B.logits);
  const vocab = w.output.rows;
  const logits = B.logits;
  return seqs.map((s, i) => {
    const [r0, r1] = R.out === R.n ? [R.start[i]!, R.start[i]! + s.tokens.length] : [i, i + 1];
    return logits.slice(r0 * vocab, r1 * vocab);
  });
}
