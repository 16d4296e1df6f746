// Layer statistics that say how realistic an attention input is, measured the same way on synthetic and
// captured layers: K/V channel RMS spread, K energy in per-channel means, score std and attention entropy.
import type { LayerInput } from './bit-allocation-core.js';

export interface LayerStatistics {
  readonly layer: string;
  readonly source: LayerInput['source'];
  /** max/min channel RMS over tokens, per kv head, averaged over kv heads (seed 000's "channel RMS spread"). */
  readonly kChannelRmsSpread: number;
  readonly vChannelRmsSpread: number;
  /** Share of K energy in per-channel means (sum_c mean_c^2 / sum_c mean_c(k^2)): the common-mode part. */
  readonly kMeanEnergyFraction: number;
  readonly vMeanEnergyFraction: number;
  /** max/min per-token L2 norm of V (seed 000: "flat cell spread"). */
  readonly vTokenNormSpread: number;
  /** Std over causal keys of q.k/sqrt(D), averaged over probed queries and heads. */
  readonly scoreStd: number;
  /** Attention entropy in nats, and divided by ln(keys) (1 = uniform, 0 = one-hot), averaged likewise. */
  readonly entropy: number;
  readonly entropyNormalized: number;
  /** exp(entropy): how many keys the average query effectively reads. */
  readonly effectiveKeys: number;
  /** Mean attention weight on position 0 (the usual sink). */
  readonly sinkMass: number;
}

interface HeadStats {
  rmsSpread: number;
  meanFraction: number;
}

function headStats(x: Float32Array, N: number, D: number): HeadStats {
  const mean = new Float64Array(D);
  const sq = new Float64Array(D);
  for (let t = 0; t < N; t++) {
    for (let c = 0; c < D; c++) {
      const a = x[t * D + c]!;
      mean[c] += a / N;
      sq[c] += (a * a) / N;
    }
  }
  let lo = Infinity,
    hi = 0,
    m2 = 0,
    e = 0;
  for (let c = 0; c < D; c++) {
    const r = Math.sqrt(sq[c]!);
    lo = Math.min(lo, r);
    hi = Math.max(hi, r);
    m2 += mean[c]! ** 2;
    e += sq[c]!;
  }
  return { rmsSpread: lo > 0 ? hi / lo : Infinity, meanFraction: e > 0 ? m2 / e : 0 };
}

function tokenNormSpread(x: Float32Array, N: number, D: number): number {
  let lo = Infinity,
    hi = 0;
  for (let t = 0; t < N; t++) {
    let s = 0;
    for (let c = 0; c < D; c++) s += x[t * D + c]! ** 2;
    lo = Math.min(lo, Math.sqrt(s));
    hi = Math.max(hi, Math.sqrt(s));
  }
  return lo > 0 ? hi / lo : Infinity;
}

/** Score std and entropy of one query row over keys [0, n) of one kv head. */
function scoreStats(q: Float32Array, qOff: number, k: Float32Array, kOff: number, n: number, D: number): { std: number; entropy: number; first: number } {
  const s = new Float64Array(n);
  let max = -Infinity,
    sum = 0;
  for (let t = 0; t < n; t++) {
    let dot = 0;
    for (let c = 0; c < D; c++) dot += q[qOff + c]! * k[kOff + t * D + c]!;
    s[t] = dot / Math.sqrt(D);
    sum += s[t]!;
    if (s[t]! > max) max = s[t]!;
  }
  const mu = sum / n;
  let v = 0,
    z = 0;
  for (let t = 0; t < n; t++) {
    v += (s[t]! - mu) ** 2;
    z += Math.exp(s[t]! - max);
  }
  // H = log Z - sum p (s - max), with p = exp(s - max) / Z.
  let ps = 0;
  for (let t = 0; t < n; t++) ps += (Math.exp(s[t]! - max) / z) * (s[t]! - max);
  return { std: Math.sqrt(v / n), entropy: Math.log(z) - ps, first: Math.exp(s[0]! - max) / z };
}

/** Every statistic of one layer, over its kv heads and its probed queries (the same queries the arms use). */
export function layerStatistics(L: LayerInput): LayerStatistics {
  const { tokens: N, headDim: D, heads, kvHeads } = L;
  let kSpread = 0,
    vSpread = 0,
    kFrac = 0,
    vFrac = 0,
    vTok = 0;
  for (let h = 0; h < kvHeads; h++) {
    const k = headStats(L.k.subarray(h * N * D, (h + 1) * N * D), N, D);
    const v = headStats(L.v.subarray(h * N * D, (h + 1) * N * D), N, D);
    kSpread += k.rmsSpread / kvHeads;
    vSpread += v.rmsSpread / kvHeads;
    kFrac += k.meanFraction / kvHeads;
    vFrac += v.meanFraction / kvHeads;
    vTok += tokenNormSpread(L.v.subarray(h * N * D, (h + 1) * N * D), N, D) / kvHeads;
  }
  const group = heads / kvHeads;
  let std = 0,
    ent = 0,
    entN = 0,
    sink = 0,
    count = 0;
  for (let i = 0; i < L.positions.length; i++) {
    const n = L.positions[i]! + 1;
    for (let h = 0; h < heads; h++) {
      const r = scoreStats(L.q, (i * heads + h) * D, L.k, Math.floor(h / group) * N * D, n, D);
      std += r.std;
      ent += r.entropy;
      entN += n > 1 ? r.entropy / Math.log(n) : 0;
      sink += r.first;
      count++;
    }
  }
  return {
    layer: L.name,
    source: L.source,
    kChannelRmsSpread: kSpread,
    vChannelRmsSpread: vSpread,
    kMeanEnergyFraction: kFrac,
    vMeanEnergyFraction: vFrac,
    vTokenNormSpread: vTok,
    scoreStd: std / count,
    entropy: ent / count,
    entropyNormalized: entN / count,
    effectiveKeys: Math.exp(ent / count),
    sinkMass: sink / count,
  };
}

export const STATISTICS_FILE = 'statistics.json';

/** The statistics section of headline.md: a heading line, then the table. */
export function statisticsLines(stats: readonly LayerStatistics[]): string[] {
  return ['', 'Layer statistics, measured on the probed arrays (synthetic targets vs captured layers):', '', ...statisticsTable(stats)];
}

export function statisticsTable(stats: readonly LayerStatistics[]): string[] {
  const f = (x: number, d: number) => x.toFixed(d);
  return [
    '| layer | source | K channel RMS spread | K mean-energy share | V channel RMS spread | V mean-energy share | V token-norm spread | score std | entropy (nats) | entropy / ln n | effective keys | mass at 0 |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...stats.map(
      (s) =>
        `| ${s.layer} | ${s.source} | ${f(s.kChannelRmsSpread, 1)}x | ${f(s.kMeanEnergyFraction, 3)} | ${f(s.vChannelRmsSpread, 1)}x | ${f(s.vMeanEnergyFraction, 3)} | ${f(s.vTokenNormSpread, 2)}x | ${f(s.scoreStd, 2)} | ${f(s.entropy, 2)} | ${f(s.entropyNormalized, 3)} | ${f(s.effectiveKeys, 1)} | ${f(s.sinkMass, 3)} |`,
    ),
  ];
}
