// The small operations of a transformer block: RMSNorm, RoPE, gated activations, soft-cap, adds, scale.
// Plain TS, computed in float64 and rounded once: the reference for the wasm kernels (ops.ts).
import { ShapeError } from '../../errors.js';

/**
 * How RoPE pairs dimensions: `norm` rotates (2i, 2i+1) (llama GGUF, whose q/k rows llama.cpp's converter
 * permuted into that order); `neox` rotates (i, i + dims/2) (qwen2, qwen3, gemma3).
 */
export type RopeStyle = 'norm' | 'neox';

/** Context extension as the metadata says (`rope.scaling.*`); llama3 scaling arrives as `rope_freqs.weight`. */
export interface RopeScaling {
  readonly type: 'none' | 'linear' | 'yarn';
  /** Context multiplier (positions are divided by it under linear scaling); 1 for none. */
  readonly factor: number;
  /** Training context before extension (YaRN's correction dims need it). */
  readonly origCtx: number;
  /** YaRN magnitude factor (llama.cpp's attn_factor), default 1. */
  readonly attnFactor: number;
  /** YaRN ramp bounds in rotations (llama.cpp defaults 32 and 1). */
  readonly betaFast: number;
  readonly betaSlow: number;
}

/** out[t] = x[t] / sqrt(mean(x[t]^2) + eps) * w, for n rows of length dim (out may alias x). */
export function rmsNorm(out: Float32Array, x: Float32Array, w: Float32Array, n: number, dim: number, eps: number): void {
  if (w.length !== dim) throw new ShapeError(`rmsNorm: weight ${w.length} != dim ${dim}`);
  for (let t = 0; t < n; t++) {
    const o = t * dim;
    // Sum of squares in float64, like ggml's ggml_float accumulator.
    let ss = 0;
    for (let i = 0; i < dim; i++) ss += x[o + i]! * x[o + i]!;
    const s = 1 / Math.sqrt(ss / dim + eps);
    for (let i = 0; i < dim; i++) out[o + i] = x[o + i]! * s * w[i]!;
  }
}

/** out = act(gate) * up over n values (SwiGLU with silu, GeGLU with tanh-GELU). */
export function gatedAct(act: 'silu' | 'gelu', gate: Float32Array, up: Float32Array, n: number): void {
  if (act === 'silu') {
    for (let i = 0; i < n; i++) {
      const g = gate[i]!;
      gate[i] = (g / (1 + Math.exp(-g))) * up[i]!;
    }
    return;
  }
  // GELU, tanh approximation (ggml_gelu; gemma's gelu_pytorch_tanh).
  const c = Math.sqrt(2 / Math.PI);
  for (let i = 0; i < n; i++) {
    const g = gate[i]!;
    gate[i] = 0.5 * g * (1 + Math.tanh(c * (g + 0.044715 * g * g * g))) * up[i]!;
  }
}

/** x -> cap * tanh(x / cap) in place. */
export function softcap(x: Float32Array, cap: number): void {
  for (let i = 0; i < x.length; i++) x[i] = cap * Math.tanh(x[i]! / cap);
}

/** x += y over n values (the residual add). */
export function addInPlace(x: Float32Array, y: Float32Array, n: number): void {
  for (let i = 0; i < n; i++) x[i] += y[i]!;
}

/** x[t] += b for n rows of dim values (a bias). */
export function addRows(x: Float32Array, b: Float32Array, n: number, dim: number): void {
  if (b.length !== dim) throw new ShapeError(`addRows: bias ${b.length} != dim ${dim}`);
  for (let t = 0; t < n; t++) for (let i = 0; i < dim; i++) x[t * dim + i] += b[i]!;
}

/** x *= k in place. */
export function scale(x: Float32Array, k: number): void {
  for (let i = 0; i < x.length; i++) x[i] *= k;
}

/**
 * Rotary position embedding over the first `dims` values of each head, for one (theta, scaling) setting.
 * `table(positions)` computes cos/sin once per forward call; `apply` rotates q or k rows with it.
 */
export class Rope {
  readonly dims: number;
  readonly style: RopeStyle;
  /** Per pair i: the base angle per position, theta^(-2i/dims) / freqFactor[i]. */
  private readonly freq: Float64Array;
  private readonly scaling: RopeScaling;
  /** YaRN ramp bounds (pair indices) where interpolation gives way to extrapolation. */
  private readonly corrLow: number;
  private readonly corrHigh: number;

  constructor(dims: number, style: RopeStyle, theta: number, scaling: RopeScaling, freqFactors?: Float32Array) {
    if (freqFactors && freqFactors.length !== dims / 2) throw new ShapeError(`rope: ${freqFactors.length} freq factors for ${dims / 2} pairs`);
    this.dims = dims;
    this.style = style;
    this.scaling = scaling;
    this.freq = Float64Array.from({ length: dims / 2 }, (_, i) => theta ** ((-2 * i) / dims) / (freqFactors ? freqFactors[i]! : 1));
    // ggml_rope_yarn_corr_dims: the dims whose wavelength spans beta rotations over the original context.
    const corr = (beta: number) => (dims * Math.log(scaling.origCtx / (beta * 2 * Math.PI))) / (2 * Math.log(theta));
    this.corrLow = scaling.type === 'yarn' ? Math.max(0, Math.floor(corr(scaling.betaFast))) : 0;
    this.corrHigh = scaling.type === 'yarn' ? Math.min(dims - 1, Math.ceil(corr(scaling.betaSlow))) : 0;
  }

  /** cos and sin [n, dims/2] for the given absolute positions (written into `out` when given). */
  table(positions: ArrayLike<number>, out?: { cos: Float32Array; sin: Float32Array }): { cos: Float32Array; sin: Float32Array } {
    const half = this.dims / 2;
    const n = positions.length;
    if (out && (out.cos.length < n * half || out.sin.length < n * half))
      throw new ShapeError(`rope: tables of ${out.cos.length} / ${out.sin.length} values for ${n} x ${half}`);
    const cos = out?.cos ?? new Float32Array(n * half);
    const sin = out?.sin ?? new Float32Array(n * half);
    const s = this.scaling;
    const yarnScale = s.type === 'yarn' ? s.attnFactor * (1 + 0.1 * Math.log(s.factor)) : 1;
    for (let t = 0; t < n; t++) {
      const p = positions[t]!;
      for (let i = 0; i < half; i++) {
        const extrap = p * this.freq[i]!;
        let a = extrap;
        if (s.type === 'linear') a = extrap / s.factor;
        else if (s.type === 'yarn') {
          // Mix interpolated and extrapolated angles along a ramp over the pair index (rope_yarn in ggml).
          const y = (i - this.corrLow) / Math.max(0.001, this.corrHigh - this.corrLow);
          const mix = 1 - Math.min(1, Math.max(0, y));
          a = (extrap / s.factor) * (1 - mix) + extrap * mix;
        }
        cos[t * half + i] = Math.cos(a) * yarnScale;
        sin[t * half + i] = Math.sin(a) * yarnScale;
      }
    }
    return out ?? { cos, sin };
  }

  /** Rotates x [n, heads, headDim] in place with a table from `table()`. */
  apply(x: Float32Array, n: number, heads: number, headDim: number, tab: { cos: Float32Array; sin: Float32Array }): void {
    const half = this.dims / 2;
    // norm pairs neighbours (2i, 2i+1); neox pairs (i, i + dims/2).
    const stride = this.style === 'norm' ? 1 : half;
    const step = this.style === 'norm' ? 2 : 1;
    for (let t = 0; t < n; t++) {
      for (let h = 0; h < heads; h++) {
        const o = (t * heads + h) * headDim;
        for (let i = 0; i < half; i++) {
          const a = o + i * step;
          const b = a + stride;
          const c = tab.cos[t * half + i]!;
          const s = tab.sin[t * half + i]!;
          const x0 = x[a]!;
          const x1 = x[b]!;
          x[a] = x0 * c - x1 * s;
          x[b] = x0 * s + x1 * c;
        }
      }
    }
  }
}
