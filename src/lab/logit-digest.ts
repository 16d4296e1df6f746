// Logit digests: per row, only what the logit metrics read, so a protocol saves k + 3 floats per row instead of
// the vocabulary. Run and audit score the same saved digests, so every metric recomputes exactly.
//
// Row layout (float32, width k + 3): log-probs at the reference's top-k token ids (reference order), log of
// the probability left outside those ids ("tail"; -Infinity when k >= vocab), log-prob of the target token,
// argmax id (exact in float32 below 2^24).

/** Float32 holds integers exactly up to 2^24: larger vocabularies would corrupt the stored argmax. */
const MAX_DIGEST_VOCAB = 1 << 24;

export const digestWidth = (k: number) => k + 3;

/** Per row, the ids of the k largest logits, largest first (ties: lower id). k is clamped to the vocabulary. */
export function topIds(logits: Float32Array, rows: number, V: number, k: number): Int32Array[] {
  const kk = Math.min(k, V);
  const out: Int32Array[] = [];
  const idx = new Int32Array(V);
  for (let r = 0; r < rows; r++) {
    const row = logits.subarray(r * V, (r + 1) * V);
    for (let i = 0; i < V; i++) idx[i] = i;
    // Full sort is fine at our vocabularies (the digest is written once per row).
    const sorted = Array.from(idx).sort((a, b) => row[b]! - row[a]! || a - b);
    out.push(Int32Array.from(sorted.slice(0, kk)));
  }
  return out;
}

/**
 * Digest of `rows` rows of logits [rows, V], at the reference's top ids per row. `targets[r]` is the token
 * row r predicts (for NLL).
 */
export function digestRows(logits: Float32Array, V: number, ids: readonly Int32Array[], targets: ArrayLike<number>): Float32Array {
  if (V > MAX_DIGEST_VOCAB) throw new RangeError(`digest: vocab ${V} > ${MAX_DIGEST_VOCAB}`);
  const rows = ids.length;
  const k = ids[0]?.length ?? 0;
  const W = digestWidth(k);
  const out = new Float32Array(rows * W);
  const inTop = new Uint8Array(V);
  for (let r = 0; r < rows; r++) {
    const row = logits.subarray(r * V, (r + 1) * V);
    let max = -Infinity,
      arg = 0;
    for (let i = 0; i < V; i++)
      if (row[i]! > max) {
        max = row[i]!;
        arg = i;
      }
    let z = 0;
    for (let i = 0; i < V; i++) z += Math.exp(row[i]! - max);
    const lse = max + Math.log(z);
    const top = ids[r]!;
    for (const id of top) inTop[id] = 1;
    // Tail in float64 from the logits themselves (not 1 - sum of top probabilities: that cancels badly).
    let tail = 0;
    for (let i = 0; i < V; i++) if (!inTop[i]) tail += Math.exp(row[i]! - max);
    for (const id of top) inTop[id] = 0;
    const o = r * W;
    for (let j = 0; j < k; j++) out[o + j] = row[top[j]!]! - lse;
    out[o + k] = tail > 0 ? max + Math.log(tail) - lse : -Infinity;
    out[o + k + 1] = row[targets[r]!]! - lse;
    out[o + k + 2] = arg;
  }
  return out;
}

export interface DigestRows {
  /** [rows, k + 3] */
  readonly digest: Float32Array;
  readonly k: number;
}

const rowsOf = (d: DigestRows) => d.digest.length / digestWidth(d.k);

/** KL(ref || test) over the reference's top-k ids plus one tail bucket: the full KL when k >= vocab, else a lower bound. */
export function klDigest(ref: DigestRows, test: DigestRows, from = 0, to = rowsOf(ref)): number {
  const W = digestWidth(ref.k);
  let sum = 0;
  for (let r = from; r < to; r++) {
    let kl = 0;
    for (let j = 0; j <= ref.k; j++) {
      const lr = ref.digest[r * W + j]!;
      if (lr === -Infinity) continue;
      kl += Math.exp(lr) * (lr - test.digest[r * W + j]!);
    }
    sum += kl;
  }
  return to > from ? sum / (to - from) : 0;
}

export function top1Digest(ref: DigestRows, test: DigestRows, from = 0, to = rowsOf(ref)): number {
  const W = digestWidth(ref.k);
  let same = 0;
  for (let r = from; r < to; r++) if (ref.digest[r * W + ref.k + 2] === test.digest[r * W + ref.k + 2]) same++;
  return to > from ? same / (to - from) : 0;
}

/** Mean negative log-likelihood of the targets. */
export function nllDigest(d: DigestRows, from = 0, to = rowsOf(d)): number {
  const W = digestWidth(d.k);
  let s = 0;
  for (let r = from; r < to; r++) s -= d.digest[r * W + d.k + 1]!;
  return to > from ? s / (to - from) : 0;
}
