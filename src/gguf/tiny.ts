// Tiny random llama models as GGUF writer input: fixtures for tests and cross-checks against llama.cpp.
import { ArgumentError } from '../errors.js';
import { encode } from '../formats/codec.js';
import { getFormat } from '../formats/registry.js';
import { Prng } from '../numeric/prng.js';
import { ggmlTypeByName } from './types.js';
import { gv, type GgufValue } from './values.js';
import { placeholderVocab } from './vocab.js';
import type { GgufTensorInput, GgufWriteInput } from './writer.js';

export interface TinyLlamaOptions {
  readonly dim?: number;
  readonly layers?: number;
  readonly heads?: number;
  readonly kvHeads?: number;
  readonly ff?: number;
  /** At least 259 (placeholder SentencePiece vocabulary). */
  readonly vocab?: number;
  readonly ctx?: number;
  readonly seed?: number;
  /** ggml type name of the 2-D weights ('f32', 'f16', 'q8_0', ...): any KV format with ggml bytes. */
  readonly weightType?: string;
  /** Separate output.weight instead of the tied token embedding. */
  readonly separateOutput?: boolean;
}

/** A llama model with random weights (std 0.02-ish scaled by fan-in) that llama.cpp accepts. */
export function tinyLlama(opts: TinyLlamaOptions = {}): GgufWriteInput {
  const dim = opts.dim ?? 64;
  const layers = opts.layers ?? 2;
  const heads = opts.heads ?? 4;
  const kvHeads = opts.kvHeads ?? 2;
  const ff = opts.ff ?? 128;
  const vocab = opts.vocab ?? 320;
  const ctx = opts.ctx ?? 128;
  const weightType = opts.weightType ?? 'f32';
  const rng = new Prng(opts.seed ?? 1);
  const headDim = dim / heads;
  if (!Number.isInteger(headDim) || heads % kvHeads !== 0) throw new ArgumentError(`tinyLlama: bad heads ${heads}/${kvHeads} for dim ${dim}`);

  const wt = ggmlTypeByName(weightType);
  const fmt = getFormat(wt.name);
  if (fmt.ggmlType !== wt.id || fmt.axis !== 'token') throw new ArgumentError(`tinyLlama: '${weightType}' has no ggml-identical format`);

  const tensors: GgufTensorInput[] = [];
  const f32 = (name: string, dims: number[], values: Float32Array): void => {
    tensors.push({ name, type: 0, dims, data: new Uint8Array(values.buffer) });
  };
  // Matrix [out, in] as ggml dims [in, out], each row of `in` values encoded in the weight type.
  const matrix = (name: string, nIn: number, nOut: number): void => {
    const values = rng.normals(nIn * nOut, 1 / Math.sqrt(nIn));
    tensors.push({ name, type: wt.id, dims: [nIn, nOut], data: encode(wt.name, values, [nOut, nIn]) });
  };
  const norm = (name: string): void => {
    const w = new Float32Array(dim);
    for (let i = 0; i < dim; i++) w[i] = 1 + 0.1 * rng.normal();
    f32(name, [dim], w);
  };

  matrix('token_embd.weight', dim, vocab);
  for (let l = 0; l < layers; l++) {
    norm(`blk.${l}.attn_norm.weight`);
    matrix(`blk.${l}.attn_q.weight`, dim, dim);
    matrix(`blk.${l}.attn_k.weight`, dim, kvHeads * headDim);
    matrix(`blk.${l}.attn_v.weight`, dim, kvHeads * headDim);
    matrix(`blk.${l}.attn_output.weight`, dim, dim);
    norm(`blk.${l}.ffn_norm.weight`);
    matrix(`blk.${l}.ffn_gate.weight`, dim, ff);
    matrix(`blk.${l}.ffn_down.weight`, ff, dim);
    matrix(`blk.${l}.ffn_up.weight`, dim, ff);
  }
  norm('output_norm.weight');
  if (opts.separateOutput) matrix('output.weight', dim, vocab);

  const metadata: [string, GgufValue][] = [
    ['general.architecture', gv.str('llama')],
    ['general.name', gv.str('kvpack-tiny-llama')],
    ['llama.context_length', gv.u32(ctx)],
    ['llama.embedding_length', gv.u32(dim)],
    ['llama.block_count', gv.u32(layers)],
    ['llama.feed_forward_length', gv.u32(ff)],
    ['llama.attention.head_count', gv.u32(heads)],
    ['llama.attention.head_count_kv', gv.u32(kvHeads)],
    ['llama.rope.dimension_count', gv.u32(headDim)],
    ['llama.attention.layer_norm_rms_epsilon', gv.f32(1e-5)],
    ['llama.rope.freq_base', gv.f32(10000)],
    ...placeholderVocab(vocab),
  ];
  return { metadata, tensors };
}
