// Seeded synthetic Q/K/V with the structure real caches show: K channel outliers, RoPE, attention sinks,
// and seed 003's focus variants. Same seed => same base arrays, whatever the structure options.
import { Prng } from '../numeric/prng.js';
import { ArgumentError } from '../errors.js';

/** Seed 003's variants: only the first Q/K channel is biased toward the first or last `focusPositions`. */
export type Focus = 'clean' | 'early_focus' | 'recent_focus';
export const FOCI: readonly Focus[] = ['clean', 'early_focus', 'recent_focus'];

export interface SyntheticSpec {
  readonly seed: number;
  readonly tokens: number;
  readonly headDim: number;
  /** Query heads (default 1); a multiple of kvHeads (GQA). */
  readonly heads?: number;
  readonly kvHeads?: number;
  /** Query vectors at the last `queries` positions (default 1: one decode step at position tokens-1). */
  readonly queries?: number;
  /** max/min K channel RMS (1 = none; seed 000 measured 5.8x..74.9x on real layers). Pairs share a scale so RoPE keeps it. */
  readonly kOutlierSpread?: number;
  /** max/min V channel RMS (seed 000: 7.9x..14.5x). */
  readonly vChannelSpread?: number;
  /**
   * Per-channel offsets shared by every token, as multiples of the channel scale (default 0). Real V rows
   * share a large common component, so attention outputs are far from zero; iid V (seed 003) has none.
   */
  readonly kChannelMean?: number;
  readonly vChannelMean?: number;
  /** RoPE base (neox pairing c, c + headDim/2); absent or 0 = no RoPE. */
  readonly ropeTheta?: number;
  /** Positions [0, sinkTokens) get `sinkLogit` added to their scores against every query (default 0 = none). */
  readonly sinkTokens?: number;
  readonly sinkLogit?: number;
  readonly focus?: Focus;
  /** Positions favored by early/recent focus (seed 003: 16). */
  readonly focusPositions?: number;
  /** Score boost (logits) of the focused positions via channel 0. */
  readonly focusLogit?: number;
}

export interface SyntheticKv {
  readonly tokens: number;
  readonly headDim: number;
  readonly heads: number;
  readonly kvHeads: number;
  /** [queries, heads, headDim] */
  readonly q: Float32Array;
  /** [kvHeads, tokens, headDim]: each head a contiguous [tokens, headDim] array, ready to encode. */
  readonly k: Float32Array;
  /** [kvHeads, tokens, headDim] */
  readonly v: Float32Array;
  /** Absolute position of each query. */
  readonly positions: Int32Array;
}

/** Rotates x[off .. off+D) in place by RoPE at `pos` (neox pairing: c with c + D/2). */
export function applyRope(x: Float32Array, off: number, D: number, pos: number, theta: number): void {
  const half = D / 2;
  for (let c = 0; c < half; c++) {
    const ang = pos * theta ** ((-2 * c) / D);
    const cos = Math.cos(ang);
    const sin = Math.sin(ang);
    const a = x[off + c]!;
    const b = x[off + c + half]!;
    x[off + c] = a * cos - b * sin;
    x[off + c + half] = a * sin + b * cos;
  }
}

/** Channel scales with max/min = spread: a few large, most near 1 (RoPE pairs share one). */
function channelScales(rng: Prng, D: number, spread: number): Float64Array {
  const half = D / 2;
  const order = [...Array(half).keys()];
  for (let i = half - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  const s = new Float64Array(D);
  for (let r = 0; r < half; r++) {
    // Rank r of half-1 -> exponent (r/(half-1))^4: the top pair reaches `spread`, the bottom is 1.
    const u = half === 1 ? 1 : (r / (half - 1)) ** 4;
    const c = order[r]!;
    s[c] = s[c + half] = spread ** u;
  }
  return s;
}

function check(spec: SyntheticSpec): void {
  const { tokens, headDim } = spec;
  const heads = spec.heads ?? 1;
  const kvHeads = spec.kvHeads ?? 1;
  const queries = spec.queries ?? 1;
  if (!Number.isInteger(tokens) || tokens < 1) throw new ArgumentError(`synthetic: tokens ${tokens} must be a positive integer`);
  if (!Number.isInteger(headDim) || headDim < 2 || headDim % 2) throw new ArgumentError(`synthetic: headDim ${headDim} must be even and >= 2`);
  if (!(kvHeads >= 1 && heads % kvHeads === 0)) throw new ArgumentError(`synthetic: heads ${heads} is not a multiple of kvHeads ${kvHeads}`);
  if (!(queries >= 1 && queries <= tokens)) throw new ArgumentError(`synthetic: queries ${queries} outside [1, ${tokens}]`);
  const fp = spec.focusPositions ?? 16;
  if (spec.focus && spec.focus !== 'clean' && fp > tokens) throw new ArgumentError(`synthetic: focusPositions ${fp} > tokens ${tokens}`);
}

/**
 * Builds Q/K/V. Draw order is fixed (q, k, v, then structure), so the clean and focus variants of one
 * seed share every base random value; sink and focus terms are added after RoPE (score features).
 */
export function synthesize(spec: SyntheticSpec): SyntheticKv {
  check(spec);
  const { tokens: N, headDim: D, seed } = spec;
  const heads = spec.heads ?? 1;
  const kvHeads = spec.kvHeads ?? 1;
  const nq = spec.queries ?? 1;
  const rng = new Prng(seed);
  const q = rng.normals(nq * heads * D);
  const k = rng.normals(kvHeads * N * D);
  const v = rng.normals(kvHeads * N * D);
  const positions = new Int32Array(nq);
  for (let i = 0; i < nq; i++) positions[i] = N - nq + i;
  // Structure draws use their own stream, so turning a feature on never shifts the base arrays.
  const srng = new Prng((seed ^ 0x5bd1e995) >>> 0);
  const ks = channelScales(srng, D, spec.kOutlierSpread ?? 1);
  const vs = channelScales(srng, D, spec.vChannelSpread ?? 1);
  for (let i = 0; i < kvHeads * N; i++) {
    for (let c = 0; c < D; c++) {
      k[i * D + c]! *= ks[c]!;
      v[i * D + c]! *= vs[c]!;
    }
  }
  // Means come from a third stream so enabling them leaves every other draw unchanged; K's is pre-RoPE.
  const km = spec.kChannelMean ?? 0;
  const vm = spec.vChannelMean ?? 0;
  if (km !== 0 || vm !== 0) {
    const mrng = new Prng((seed ^ 0x27d4eb2f) >>> 0);
    const kOff = mrng.normals(kvHeads * D, km);
    const vOff = mrng.normals(kvHeads * D, vm);
    for (let h = 0; h < kvHeads; h++) {
      for (let t = 0; t < N; t++) {
        for (let c = 0; c < D; c++) {
          k[(h * N + t) * D + c]! += kOff[h * D + c]! * ks[c]!;
          v[(h * N + t) * D + c]! += vOff[h * D + c]! * vs[c]!;
        }
      }
    }
  }
  // Scores should stay O(1) after scaling K: divide q by the mean channel scale's RMS.
  const kRms = Math.sqrt(ks.reduce((s, x) => s + x * x, 0) / D);
  for (let i = 0; i < q.length; i++) q[i]! /= kRms;
  const theta = spec.ropeTheta ?? 0;
  if (theta > 0) {
    for (let h = 0; h < kvHeads; h++) for (let t = 0; t < N; t++) applyRope(k, (h * N + t) * D, D, t, theta);
    for (let i = 0; i < nq; i++) for (let h = 0; h < heads; h++) applyRope(q, (i * heads + h) * D, D, positions[i]!, theta);
  }
  // Sinks: a shared unit direction u in every query and the sink keys, sized so q.k/sqrt(D) gains sinkLogit.
  const sinkTokens = Math.min(N, spec.sinkTokens ?? 0);
  const sinkLogit = spec.sinkLogit ?? 0;
  if (sinkTokens > 0 && sinkLogit !== 0) {
    const u = srng.normals(D);
    const norm = Math.hypot(...u);
    const c = Math.sqrt(Math.abs(sinkLogit) * Math.sqrt(D));
    for (let j = 0; j < D; j++) u[j] = (u[j]! / norm) * c;
    for (let i = 0; i < nq * heads; i++) for (let j = 0; j < D; j++) q[i * D + j]! += u[j]!;
    const sign = Math.sign(sinkLogit);
    for (let h = 0; h < kvHeads; h++) for (let t = 0; t < sinkTokens; t++) for (let j = 0; j < D; j++) k[(h * N + t) * D + j]! += sign * u[j]!;
  }
  // Focus (seed 003): only channel 0 of Q and of the focused keys is biased.
  const focus = spec.focus ?? 'clean';
  if (focus !== 'clean') {
    const fp = spec.focusPositions ?? 16;
    const b = Math.sqrt((spec.focusLogit ?? 4) * Math.sqrt(D));
    for (let i = 0; i < nq * heads; i++) q[i * D]! += b;
    const from = focus === 'early_focus' ? 0 : N - fp;
    for (let h = 0; h < kvHeads; h++) for (let t = from; t < from + fp; t++) k[(h * N + t) * D]! += b;
  }
  return { tokens: N, headDim: D, heads, kvHeads, q, k, v, positions };
}

/** RMS of each channel of a [rows, D] array (float64). */
export function channelRms(x: Float32Array, rows: number, D: number): Float64Array {
  const out = new Float64Array(D);
  for (let r = 0; r < rows; r++) for (let c = 0; c < D; c++) out[c]! += x[r * D + c]! ** 2;
  for (let c = 0; c < D; c++) out[c] = Math.sqrt(out[c]! / rows);
  return out;
}

/** Reference attention probabilities (float64) of query vector q[qOff..] over keys k[kOff..] for n positions. */
export function attentionWeights(q: Float32Array, qOff: number, k: Float32Array, kOff: number, n: number, D: number, scale = 1 / Math.sqrt(D)): Float64Array {
  const s = new Float64Array(n);
  let max = -Infinity;
  for (let t = 0; t < n; t++) {
    let dot = 0;
    for (let c = 0; c < D; c++) dot += q[qOff + c]! * k[kOff + t * D + c]!;
    s[t] = dot * scale;
    if (s[t]! > max) max = s[t]!;
  }
  let sum = 0;
  for (let t = 0; t < n; t++) sum += s[t] = Math.exp(s[t]! - max);
  for (let t = 0; t < n; t++) s[t]! /= sum;
  return s;
}

/**
 * A layer built to hit measurable statistics (bit-allocation v2). Each target is something
 * `layerStatistics` measures back on synthetic and captured layers alike, so the two can be compared.
 */
export interface LayerPreset {
  readonly seed: number;
  readonly tokens: number;
  readonly headDim: number;
  readonly heads?: number;
  readonly kvHeads?: number;
  readonly queries?: number;
  /** RoPE base for the token-varying parts of Q and K (0 = none). */
  readonly ropeTheta?: number;
  /** max/min channel RMS of the cached K and V (seed 000: K 5.8x at L3, 74.9x at L47; V 7.9x..14.5x). */
  readonly kChannelRmsSpread: number;
  readonly vChannelRmsSpread: number;
  /** Share of the energy in per-channel means (common to all tokens), in [0, 1). */
  readonly kMeanEnergyFraction: number;
  readonly vMeanEnergyFraction: number;
  /** Target mean attention entropy over ln(keys): 1 = uniform, 0 = one-hot; q's scale is solved for it. */
  readonly entropyNormalized: number;
  readonly sinkTokens?: number;
  readonly sinkLogit?: number;
}

/** Bisection iterations: 60 halvings take any bracket below float64 resolution. */
const BISECT_STEPS = 60;

function bisect(f: (x: number) => number, target: number, lo: number, hi: number, increasing: boolean): number {
  for (let i = 0; i < BISECT_STEPS; i++) {
    const mid = (lo + hi) / 2;
    if (f(mid) < target === increasing) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}

/**
 * Splits channel RMS r_c into a common offset and a token-varying std s_c = r_c^(1-g). g = 0: outliers are
 * pure variance; g = 1: every channel varies like the bulk and outliers are pure offsets. g is solved so the
 * offsets hold `fraction` of the energy: the large channels carry the common mode, as KIVI's fixed outlier
 * channels do.
 */
export function splitChannelEnergy(r: Float64Array, fraction: number): { offset: Float64Array; std: Float64Array } {
  const std = (g: number) => r.map((x) => Math.min(x, x ** (1 - g)));
  const energy = r.reduce((s, x) => s + x * x, 0);
  const share = (g: number) => 1 - std(g).reduce((s, x) => s + x * x, 0) / energy;
  // Beyond g = 8 the offsets have all they can get (channels at the minimum RMS never carry an offset).
  const G_MAX = 8;
  if (!(fraction >= 0 && fraction <= share(G_MAX)))
    throw new ArgumentError(`synthetic: mean-energy fraction ${fraction} outside [0, ${share(G_MAX).toFixed(3)}] for this spread`);
  const s = std(fraction === 0 ? 0 : bisect(share, fraction, 0, G_MAX, true));
  return { offset: r.map((x, c) => Math.sqrt(Math.max(0, x * x - s[c]! ** 2))), std: s };
}

/** Mean over rows of the normalized entropy of softmax(alpha * a + b), rows of length n[i]. */
function meanEntropy(a: readonly Float64Array[], b: readonly Float64Array[], alpha: number): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) {
    const n = a[i]!.length;
    if (n < 2) continue;
    let max = -Infinity;
    for (let t = 0; t < n; t++) max = Math.max(max, alpha * a[i]![t]! + b[i]![t]!);
    let z = 0,
      ps = 0;
    for (let t = 0; t < n; t++) {
      const s = alpha * a[i]![t]! + b[i]![t]! - max;
      const e = Math.exp(s);
      z += e;
      ps += e * s;
    }
    sum += (Math.log(z) - ps / z) / Math.log(n);
  }
  return sum / a.length;
}

/**
 * Builds Q/K/V for one preset. K = RoPE(token-varying part) + per-channel offset (after RoPE, so it is
 * common to every cached token, as the statistic measures); V likewise without RoPE; Q isotropic (an
 * assumption: no Q statistics are measured) and scaled so the mean attention entropy hits the target.
 */
export function synthesizeLayer(p: LayerPreset): SyntheticKv {
  check({ seed: p.seed, tokens: p.tokens, headDim: p.headDim, heads: p.heads, kvHeads: p.kvHeads, queries: p.queries });
  const { tokens: N, headDim: D } = p;
  const heads = p.heads ?? 1;
  const kvHeads = p.kvHeads ?? 1;
  const nq = p.queries ?? 1;
  const rng = new Prng(p.seed);
  const q = rng.normals(nq * heads * D);
  const k = rng.normals(kvHeads * N * D);
  const v = rng.normals(kvHeads * N * D);
  const positions = new Int32Array(nq);
  for (let i = 0; i < nq; i++) positions[i] = N - nq + i;
  const srng = new Prng((p.seed ^ 0x5bd1e995) >>> 0);
  const ks = splitChannelEnergy(channelScales(srng, D, p.kChannelRmsSpread), p.kMeanEnergyFraction);
  const vs = splitChannelEnergy(channelScales(srng, D, p.vChannelRmsSpread), p.vMeanEnergyFraction);
  // Offset signs per kv head and channel, from their own stream.
  const mrng = new Prng((p.seed ^ 0x27d4eb2f) >>> 0);
  const sign = () => (mrng.next() < 0.5 ? -1 : 1);
  const theta = p.ropeTheta ?? 0;
  for (let h = 0; h < kvHeads; h++) {
    const kOff = Float64Array.from(ks.offset, (x) => x * sign());
    const vOff = Float64Array.from(vs.offset, (x) => x * sign());
    for (let t = 0; t < N; t++) {
      const o = (h * N + t) * D;
      for (let c = 0; c < D; c++) {
        k[o + c]! *= ks.std[c]!;
        v[o + c] = v[o + c]! * vs.std[c]! + vOff[c]!;
      }
      if (theta > 0) applyRope(k, o, D, t, theta);
      for (let c = 0; c < D; c++) k[o + c]! += kOff[c]!;
    }
  }
  if (theta > 0) for (let i = 0; i < nq; i++) for (let h = 0; h < heads; h++) applyRope(q, (i * heads + h) * D, D, positions[i]!, theta);
  // Sink: a shared direction u in every query and the sink keys, weighted toward quiet K channels so u adds
  // little score variance to the other keys.
  const sinkTokens = Math.min(N, p.sinkTokens ?? 0);
  const sinkLogit = p.sinkLogit ?? 0;
  const u = new Float64Array(D);
  if (sinkTokens > 0 && sinkLogit !== 0) {
    const raw = srng.normals(D);
    for (let c = 0; c < D; c++) u[c] = raw[c]! / (ks.std[c]! + ks.offset[c]!);
    const c0 = Math.sqrt(Math.abs(sinkLogit) * Math.sqrt(D)) / Math.hypot(...u);
    for (let c = 0; c < D; c++) u[c]! *= c0;
    for (let h = 0; h < kvHeads; h++) for (let t = 0; t < sinkTokens; t++) for (let c = 0; c < D; c++) k[(h * N + t) * D + c]! += Math.sign(sinkLogit) * u[c]!;
  }
  // Scores split as alpha * (q0.k) + (u.k): solve alpha for the entropy target on exactly these keys.
  const group = heads / kvHeads;
  const a: Float64Array[] = [],
    b: Float64Array[] = [];
  for (let i = 0; i < nq; i++) {
    for (let h = 0; h < heads; h++) {
      const n = positions[i]! + 1;
      const kOff = Math.floor(h / group) * N * D;
      const ai = new Float64Array(n),
        bi = new Float64Array(n);
      for (let t = 0; t < n; t++) {
        let sa = 0,
          sb = 0;
        for (let c = 0; c < D; c++) {
          sa += q[(i * heads + h) * D + c]! * k[kOff + t * D + c]!;
          sb += u[c]! * k[kOff + t * D + c]!;
        }
        ai[t] = sa / Math.sqrt(D);
        bi[t] = sb / Math.sqrt(D);
      }
      a.push(ai);
      b.push(bi);
    }
  }
  const target = p.entropyNormalized;
  const at0 = meanEntropy(a, b, 0);
  if (!(target > 0 && target <= at0))
    throw new ArgumentError(`synthetic: entropy target ${target} outside (0, ${at0.toFixed(3)}] (the sink alone gives the upper end)`);
  // Entropy falls as alpha grows; the bracket widens until it holds the target.
  let hi = 1;
  while (meanEntropy(a, b, hi) > target && hi < 1e6) hi *= 2;
  const alpha = bisect((x) => meanEntropy(a, b, x), target, 0, hi, false);
  for (let i = 0; i < nq * heads; i++) for (let c = 0; c < D; c++) q[i * D + c] = alpha * q[i * D + c]! + u[c]!;
  return { tokens: N, headDim: D, heads, kvHeads, q, k, v, positions };
}
