// Log-probabilities of the model's distribution (raw logits, before sampling's cuts), as OpenAI reports them.

export interface TokenLogprob {
  id: number;
  logprob: number;
  /** The `top` most likely tokens, most likely first. */
  top: { id: number; logprob: number }[];
}

/** log softmax(logits)[chosen] and the `top` best entries, in float64. */
export function tokenLogprob(logits: Float32Array, chosen: number, top: number): TokenLogprob {
  let max = -Infinity;
  for (let i = 0; i < logits.length; i++) if (logits[i]! > max) max = logits[i]!;
  let sum = 0;
  for (let i = 0; i < logits.length; i++) sum += Math.exp(logits[i]! - max);
  const lse = max + Math.log(sum);
  const best: { id: number; logprob: number }[] = [];
  if (top > 0) {
    // Partial selection: keep the `top` largest in a small sorted list.
    for (let i = 0; i < logits.length; i++) {
      const v = logits[i]!;
      if (best.length === top && v <= best[best.length - 1]!.logprob) continue;
      let j = best.length;
      while (j > 0 && best[j - 1]!.logprob < v) j--;
      best.splice(j, 0, { id: i, logprob: v });
      if (best.length > top) best.pop();
    }
    for (const b of best) b.logprob -= lse;
  }
  return { id: chosen, logprob: logits[chosen]! - lse, top: best };
}
