// qwen2 (Qwen2ForCausalLM): the llama block with q/k/v biases, NEOX RoPE (rows kept in HF order), YaRN.
import { baseMetadata, ropeScalingMetadata, withQkvBias, type ConfigDefaults } from './common.js';
import type { HfArch } from './spec.js';

/** Qwen2Config's defaults. */
const DEFAULTS: ConfigDefaults = { rmsEps: 1e-6, ropeTheta: 10000 };

export const qwen2: HfArch = {
  gguf: 'qwen2',
  classes: ['Qwen2ForCausalLM'],
  layerTensors: withQkvBias(false),
  permuteQk: false,
  normShift: 0,
  activation: { key: 'hidden_act', values: ['silu'], fallback: 'silu' },
  embedToVocab: false,
  metadata: (c) => [...baseMetadata('qwen2', c, DEFAULTS), ...ropeScalingMetadata('qwen2', c)],
};
