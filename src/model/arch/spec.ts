// What distinguishes one llama-like architecture from another: a few switches the forward pass reads.
import type { HparamDefaults } from '../hparams.js';

export interface ArchSpec {
  /** `general.architecture` value. */
  readonly name: string;
  readonly description: string;
  readonly hparams: HparamDefaults;
  /** Gate activation of the FFN: SwiGLU (silu) or GeGLU (tanh-GELU). */
  readonly act: 'silu' | 'gelu';
  /** Multiply token embeddings by sqrt(nEmbd) (gemma). */
  readonly embedScale: boolean;
  /** Q/K/V biases: required (qwen2), optional (llama files sometimes carry them), or none. */
  readonly qkvBias: 'required' | 'optional' | 'none';
  /** Per-head RMSNorm of q and k before RoPE (qwen3, gemma3). */
  readonly qkNorm: boolean;
  /** RMSNorm of the attention and FFN outputs before the residual add (gemma3's post norms). */
  readonly postNorms: boolean;
}
