// qwen2: the llama block with biases on Q, K and V, and RoPE on the two halves of each head (neox).
import type { ArchSpec } from './spec.js';

export const qwen2: ArchSpec = {
  name: 'qwen2',
  description: 'Qwen2 / Qwen2.5 (QKV bias)',
  hparams: { ropeStyle: 'neox' },
  act: 'silu',
  embedScale: false,
  qkvBias: 'required',
  qkNorm: false,
  postNorms: false,
};
