// gemma3 text (Gemma3ForCausalLM, and the language model of Gemma3ForConditionalGeneration): norms stored
// as w and applied as (1 + w), so GGUF gets 1 + w; QK-norm; post-attention and post-FFN norms; NEOX RoPE;
// sliding-window layers (5 local per global unless the config says otherwise) with their own RoPE base.
import type { GgufValue } from '../../gguf/values.js';
import { gv } from '../../gguf/values.js';
import type { HfConfig } from '../config.js';
import { baseMetadata, headDim, LLAMA_LAYER, ropeScalingMetadata, type ConfigDefaults } from './common.js';
import type { HfArch } from './spec.js';

/** Gemma3TextConfig's defaults, as llama.cpp's converter fills them in. */
const DEFAULTS: ConfigDefaults = { ctx: 131072, heads: 8, kvHeads: 4, headDim: 256, rmsEps: 1e-6, ropeTheta: 1e6 };
/** llama.cpp's gemma3 pattern: every 6th layer global (what the engine assumes without a pattern key). */
const DEFAULT_PERIOD = 6;
/** The local layers' RoPE base llama.cpp uses when the file gives none. */
const DEFAULT_LOCAL_BASE = 10000;
/** gemma3 27B's layer count: the engine scales its scores by hidden / heads, the others by head_dim. */
const GEMMA3_27B_LAYERS = 62;

const rename = (hf: string, gguf: string) => ({ hf, gguf });

export const gemma3: HfArch = {
  gguf: 'gemma3',
  classes: ['Gemma3ForCausalLM', 'Gemma3ForConditionalGeneration'],
  layerTensors: [
    ...LLAMA_LAYER.slice(0, 4),
    rename('self_attn.q_norm.weight', 'attn_q_norm.weight'),
    rename('self_attn.k_norm.weight', 'attn_k_norm.weight'),
    LLAMA_LAYER[4]!,
    rename('post_attention_layernorm.weight', 'post_attention_norm.weight'),
    rename('pre_feedforward_layernorm.weight', 'ffn_norm.weight'),
    ...LLAMA_LAYER.slice(6),
    rename('post_feedforward_layernorm.weight', 'post_ffw_norm.weight'),
  ],
  permuteQk: false,
  normShift: 1,
  activation: { key: 'hidden_activation', values: ['gelu_pytorch_tanh'], fallback: 'gelu_pytorch_tanh' },
  embedToVocab: true,
  metadata: (c) => {
    checkScoreScale(c);
    const md: [string, GgufValue][] = [
      ...baseMetadata('gemma3', c, DEFAULTS),
      ['gemma3.attention.sliding_window', gv.u32(c.int('sliding_window', 4096))],
      ...ropeScalingMetadata('gemma3', c),
    ];
    const local = c.num('rope_local_base_freq', DEFAULT_LOCAL_BASE);
    if (local !== DEFAULT_LOCAL_BASE) md.push(['gemma3.rope.freq_base_swa', gv.f32(Math.fround(local))]);
    const pattern = slidingLayers(c);
    if (pattern.some((s, l) => s !== l % DEFAULT_PERIOD < DEFAULT_PERIOD - 1)) {
      md.push(['gemma3.attention.sliding_window_pattern', { type: 'array', itemType: 'bool', value: pattern }]);
    }
    for (const k of ['attn_logit_softcapping', 'final_logit_softcapping']) {
      if (c.has(k)) md.push([`gemma3.${k}`, gv.f32(Math.fround(c.num(k)))]);
    }
    return md;
  },
};

/** Per layer, true when it attends over the sliding window: `layer_types`, else `sliding_window_pattern`. */
function slidingLayers(c: HfConfig): boolean[] {
  const n = c.int('num_hidden_layers');
  const types = c.strings('layer_types');
  if (types) {
    if (types.length !== n) throw c.unsupported('layer_types', `has ${types.length} entries for ${n} layers`);
    return types.map((t) => {
      if (t !== 'sliding_attention' && t !== 'full_attention') throw c.unsupported('layer_types', `'${t}' is not sliding_attention or full_attention`);
      return t === 'sliding_attention';
    });
  }
  const period = c.int('sliding_window_pattern', DEFAULT_PERIOD);
  // transformers' Gemma3: layer l slides unless (l + 1) is a multiple of the pattern.
  return Array.from({ length: n }, (_, l) => (l + 1) % period !== 0);
}

/** No GGUF key carries query_pre_attn_scalar: the engine's rule must give the config's value. */
function checkScoreScale(c: HfConfig): void {
  if (!c.has('query_pre_attn_scalar')) return;
  const layers = c.int('num_hidden_layers');
  const engine = layers === GEMMA3_27B_LAYERS ? c.int('hidden_size') / c.int('num_attention_heads', DEFAULTS.heads) : headDim(c, DEFAULTS);
  const given = c.num('query_pre_attn_scalar');
  if (given !== engine) throw c.unsupported('query_pre_attn_scalar', `${given} differs from the ${engine} the engine derives for a ${layers}-layer gemma3`);
}
