// llama (Llama 2/3, TinyLlama, SmolLM, llama2.c checkpoints): RMSNorm, RoPE on neighbouring pairs (the
// GGUF converter permuted q/k into that order), GQA, SwiGLU; llama 3 RoPE scaling arrives as rope_freqs.
import type { ArchSpec } from './spec.js';

export const llama: ArchSpec = {
  name: 'llama',
  description: 'Llama 2/3, TinyLlama, SmolLM, llama2.c',
  hparams: { ropeStyle: 'norm' },
  act: 'silu',
  embedScale: false,
  qkvBias: 'optional',
  qkNorm: false,
  postNorms: false,
};
