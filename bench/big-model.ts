// The synthetic Llama-3-8B-shaped GGUF of bench:big, random weights (speed only, never quality), written by
// our GGUF writer into the temp dir when absent. Encoding 8B random values in TS would take far too long,
// so each matrix kind gets VARIANTS random matrices, encoded once and cycled over the layers, and the token
// embedding / output repeat a block of distinct rows. Tensors go to the writer as nbytes + a lazy data
// getter, so at most one tensor (plus the variants) is in memory, never the 4.5 GB file.
import { existsSync, renameSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { encode } from '../src/formats/codec.js';
import { GGML, ggmlTypeByName } from '../src/gguf/types.js';
import { gv, type GgufValue } from '../src/gguf/values.js';
import { placeholderVocab } from '../src/gguf/vocab.js';
import { writeGguf, type GgufTensorInput } from '../src/gguf/writer.js';
import { Prng } from '../src/numeric/prng.js';
import { randomQ4K } from './random-q4k.js';
import { randomQ6K } from './random-q6k.js';

export interface BigShape {
  readonly name: string;
  readonly dim: number;
  readonly layers: number;
  readonly heads: number;
  readonly kvHeads: number;
  readonly ff: number;
  readonly vocab: number;
  /** Training context: Llama 3.1's 131072, so any benchmark context up to it is in range. */
  readonly ctx: number;
  readonly ropeTheta: number;
}

export const BIG_SHAPES: Readonly<Record<string, BigShape>> = {
  '8b': { name: '8b', dim: 4096, layers: 32, heads: 32, kvHeads: 8, ff: 14336, vocab: 128256, ctx: 131072, ropeTheta: 500000 },
  // The 8B shape's tensors and vocabulary with 4 layers: fits in one wasm32 memory today, so the forward pass
  // at that width can be run and checked finite before models beyond 4 GiB load.
  wide: { name: 'wide', dim: 4096, layers: 4, heads: 32, kvHeads: 8, ff: 14336, vocab: 128256, ctx: 131072, ropeTheta: 500000 },
  // The same kinds of tensors, small enough to dry-run the whole benchmark in a minute (ff a multiple of 256 for q4_K).
  small: { name: 'small', dim: 512, layers: 4, heads: 8, kvHeads: 2, ff: 1536, vocab: 4096, ctx: 131072, ropeTheta: 500000 },
};

/** Weight files: one ggml type throughout, or q4_K_M, llama.cpp's mix (bigTensorType). */
export const BIG_WEIGHTS = ['q4_0', 'q4_K', 'q4_K_M'] as const;
/** The ones bench:big runs by default. */
export const BIG_DEFAULT_WEIGHTS = ['q4_0', 'q4_K'] as const;

/** llama.cpp's use_more_bits (src/llama-quant.cpp): the first and last eighth of the layers and every third between. */
function moreBits(layer: number, layers: number): boolean {
  return layer < layers / 8 || layer >= (7 * layers) / 8 || (layer - Math.floor(layers / 8)) % 3 === 2;
}

/**
 * The ggml type of one tensor kind in a file of `weights`: q4_K_M as llama-quantize writes it for a llama
 * (output q6_K; attn_v and ffn_down q6_K on moreBits layers; every other matrix q4_K).
 */
export function bigTensorType(weights: string, kind: string, layer: number, layers: number): string {
  if (weights !== 'q4_K_M') return weights;
  if (kind === 'output') return 'q6_K';
  if ((kind === 'attn_v' || kind === 'ffn_down') && moreBits(layer, layers)) return 'q6_K';
  return 'q4_K';
}

/** Random matrices per kind (q, k, v, o, gate, up, down), cycled over layers. */
const VARIANTS = 2;
/** Distinct rows of token_embd / output, repeated down the vocabulary. */
const DISTINCT_ROWS = 8192;
/** Bumped when the generator changes, so a file from an older generator is not reused. */
const GENERATOR = 1;

export function bigModelPath(s: BigShape, weightType: string): string {
  return join(
    tmpdir(),
    `kvpack-bench-big-${s.name}-d${s.dim}-l${s.layers}-h${s.heads}x${s.kvHeads}-f${s.ff}-v${s.vocab}-c${s.ctx}-${weightType}-g${GENERATOR}.gguf`,
  );
}

/** [rows, cols] random weights of RMS 1/sqrt(cols) (activations stay finite through the layers) in the weight type. */
function randomMatrix(weightType: string, rows: number, cols: number, rng: Prng): Uint8Array {
  const std = 1 / Math.sqrt(cols);
  const id = ggmlTypeByName(weightType).id;
  if (id === GGML.Q4_K) return randomQ4K(rows, cols, rng, std);
  if (id === GGML.Q6_K) return randomQ6K(rows, cols, rng, std);
  return encode(weightType, rng.normals(rows * cols, std), [rows, cols]);
}

/** A tensor whose bytes are made only when the writer reads them. */
function lazy(name: string, type: number, dims: number[], nbytes: number, make: () => Uint8Array): GgufTensorInput {
  return {
    name,
    type,
    dims,
    nbytes,
    get data() {
      return make();
    },
  };
}

/** The writer input: metadata as a llama GGUF (placeholder vocabulary) and lazy tensors. */
function bigModelInput(s: BigShape, weights: string): { metadata: [string, GgufValue][]; tensors: GgufTensorInput[] } {
  const headDim = s.dim / s.heads;
  const kvDim = s.kvHeads * headDim;
  // Matrix kinds as [ggml name, rows (out), cols (in)].
  const kinds: [string, number, number][] = [
    ['attn_q', s.dim, s.dim],
    ['attn_k', kvDim, s.dim],
    ['attn_v', kvDim, s.dim],
    ['attn_output', s.dim, s.dim],
    ['ffn_gate', s.ff, s.dim],
    ['ffn_down', s.dim, s.ff],
    ['ffn_up', s.ff, s.dim],
  ];
  const rowBytes = (type: string, cols: number) => {
    const t = ggmlTypeByName(type);
    return (cols / t.blockValues) * t.blockBytes;
  };
  const variants = new Map<string, Uint8Array>();
  const variant = (type: string, kind: string, v: number, rows: number, cols: number): Uint8Array => {
    const key = `${type}:${kind}:${v}`;
    if (!variants.has(key)) variants.set(key, randomMatrix(type, rows, cols, new Prng(1000 + variants.size)));
    return variants.get(key)!;
  };
  const repeatedRows = (type: string, seed: number): Uint8Array => {
    const block = randomMatrix(type, Math.min(DISTINCT_ROWS, s.vocab), s.dim, new Prng(seed));
    const out = new Uint8Array(rowBytes(type, s.dim) * s.vocab);
    for (let at = 0; at < out.length; at += block.length) out.set(block.subarray(0, Math.min(block.length, out.length - at)), at);
    return out;
  };
  const vocabTensor = (name: string, kind: string, seed: number) => {
    const type = bigTensorType(weights, kind, 0, s.layers);
    return lazy(name, ggmlTypeByName(type).id, [s.dim, s.vocab], rowBytes(type, s.dim) * s.vocab, () => repeatedRows(type, seed));
  };
  const norm = (seed: number): Uint8Array => {
    const rng = new Prng(seed);
    const w = new Float32Array(s.dim);
    for (let i = 0; i < s.dim; i++) w[i] = 1 + 0.1 * rng.normal();
    return new Uint8Array(w.buffer);
  };
  const normTensor = (name: string, seed: number) => lazy(name, GGML.F32, [s.dim], 4 * s.dim, () => norm(seed));

  const tensors: GgufTensorInput[] = [vocabTensor('token_embd.weight', 'token_embd', 1)];
  for (let l = 0; l < s.layers; l++) {
    tensors.push(normTensor(`blk.${l}.attn_norm.weight`, 10 + 2 * l));
    for (const [kind, rows, cols] of kinds) {
      if (kind === 'ffn_gate') tensors.push(normTensor(`blk.${l}.ffn_norm.weight`, 11 + 2 * l));
      const type = bigTensorType(weights, kind, l, s.layers);
      tensors.push(
        lazy(`blk.${l}.${kind}.weight`, ggmlTypeByName(type).id, [cols, rows], rowBytes(type, cols) * rows, () =>
          variant(type, kind, l % VARIANTS, rows, cols),
        ),
      );
    }
  }
  tensors.push(normTensor('output_norm.weight', 2));
  tensors.push(vocabTensor('output.weight', 'output', 3));

  const metadata: [string, GgufValue][] = [
    ['general.architecture', gv.str('llama')],
    ['general.name', gv.str(`kvpack-bench-random-llama-${s.name}`)],
    ['llama.context_length', gv.u32(s.ctx)],
    ['llama.embedding_length', gv.u32(s.dim)],
    ['llama.block_count', gv.u32(s.layers)],
    ['llama.feed_forward_length', gv.u32(s.ff)],
    ['llama.attention.head_count', gv.u32(s.heads)],
    ['llama.attention.head_count_kv', gv.u32(s.kvHeads)],
    ['llama.rope.dimension_count', gv.u32(headDim)],
    ['llama.attention.layer_norm_rms_epsilon', gv.f32(1e-5)],
    ['llama.rope.freq_base', gv.f32(s.ropeTheta)],
    ...placeholderVocab(s.vocab),
  ];
  return { metadata, tensors };
}

export interface BigModelFile {
  path: string;
  bytes: number;
  /** Seconds spent writing it in this run; null when it was already there. */
  writeS: number | null;
}

/** The model file, written first when absent (to a partial name renamed at the end, so a killed write is not reused). */
export function bigModel(s: BigShape, weightType: string, log: (s: string) => void): BigModelFile {
  const path = bigModelPath(s, weightType);
  let writeS: number | null = null;
  if (!existsSync(path)) {
    log(`writing ${path} (random weights) ...`);
    const partial = `${path}.partial`;
    const t0 = performance.now();
    try {
      writeGguf(partial, bigModelInput(s, weightType));
      renameSync(partial, path);
    } finally {
      rmSync(partial, { force: true });
    }
    writeS = (performance.now() - t0) / 1000;
  }
  return { path, bytes: statSync(path).size, writeS };
}
