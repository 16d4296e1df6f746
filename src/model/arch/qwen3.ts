// qwen3: no QKV bias; instead a per-head RMSNorm on q and k before RoPE (neox pairing).
import type { ArchSpec } from './spec.js';

export const qwen3: ArchSpec = {
  name: 'qwen3',
  description: 'Qwen3 dense (QK-norm)',
  hparams: { ropeStyle: 'neox' },
  act: 'silu',
  embedScale: false,
  qkvBias: 'none',
  qkNorm: true,
  postNorms: false,
};
