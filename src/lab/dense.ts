// Dense float attention over whole decoded arrays: the "decode everything first" path the lab times
// against block-wise attention. Same float64 operation order as attendReference, so outputs match bit for bit.

/** One query q[D] over K/V [n, D] (float32), softmax in float64; writes out[D]. */
export function attendDense(q: Float32Array, k: Float32Array, v: Float32Array, n: number, D: number, out: Float32Array, scale = 1 / Math.sqrt(D)): void {
  const scores = new Float64Array(n);
  let max = -Infinity;
  for (let t = 0; t < n; t++) {
    let s = 0;
    for (let c = 0; c < D; c++) s += q[c]! * k[t * D + c]!;
    s *= scale;
    scores[t] = s;
    if (s > max) max = s;
  }
  let sum = 0;
  for (let t = 0; t < n; t++) {
    const e = Math.exp(scores[t]! - max);
    scores[t] = e;
    sum += e;
  }
  const acc = new Float64Array(D);
  for (let t = 0; t < n; t++) {
    const w = scores[t]!;
    for (let c = 0; c < D; c++) acc[c] += w * v[t * D + c]!;
  }
  for (let c = 0; c < D; c++) out[c] = acc[c]! / sum;
}
