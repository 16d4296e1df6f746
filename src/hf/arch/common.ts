// Pieces every architecture's metadata shares: the base keys llama.cpp's TextModel writes, RoPE scaling,
// the head size, and the activation check.
import { gv, type GgufValue } from '../../gguf/values.js';
import type { HfConfig } from '../config.js';
import type { HfArch, LayerTensor } from './spec.js';

/** The llama block's per-layer tensors; architectures add to or rename these. */
export const LLAMA_LAYER: readonly LayerTensor[] = [
  { hf: 'input_layernorm.weight', gguf: 'attn_norm.weight' },
  { hf: 'self_attn.q_proj.weight', gguf: 'attn_q.weight' },
  { hf: 'self_attn.k_proj.weight', gguf: 'attn_k.weight' },
  { hf: 'self_attn.v_proj.weight', gguf: 'attn_v.weight' },
  { hf: 'self_attn.o_proj.weight', gguf: 'attn_output.weight' },
  { hf: 'post_attention_layernorm.weight', gguf: 'ffn_norm.weight' },
  { hf: 'mlp.gate_proj.weight', gguf: 'ffn_gate.weight' },
  { hf: 'mlp.down_proj.weight', gguf: 'ffn_down.weight' },
  { hf: 'mlp.up_proj.weight', gguf: 'ffn_up.weight' },
];

/** The same list with q/k/v biases after the v projection. */
export function withQkvBias(optional: boolean): LayerTensor[] {
  const bias = (x: string) => ({ hf: `self_attn.${x}_proj.bias`, gguf: `attn_${x}.bias`, optional });
  const out = [...LLAMA_LAYER];
  out.splice(4, 0, bias('q'), bias('k'), bias('v'));
  return out;
}

/** Defaults for keys a config may omit (the HF config class's defaults, as llama.cpp's converter uses them). */
export interface ConfigDefaults {
  readonly ctx?: number;
  readonly heads?: number;
  readonly kvHeads?: number;
  readonly headDim?: number;
  readonly rmsEps: number;
  readonly ropeTheta: number;
}

/** Per-head size: `head_dim`, else the default, else hidden / heads (which must divide). */
export function headDim(c: HfConfig, d: ConfigDefaults): number {
  if (c.has('head_dim') || d.headDim !== undefined) return c.int('head_dim', d.headDim);
  const hidden = c.int('hidden_size');
  const heads = c.int('num_attention_heads', d.heads);
  if (hidden % heads !== 0) throw c.unsupported('num_attention_heads', `${heads} does not divide hidden_size ${hidden} (and no head_dim is given)`);
  return hidden / heads;
}

/** f32 metadata holds the float32 rounding, as read back from a GGUF file. */
const f32 = (x: number): GgufValue => gv.f32(Math.fround(x));

/** TextModel.set_gguf_parameters: sizes, counts, RoPE base, RMS epsilon, head size when the config gives one. */
export function baseMetadata(a: string, c: HfConfig, d: ConfigDefaults): [string, GgufValue][] {
  const heads = c.int('num_attention_heads', d.heads);
  const kvHeads = c.int('num_key_value_heads', d.kvHeads ?? heads);
  if (heads % kvHeads !== 0) throw c.unsupported('num_key_value_heads', `${kvHeads} does not divide num_attention_heads ${heads}`);
  const md: [string, GgufValue][] = [
    [`${a}.context_length`, gv.u32(c.int('max_position_embeddings', d.ctx))],
    [`${a}.embedding_length`, gv.u32(c.int('hidden_size'))],
    [`${a}.block_count`, gv.u32(c.int('num_hidden_layers'))],
    [`${a}.feed_forward_length`, gv.u32(c.int('intermediate_size'))],
    [`${a}.attention.head_count`, gv.u32(heads)],
    [`${a}.attention.head_count_kv`, gv.u32(kvHeads)],
    [`${a}.rope.freq_base`, f32(c.num('rope_theta', d.ropeTheta))],
    [`${a}.attention.layer_norm_rms_epsilon`, f32(c.num('rms_norm_eps', d.rmsEps))],
  ];
  if (c.has('head_dim') || d.headDim !== undefined) {
    const hd = headDim(c, d);
    md.push([`${a}.attention.key_length`, gv.u32(hd)], [`${a}.attention.value_length`, gv.u32(hd)]);
  }
  return md;
}

/**
 * `rope_scaling` as `<arch>.rope.scaling.*` keys (linear, yarn); `extra` are types the architecture handles
 * elsewhere (llama3 -> rope_freqs tensor). Any other type is an error rather than silently wrong positions.
 */
export function ropeScalingMetadata(a: string, c: HfConfig, extra: readonly string[] = []): [string, GgufValue][] {
  const rs = c.obj('rope_scaling');
  if (!rs) return [];
  const type = rs.str('rope_type', rs.str('type', 'default'));
  if (type === 'default' || extra.includes(type)) return [];
  if (type === 'linear')
    return [
      [`${a}.rope.scaling.type`, gv.str('linear')],
      [`${a}.rope.scaling.factor`, f32(rs.num('factor'))],
    ];
  if (type === 'yarn') {
    return [
      [`${a}.rope.scaling.type`, gv.str('yarn')],
      [`${a}.rope.scaling.factor`, f32(rs.num('factor'))],
      [`${a}.rope.scaling.original_context_length`, gv.u32(rs.int('original_max_position_embeddings'))],
    ];
  }
  throw c.unsupported('rope_scaling', `type '${type}' is not supported (supported: linear, yarn${extra.map((x) => `, ${x}`).join('')})`);
}

/** The FFN activation must be the one the engine runs for this architecture. */
export function checkActivation(arch: HfArch, c: HfConfig): void {
  const act = c.str(arch.activation.key, arch.activation.fallback);
  if (!arch.activation.values.includes(act)) {
    throw c.unsupported(arch.activation.key, `'${act}' is not supported for ${arch.gguf} (supported: ${arch.activation.values.join(', ')})`);
  }
}
