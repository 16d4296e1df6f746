// Engine hyperparameters: the loader's shared fields (src/gguf/model.ts) plus what the forward pass needs
// per architecture: RoPE pairing and scaling, sliding-window layers, attention scale, soft-caps.
import { FileFormatError } from '../errors.js';
import type { LoadedModel, ModelHparams } from '../gguf/model.js';
import { getF32, getInt, getString, type Metadata } from '../gguf/metadata.js';
import type { RopeScaling, RopeStyle } from '../kernels/ops/reference.js';

// RoPE's pairing and scaling types live with the op that reads them (kernels/ops/reference.ts).
export type { RopeScaling, RopeStyle };

export interface Hparams extends ModelHparams {
  readonly arch: string;
  readonly ropeStyle: RopeStyle;
  readonly ropeScaling: RopeScaling;
  /** Sliding-window size for local layers, 0 when every layer is global. */
  readonly slidingWindow: number;
  /** Per layer: true when the layer attends over a sliding window (gemma3 local layers). */
  readonly swaLayers: readonly boolean[];
  /** RoPE base of sliding-window layers (gemma3: 10000, unscaled). */
  readonly ropeThetaSwa: number;
  /** Score scale q.k * attnScale. */
  readonly attnScale: number;
  /** tanh soft-cap of attention scores and of final logits; 0 = off. */
  readonly attnSoftcap: number;
  readonly finalSoftcap: number;
}

export const NO_ROPE_SCALING: RopeScaling = Object.freeze({ type: 'none', factor: 1, origCtx: 0, attnFactor: 1, betaFast: 32, betaSlow: 1 });

/** Reads `{arch}.rope.scaling.*`; an unknown scaling type is an error rather than silently wrong logits. */
export function readRopeScaling(md: Metadata, arch: string, nCtxTrain: number): RopeScaling {
  const k = (s: string): string => `${arch}.rope.scaling.${s}`;
  const type = getString(md, k('type'), 'none');
  // Older files store only `rope.scale_linear`.
  const legacyLinear = getF32(md, `${arch}.rope.scale_linear`, 0);
  if (type === 'none' && legacyLinear > 0 && legacyLinear !== 1) {
    return { ...NO_ROPE_SCALING, type: 'linear', factor: legacyLinear };
  }
  if (type === 'none') return NO_ROPE_SCALING;
  const factor = getF32(md, k('factor'), 1);
  if (!(factor > 0)) throw new FileFormatError('gguf', `metadata '${k('factor')}' = ${factor} must be > 0`);
  if (type === 'linear') return { ...NO_ROPE_SCALING, type, factor };
  if (type === 'yarn') {
    return {
      type,
      factor,
      origCtx: getInt(md, k('original_context_length'), nCtxTrain),
      attnFactor: getF32(md, k('attn_factor'), 1),
      betaFast: getF32(md, k('yarn_beta_fast'), 32),
      betaSlow: getF32(md, k('yarn_beta_slow'), 1),
    };
  }
  throw new FileFormatError('gguf', `metadata '${k('type')}' = '${type}' is not supported (supported: none, linear, yarn)`);
}

/** Per-architecture defaults an arch file supplies (see src/model/arch/). */
export interface HparamDefaults {
  readonly ropeStyle: RopeStyle;
  /** Sliding-window layer rule when the file has `attention.sliding_window`: every `swaPeriod`-th layer is global. */
  readonly swaPeriod?: number;
  /** RoPE base of sliding-window layers when the file gives none. */
  readonly ropeThetaSwa?: number;
  /** Attention scale from the shared fields; default 1/sqrt(headDim). */
  readonly attnScale?: (hp: ModelHparams) => number;
}

/** Engine hyperparameters for a loaded model (GGUF metadata or llama2.c header, already in `m.hparams`). */
export function engineHparams(m: LoadedModel, d: HparamDefaults): Hparams {
  const hp = m.hparams;
  const md = m.metadata;
  const a = m.arch;
  if (hp.headDimV !== hp.headDim) {
    throw new FileFormatError('gguf', `${a}: key_length ${hp.headDim} != value_length ${hp.headDimV} (the KV cache needs one head size)`);
  }
  if (hp.ropeDim % 2 !== 0 || hp.ropeDim > hp.headDim) {
    throw new FileFormatError('gguf', `${a}: rope.dimension_count ${hp.ropeDim} must be even and <= head size ${hp.headDim}`);
  }
  const slidingWindow = getInt(md, `${a}.attention.sliding_window`, 0);
  const swaLayers = readSwaLayers(md, a, hp.nLayer, slidingWindow, d.swaPeriod ?? 0);
  return {
    ...hp,
    arch: a,
    ropeStyle: d.ropeStyle,
    ropeScaling: readRopeScaling(md, a, hp.nCtxTrain),
    slidingWindow,
    swaLayers,
    ropeThetaSwa: getF32(md, `${a}.rope.freq_base_swa`, d.ropeThetaSwa ?? hp.ropeTheta),
    attnScale: d.attnScale ? d.attnScale(hp) : 1 / Math.sqrt(hp.headDim),
    attnSoftcap: getF32(md, `${a}.attn_logit_softcapping`, 0),
    finalSoftcap: getF32(md, `${a}.final_logit_softcapping`, 0),
  };
}

/** Which layers are local: a per-layer bool array, a period, or the arch default period. */
function readSwaLayers(md: Metadata, a: string, nLayer: number, window: number, defaultPeriod: number): boolean[] {
  if (window <= 0) return new Array<boolean>(nLayer).fill(false);
  const key = `${a}.attention.sliding_window_pattern`;
  const v = md.get(key);
  if (v?.type === 'array' && v.itemType === 'bool') {
    if (v.value.length !== nLayer) throw new FileFormatError('gguf', `metadata '${key}' has ${v.value.length} entries for ${nLayer} layers`);
    return [...v.value];
  }
  const period = getInt(md, key, defaultPeriod);
  // llama.cpp's set_swa_pattern(n): layer il is local unless il % n == n - 1; period 0 means all local.
  return Array.from({ length: nLayer }, (_, l) => period === 0 || l % period < period - 1);
}
