// Naive float64 attention over plain float rows: the independent check for the reference and the cache.

/**
 * q [queries, heads, D]; k, v rows [tokens, kvHeads*D]; returns [queries, heads, D] in float64.
 * Query i sees positions <= positions[i] (default: all).
 */
export function attendNaive(
  q: Float32Array,
  k: Float32Array,
  v: Float32Array,
  heads: number,
  kvHeads: number,
  D: number,
  positions?: ArrayLike<number>,
): Float64Array {
  const nq = q.length / (heads * D);
  const T = k.length / (kvHeads * D);
  const out = new Float64Array(q.length);
  const scale = 1 / Math.sqrt(D);
  const s = new Float64Array(T);
  for (let i = 0; i < nq; i++) {
    const last = positions ? positions[i]! : T - 1;
    for (let h = 0; h < heads; h++) {
      const kvh = Math.floor(h / (heads / kvHeads));
      let max = -Infinity;
      for (let t = 0; t <= last; t++) {
        let dot = 0;
        for (let c = 0; c < D; c++) dot += q[(i * heads + h) * D + c]! * k[(t * kvHeads + kvh) * D + c]!;
        s[t] = dot * scale;
        max = Math.max(max, s[t]!);
      }
      let sum = 0;
      for (let t = 0; t <= last; t++) sum += s[t] = Math.exp(s[t]! - max);
      for (let c = 0; c < D; c++) {
        let acc = 0;
        for (let t = 0; t <= last; t++) acc += s[t]! * v[(t * kvHeads + kvh) * D + c]!;
        out[(i * heads + h) * D + c] = acc / sum;
      }
    }
  }
  return out;
}
