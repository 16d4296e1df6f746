// Bootstrap 95% intervals over prompts: the prompts are the sampling unit (4 prompts carry ~20% noise), so
// every figure is resampled by prompt, with a fixed seed so the audit recomputes the same interval.

/** mulberry32: a small seeded PRNG (deterministic across platforms). */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const BOOTSTRAP_RESAMPLES = 1000;

/**
 * Percentile 95% interval of the weighted mean sum(value * weight) / sum(weight) over prompts resampled with
 * replacement. One prompt (or all weights 0) gives the point value twice: no spread can be estimated.
 */
export function bootstrapCi(values: readonly number[], weights: readonly number[] = values.map(() => 1), seed = 1): [number, number] {
  const n = values.length;
  const mean = (pick: (i: number) => number) => {
    let s = 0,
      w = 0;
    for (let i = 0; i < n; i++) {
      const j = pick(i);
      s += values[j]! * weights[j]!;
      w += weights[j]!;
    }
    return w > 0 ? s / w : 0;
  };
  if (n <= 1) {
    const m = mean((i) => i);
    return [m, m];
  }
  const r = rng(seed);
  const means = new Float64Array(BOOTSTRAP_RESAMPLES);
  for (let b = 0; b < BOOTSTRAP_RESAMPLES; b++) means[b] = mean(() => Math.floor(r() * n));
  means.sort();
  return [means[Math.floor(0.025 * BOOTSTRAP_RESAMPLES)]!, means[Math.ceil(0.975 * BOOTSTRAP_RESAMPLES) - 1]!];
}
