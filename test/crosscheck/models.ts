// Tiny random GGUF models of each architecture, written by our writer with the metadata llama.cpp needs
// (a placeholder SentencePiece vocab, key/value lengths, sliding window), for cross-checks against it.
import { encode } from '../../src/formats/codec.js';
import { GGML } from '../../src/gguf/types.js';
import { gv, type GgufValue } from '../../src/gguf/values.js';
import { placeholderVocab } from '../../src/gguf/vocab.js';
import type { GgufTensorInput, GgufWriteInput } from '../../src/gguf/writer.js';
import { Prng } from '../../src/numeric/prng.js';
import { archTensors } from '../fixtures/arch-tensors.js';

export const CROSS_ARCHS = ['llama', 'qwen2', 'qwen3', 'gemma3'] as const;
export type CrossArch = (typeof CROSS_ARCHS)[number];
export type CrossWeightType = 'f32' | 'f16';

export interface CrossShape {
  dim: number;
  layers: number;
  heads: number;
  kvHeads: number;
  /** A multiple of 32: llama.cpp views the q8_0/q4_0 cache per head, so a block may not straddle heads. */
  headDim: number;
  ff: number;
  vocab: number;
  ctx: number;
  /** gemma3 only: sliding window of the local layers. */
  window?: number;
}

/**
 * GQA everywhere; qwen3 and gemma3 with head size != dim / heads as the real models have; gemma3 with six
 * layers so its 5-local/1-global pattern holds one global layer.
 */
export const CROSS_SHAPES: Readonly<Record<CrossArch, CrossShape>> = {
  llama: { dim: 128, layers: 3, heads: 4, kvHeads: 2, headDim: 32, ff: 256, vocab: 384, ctx: 512 },
  qwen2: { dim: 128, layers: 2, heads: 4, kvHeads: 1, headDim: 32, ff: 256, vocab: 320, ctx: 512 },
  qwen3: { dim: 96, layers: 3, heads: 4, kvHeads: 2, headDim: 64, ff: 192, vocab: 448, ctx: 512 },
  gemma3: { dim: 64, layers: 6, heads: 4, kvHeads: 2, headDim: 32, ff: 192, vocab: 288, ctx: 512, window: 16 },
};

export interface CrossModelOptions {
  weightType: CrossWeightType;
  seed?: number;
  /** Overrides of the architecture's default shape. */
  shape?: Partial<CrossShape>;
}

/** A GGUF write input for `arch` with random weights (std 1/sqrt(fan-in)); norms and biases stay f32. */
export function crossModel(arch: CrossArch, o: CrossModelOptions): GgufWriteInput {
  const s = { ...CROSS_SHAPES[arch], ...o.shape };
  const rng = new Prng(o.seed ?? 11);
  const { dim, heads, kvHeads, headDim: hd, ff, vocab } = s;
  const md: [string, GgufValue][] = [
    ['general.architecture', gv.str(arch)],
    ['general.name', gv.str(`kvpack-cross-${arch}`)],
    [`${arch}.context_length`, gv.u32(s.ctx)],
    [`${arch}.embedding_length`, gv.u32(dim)],
    [`${arch}.block_count`, gv.u32(s.layers)],
    [`${arch}.feed_forward_length`, gv.u32(ff)],
    [`${arch}.attention.head_count`, gv.u32(heads)],
    [`${arch}.attention.head_count_kv`, gv.u32(kvHeads)],
    [`${arch}.attention.key_length`, gv.u32(hd)],
    [`${arch}.attention.value_length`, gv.u32(hd)],
    [`${arch}.rope.dimension_count`, gv.u32(hd)],
    [`${arch}.attention.layer_norm_rms_epsilon`, gv.f32(1e-6)],
    [`${arch}.rope.freq_base`, gv.f32(arch === 'gemma3' ? 1e6 : 10000)],
    ...placeholderVocab(vocab),
  ];
  if (s.window) md.push([`${arch}.attention.sliding_window`, gv.u32(s.window)]);

  const tensors: GgufTensorInput[] = [];
  const f32 = (name: string, values: Float32Array) =>
    tensors.push({ name, type: GGML.F32, dims: [values.length], data: new Uint8Array(values.buffer, values.byteOffset, values.byteLength) });
  // [rows, cols] matrix stored as ggml dims [cols, rows], encoded row by row in the weight type.
  const matrix = (name: string, rows: number, cols: number) => {
    const w = rng.normals(rows * cols, 1 / Math.sqrt(cols));
    if (o.weightType === 'f32') tensors.push({ name, type: GGML.F32, dims: [cols, rows], data: new Uint8Array(w.buffer) });
    else tensors.push({ name, type: GGML.F16, dims: [cols, rows], data: encode('f16', w, [rows, cols]) });
  };
  const norm = (name: string, n: number) =>
    f32(
      name,
      Float32Array.from({ length: n }, () => 1 + 0.1 * rng.normal()),
    );
  const bias = (name: string, n: number) => f32(name, rng.normals(n, 0.1));

  archTensors(arch, { vocab, dim, ff, layers: s.layers, heads, kvHeads, hd }, { matrix, norm, bias });
  return { metadata: md, tensors };
}

/** A deterministic prompt of `n` ids: BOS then ids spread over the vocabulary (no control tokens). */
export function crossPrompt(arch: CrossArch, n: number, seed = 1): number[] {
  const rng = new Prng(seed);
  const vocab = CROSS_SHAPES[arch].vocab;
  return [1, ...Array.from({ length: n - 1 }, () => 3 + rng.int(vocab - 3))];
}
