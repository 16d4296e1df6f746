// gemma3: embeddings scaled by sqrt(nEmbd), QK-norm, post-attention and post-FFN norms, GeGLU (tanh-GELU),
// and five sliding-window layers (RoPE base 10000, unscaled) per global layer (base and scaling from
// the file). GGUF norm weights already hold gemma's (1 + w): the converter adds the 1 (norm_shift).
import type { ArchSpec } from './spec.js';

/** gemma3 27B (62 layers) scales scores by 1/sqrt(nEmbd / nHead) = query_pre_attn_scalar; the rest by 1/sqrt(headDim). */
const GEMMA3_27B_LAYERS = 62;

export const gemma3: ArchSpec = {
  name: 'gemma3',
  description: 'Gemma 3 text (sliding-window + global layers)',
  hparams: {
    ropeStyle: 'neox',
    swaPeriod: 6,
    ropeThetaSwa: 10000,
    // llama.cpp chooses the scale by size (no GGUF key carries query_pre_attn_scalar).
    attnScale: (hp) => 1 / Math.sqrt(hp.nLayer === GEMMA3_27B_LAYERS ? hp.nEmbd / hp.nHead : hp.headDim),
  },
  act: 'gelu',
  embedScale: true,
  qkvBias: 'none',
  qkNorm: true,
  postNorms: true,
};
