// qwen3 (Qwen3ForCausalLM): no biases; per-head RMSNorm of q and k; NEOX RoPE; head_dim given explicitly.
import { baseMetadata, LLAMA_LAYER, ropeScalingMetadata, type ConfigDefaults } from './common.js';
import type { HfArch } from './spec.js';

/** Qwen3Config's defaults. */
const DEFAULTS: ConfigDefaults = { rmsEps: 1e-6, ropeTheta: 10000 };

export const qwen3: HfArch = {
  gguf: 'qwen3',
  classes: ['Qwen3ForCausalLM'],
  layerTensors: [
    ...LLAMA_LAYER.slice(0, 4),
    { hf: 'self_attn.q_norm.weight', gguf: 'attn_q_norm.weight' },
    { hf: 'self_attn.k_norm.weight', gguf: 'attn_k_norm.weight' },
    ...LLAMA_LAYER.slice(4),
  ],
  permuteQk: false,
  normShift: 0,
  activation: { key: 'hidden_act', values: ['silu'], fallback: 'silu' },
  embedToVocab: false,
  metadata: (c) => [...baseMetadata('qwen3', c, DEFAULTS), ...ropeScalingMetadata('qwen3', c)],
};
