// llama (LlamaForCausalLM, MistralForCausalLM): q/k rows permuted to neighbouring RoPE pairs, optional
// attention biases, llama 3 RoPE scaling as a rope_freqs tensor. Mistral's sliding window is ignored, as
// llama.cpp's converter ignores it (the `llama` arch has none).
import { GGML } from '../../gguf/types.js';
import { gv } from '../../gguf/values.js';
import type { HfConfig } from '../config.js';
import { baseMetadata, headDim, ropeScalingMetadata, withQkvBias, type ConfigDefaults } from './common.js';
import type { HfArch } from './spec.js';

/** LlamaConfig's defaults. */
const DEFAULTS: ConfigDefaults = { rmsEps: 1e-6, ropeTheta: 10000 };

export const llama: HfArch = {
  gguf: 'llama',
  classes: ['LlamaForCausalLM', 'MistralForCausalLM'],
  layerTensors: withQkvBias(true),
  permuteQk: true,
  normShift: 0,
  activation: { key: 'hidden_act', values: ['silu'], fallback: 'silu' },
  embedToVocab: false,
  metadata: (c) => [
    ...baseMetadata('llama', c, DEFAULTS),
    ['llama.rope.dimension_count', gv.u32(headDim(c, DEFAULTS))],
    ['llama.vocab_size', gv.u32(c.int('vocab_size'))],
    ...ropeScalingMetadata('llama', c, ['llama3']),
  ],
  extraTensors: (c) => {
    const factors = llama3RopeFactors(c);
    if (!factors) return [];
    const data = new Uint8Array(factors.buffer);
    return [['rope_freqs.weight', { type: GGML.F32, dims: [factors.length], data }]];
  },
};

/**
 * llama 3's per-pair frequency divisors (LlamaModel.generate_extra_tensors), in float32 as torch computes
 * them: 1 for short wavelengths, `factor` for long ones, a smooth blend between.
 */
export function llama3RopeFactors(c: HfConfig): Float32Array | undefined {
  const rs = c.obj('rope_scaling');
  if (rs?.str('rope_type', rs.str('type', '')) !== 'llama3') return undefined;
  const f = Math.fround;
  const base = c.num('rope_theta', DEFAULTS.ropeTheta);
  const dim = headDim(c, DEFAULTS);
  const factor = rs.num('factor', 8);
  const low = rs.num('low_freq_factor', 1);
  const high = rs.num('high_freq_factor', 4);
  const oldCtx = rs.num('original_max_position_embeddings', 8192);
  const lowWavelen = oldCtx / low;
  const highWavelen = oldCtx / high;
  return Float32Array.from({ length: dim / 2 }, (_, i) => {
    const freq = f(1 / f(base ** f(f(2 * i) / dim)));
    const wavelen = f((2 * Math.PI) / freq);
    if (wavelen < highWavelen) return 1;
    if (wavelen > lowWavelen) return factor;
    const smooth = f(f(f(oldCtx / wavelen) - low) / (high - low));
    return f(1 / f(f(f(1 - smooth) / factor) + smooth));
  });
}
