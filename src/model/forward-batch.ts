// One forward pass over several sequences, each with its own KvCache (continuous batching): their tokens
// are stacked into one [N, dim] batch, so every weight is read once per step for all of them (the tiled
// matmul kernels serve N > 1), while K/V append and attention run per sequence over its own cache.
import { ArgumentError } from '../errors.js';
import type { KvCache } from '../cache/kvcache.js';
import { ForwardBuffers } from './forward-buffers.js';
import { addInPlace, applyRope, assertFinite, gatedAct, rmsNorm, scale, softcap } from './forward-wasm.js';
import { matmulShared } from './forward-weights.js';
import { forward, type ForwardWeights } from './forward.js';

/** One sequence's share of a batched step: its next tokens and the cache they continue. */
export interface BatchSeq {
  readonly tokens: readonly number[];
  readonly cache: KvCache;
}

/**
 * Runs every sequence's tokens at positions cache.length.. of its own cache and appends their K/V there.
 * Returns each sequence's last-token logits [vocab], in order. Each row goes through the same ops as
 * forward() would give it; results equal forward()'s up to the matmul kernel the batch size picks
 * (see matmul-wasm.ts TILE_MIN_TOKENS_*). On an error every cache is rewound to where it was.
 */
export function forwardBatch(w: ForwardWeights, seqs: readonly BatchSeq[]): Float32Array[] {
  if (seqs.length === 0) return [];
  if (seqs.length === 1) return [forward(w, seqs[0]!.tokens, seqs[0]!.cache)];
  const caches = new Set<KvCache>();
  for (const s of seqs) {
    if (caches.has(s.cache)) throw new ArgumentError('forwardBatch: two sequences share one cache');
    caches.add(s.cache);
    checkSeq(w, s);
  }
  const pos0 = seqs.map((s) => s.cache.length);
  try {
    return run(w, seqs, pos0);
  } catch (e) {
    seqs.forEach((s, i) => s.cache.rewind(pos0[i]!));
    throw e;
  }
}

function checkSeq(w: ForwardWeights, s: BatchSeq): void {
  const hp = w.hp;
  const c = s.cache;
  if (s.tokens.length === 0) throw new ArgumentError('forwardBatch: a sequence with no tokens');
  for (const t of s.tokens) if (!Number.isInteger(t) || t < 0 || t >= hp.nVocab) throw new ArgumentError(`forwardBatch: token ${t} outside [0, ${hp.nVocab})`);
  if (c.layers !== hp.nLayer || c.kvHeads !== hp.nHeadKv || c.headDim !== hp.headDim) throw new ArgumentError(`forwardBatch: a cache is ${c.layers} x ${c.kvHeads} x ${c.headDim}, the model needs ${hp.nLayer} x ${hp.nHeadKv} x ${hp.headDim}`);
  if (c.length + s.tokens.length > c.capacity) throw new ArgumentError(`forwardBatch: ${s.tokens.length} tokens at position ${c.length} exceed the cache capacity ${c.capacity}`);
  for (let l = 0; l < hp.nLayer; l++) if (c.layerLength(l) !== c.length) throw new ArgumentError(`forwardBatch: cache layer ${l} holds ${c.layerLength(l)} positions, others ${c.length} (rewind first)`);
}

function run(w: ForwardWeights, seqs: readonly BatchSeq[], pos0: readonly number[]): Float32Array[] {
  const { hp } = w;
  const n = seqs.reduce((a, s) => a + s.tokens.length, 0);
  const half = w.ropeGlobal.dims / 2;
  const halfL = w.ropeLocal === w.ropeGlobal ? 0 : w.ropeLocal.dims / 2;
  const B = ForwardBuffers.acquire({
    x: n * hp.nEmbd, // [n, dim] residual stream of all sequences, stacked
    xb: n * hp.nEmbd, // [n, dim] normed input, then a block's output; at the end each sequence's last row
    q: n * hp.nHead * hp.headDim,
    k: n * hp.nHeadKv * hp.headDim,
    v: n * hp.nHeadKv * hp.headDim,
    att: n * hp.nHead * hp.headDim,
    gate: n * hp.nFf,
    up: n * hp.nFf,
    logits: seqs.length * w.output.rows, // [sequences, vocab]
    cosG: n * half, // [n, ropeDim/2]: each row at its own sequence's position
    sinG: n * half,
    cosL: n * halfL,
    sinL: n * halfL,
  });
  try {
    return blocks(w, seqs, pos0, n, B);
  } finally {
    B.release();
  }
}

/** As forward.ts blocks(); buffers are fetched again after calls that may grow the arena. */
function blocks(w: ForwardWeights, seqs: readonly BatchSeq[], pos0: readonly number[], n: number, B: ForwardBuffers): Float32Array[] {
  const { hp, spec } = w;
  const dim = hp.nEmbd;
  const hd = hp.headDim;
  const nh = hp.nHead;
  const nkv = hp.nHeadKv;
  const eps = hp.rmsEps;
  // Row offset of each sequence in the stacked batch, and each row's absolute position in its own cache.
  const start: number[] = [];
  const positions = new Int32Array(n);
  let r = 0;
  seqs.forEach((s, i) => {
    start.push(r);
    for (let t = 0; t < s.tokens.length; t++) positions[r + t] = pos0[i]! + t;
    r += s.tokens.length;
  });
  const ownLocal = w.ropeLocal !== w.ropeGlobal;
  w.ropeGlobal.table(positions, { cos: B.get('cosG'), sin: B.get('sinG') });
  if (ownLocal) w.ropeLocal.table(positions, { cos: B.get('cosL'), sin: B.get('sinL') });

  seqs.forEach((s, i) => {
    for (let t = 0; t < s.tokens.length; t++) w.tokenEmbd.decodeRows(s.tokens[t]!, s.tokens[t]! + 1, B.x, (start[i]! + t) * dim);
  });
  if (spec.embedScale) scale(B.x, Math.sqrt(dim));

  for (let l = 0; l < hp.nLayer; l++) {
    const L = w.layers[l]!;
    const local = hp.swaLayers[l]!;
    rmsNorm(B.xb, B.x, L.attnNorm, n, dim, eps);
    matmulShared([L.wq, L.wk, L.wv], B.xb, n, [B.q, B.k, B.v], [L.bq, L.bk, L.bv]);
    if (L.qNorm) rmsNorm(B.q, B.q, L.qNorm, n * nh, hd, eps);
    if (L.kNorm) rmsNorm(B.k, B.k, L.kNorm, n * nkv, hd, eps);
    const rope = local ? w.ropeLocal : w.ropeGlobal;
    const tab = local && ownLocal ? { cos: B.get('cosL'), sin: B.get('sinL') } : { cos: B.get('cosG'), sin: B.get('sinG') };
    applyRope(rope, B.q, n, nh, hd, tab);
    applyRope(rope, B.k, n, nkv, hd, tab);
    // Per sequence: its rows' K/V into its cache, then attention over that cache only.
    seqs.forEach((s, i) => {
      const r0 = start[i]!;
      const m = s.tokens.length;
      const kvRow = nkv * hd;
      const qRow = nh * hd;
      s.cache.append(l, B.k.subarray(r0 * kvRow, (r0 + m) * kvRow), B.v.subarray(r0 * kvRow, (r0 + m) * kvRow));
      s.cache.attend(l, B.q.subarray(r0 * qRow, (r0 + m) * qRow), B.att.subarray(r0 * qRow, (r0 + m) * qRow), {
        positions: positions.subarray(r0, r0 + m),
        scale: hp.attnScale,
        slidingWindow: local ? hp.slidingWindow : undefined,
        softcap: hp.attnSoftcap > 0 ? hp.attnSoftcap : undefined,
      });
    });
    L.wo.matmul(B.att, n, B.xb);
    if (L.postAttnNorm) rmsNorm(B.xb, B.xb, L.postAttnNorm, n, dim, eps);
    addInPlace(B.x, B.xb, n * dim);
    rmsNorm(B.xb, B.x, L.ffnNorm, n, dim, eps);
    matmulShared([L.wGate, L.wUp], B.xb, n, [B.gate, B.up]);
    gatedAct(spec.act, B.gate, B.up, n * hp.nFf);
    L.wDown.matmul(B.gate, n, B.xb);
    if (L.postFfnNorm) rmsNorm(B.xb, B.xb, L.postFfnNorm, n, dim, eps);
    addInPlace(B.x, B.xb, n * dim);
    assertFinite(`forwardBatch: layer ${l} output`, B.x);
  }

  // Each sequence's last row, gathered into xb [sequences, dim], then the final norm and classifier once.
  const S = seqs.length;
  const x = B.x;
  const xb = B.xb;
  seqs.forEach((s, i) => {
    const last = start[i]! + s.tokens.length - 1;
    xb.set(x.subarray(last * dim, (last + 1) * dim), i * dim);
  });
  rmsNorm(B.xb, B.xb, w.outputNorm, S, dim, eps);
  w.output.matmul(B.xb, S, B.logits);
  if (hp.finalSoftcap > 0) softcap(B.logits, hp.finalSoftcap);
  assertFinite('forwardBatch: logits', B.logits);
  const vocab = w.output.rows;
  const logits = B.logits;
  return seqs.map((_, i) => logits.slice(i * vocab, (i + 1) * vocab));
}
