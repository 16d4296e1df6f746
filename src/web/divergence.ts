// Compare mode's answer: where two greedy runs of the same prompt first part ways.

/** First index where `a` and `b` differ (a shorter run that stops early differs at its end); -1 if equal. */
export function firstDivergence(a: readonly number[], b: readonly number[]): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return a.length === b.length ? -1 : n;
}
