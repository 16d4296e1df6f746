// A runnable model: loads a GGUF file, a llama2.c checkpoint (told apart by magic) or a Hugging Face
// directory (config.json + safetensors), binds its tensors to an architecture's layer weights, and runs forward passes over a KvCache.
import { wasmMatmulSupports } from '../kernels/matmul/weights.js';
import { FileFormatError } from '../errors.js';
import { KvCache, type AttentionPrecision } from '../cache/kvcache.js';
import type { CachePolicy } from '../cache/policy.js';
import { withSlidingWindows } from '../cache/swa.js';
import { checkpointName, llama2cFrom } from '../gguf/llama2c.js';
import { modelFromGguf, type LoadedModel, type ModelTensor } from '../gguf/model.js';
import { hasGgufMagic, readGgufFrom } from '../gguf/reader.js';
import type { ByteSource } from '../gguf/source.js';
import { loadHfModel } from '../hf/load.js';
import type { ModelFiles } from '../hf/model-files.js';
import { loadedFromPath } from './model-path.js';
import { createTokenizer, type Tokenizer } from './tokenizer/index.js';
import { getArchitecture, type ArchSpec } from './arch/registry.js';
import { forward, type ForwardOptions, type ForwardWeights, type LayerWeights } from './forward.js';
import { Rope } from '../kernels/ops/reference.js';
import { vectorF32, Weight } from './forward-weights.js';
import { engineHparams, NO_ROPE_SCALING, type Hparams } from './hparams.js';

/** `expand: 'auto'` may dequantize matrices to float32 only when all of them take at most this many bytes expanded. */
const EXPAND_AUTO_BYTES = 512 * 2 ** 20;

/** Where a model's weights came from: a GGUF file, a llama2.c checkpoint, a Hugging Face directory. */
export type ModelSource = 'gguf' | 'llama2c' | 'hf';

export interface LoadOptions {
  /** Dequantize weights to float32 at load: true, false (stay quantized), or 'auto' (small models). */
  expand?: boolean | 'auto';
}

export interface CacheOptions {
  /** Sliding-window layers keep only their window unless the policy says `slidingWindow: 0` (see cache/swa.ts). */
  policy: CachePolicy;
  /** Positions the cache holds; default the training context. */
  capacity?: number;
  chunkTokens?: number;
  /** Accuracy choices of the attention kernels (default exact float32); see kernels/attention/attend.ts. */
  attention?: AttentionPrecision;
}

export class Model implements ForwardWeights {
  readonly spec: ArchSpec;
  readonly hp: Hparams;
  /** Where the weights came from. */
  readonly source: ModelSource;
  readonly metadata: LoadedModel['metadata'];
  /** The model's tokenizer, or undefined with the reason in `tokenizerProblem`. */
  readonly tokenizer: Tokenizer | undefined;
  readonly tokenizerProblem: string | undefined;
  readonly tokenEmbd: Weight;
  readonly output: Weight;
  readonly outputNorm: Float32Array;
  readonly layers: readonly LayerWeights[];
  readonly ropeGlobal: Rope;
  readonly ropeLocal: Rope;

  constructor(m: LoadedModel, source: ModelSource, opts: LoadOptions = {}) {
    this.spec = getArchitecture(m.arch);
    this.hp = engineHparams(m, this.spec.hparams);
    this.source = source;
    this.metadata = m.metadata;
    const hp = this.hp;
    const auto = opts.expand === 'auto' || opts.expand === undefined;
    const small = expandedBytes(m) <= EXPAND_AUTO_BYTES;
    // 'auto' expands a small model's matrices only where their packed bytes have no wasm kernel: the packed
    // kernels read 2-8x fewer bytes per token (bench model, q8_0: 80-100 tok/s packed, 39-42 expanded).
    const expandOf = (type: number) => (auto ? small && !wasmMatmulSupports(type) : opts.expand === true);
    const t = new TensorSet(m.tensors);
    const mat = (name: string, rows: number, cols: number): Weight => {
      const tensor = t.need(name);
      const w = new Weight(name, tensor, expandOf(tensor.type));
      if (w.rows !== rows || w.cols !== cols)
        throw new FileFormatError('gguf', `tensor '${name}' is [${w.rows}, ${w.cols}], the hparams need [${rows}, ${cols}]`);
      return w;
    };
    const vec = (name: string, len: number) => vectorF32(name, t.need(name), len);
    const opt = (name: string, len: number) => (t.has(name) ? vec(name, len) : undefined);

    const qDim = hp.nHead * hp.headDim;
    const kvDim = hp.nHeadKv * hp.headDim;
    this.tokenEmbd = mat('token_embd.weight', hp.nVocab, hp.nEmbd);
    // Tied classifier when the file has no output.weight (llama2.c shared, qwen small, gemma).
    this.output = t.has('output.weight') ? mat('output.weight', hp.nVocab, hp.nEmbd) : this.tokenEmbd;
    this.outputNorm = vec('output_norm.weight', hp.nEmbd);
    const s = this.spec;
    this.layers = Array.from({ length: hp.nLayer }, (_, l): LayerWeights => {
      const b = (n: string) => `blk.${l}.${n}`;
      const bias = (n: string, len: number) => (s.qkvBias === 'required' ? vec(b(n), len) : s.qkvBias === 'optional' ? opt(b(n), len) : undefined);
      return {
        attnNorm: vec(b('attn_norm.weight'), hp.nEmbd),
        wq: mat(b('attn_q.weight'), qDim, hp.nEmbd),
        wk: mat(b('attn_k.weight'), kvDim, hp.nEmbd),
        wv: mat(b('attn_v.weight'), kvDim, hp.nEmbd),
        wo: mat(b('attn_output.weight'), hp.nEmbd, qDim),
        bq: bias('attn_q.bias', qDim),
        bk: bias('attn_k.bias', kvDim),
        bv: bias('attn_v.bias', kvDim),
        qNorm: s.qkNorm ? vec(b('attn_q_norm.weight'), hp.headDim) : undefined,
        kNorm: s.qkNorm ? vec(b('attn_k_norm.weight'), hp.headDim) : undefined,
        postAttnNorm: s.postNorms ? vec(b('post_attention_norm.weight'), hp.nEmbd) : undefined,
        ffnNorm: vec(b('ffn_norm.weight'), hp.nEmbd),
        wGate: mat(b('ffn_gate.weight'), hp.nFf, hp.nEmbd),
        wUp: mat(b('ffn_up.weight'), hp.nFf, hp.nEmbd),
        wDown: mat(b('ffn_down.weight'), hp.nEmbd, hp.nFf),
        postFfnNorm: s.postNorms ? vec(b('post_ffw_norm.weight'), hp.nEmbd) : undefined,
      };
    });
    // llama 3 scaling: per-pair frequency divisors stored as a tensor (global layers only).
    const freqFactors = opt('rope_freqs.weight', hp.ropeDim / 2);
    this.ropeGlobal = new Rope(hp.ropeDim, hp.ropeStyle, hp.ropeTheta, hp.ropeScaling, freqFactors);
    const anyLocal = hp.swaLayers.some((x) => x);
    this.ropeLocal = anyLocal ? new Rope(hp.ropeDim, hp.ropeStyle, hp.ropeThetaSwa, NO_ROPE_SCALING) : this.ropeGlobal;
    const tok = makeTokenizer(m, source);
    this.tokenizer = tok.tokenizer;
    this.tokenizerProblem = tok.problem;
  }

  /** Runs tokens at positions cache.length.. ; see forward.ts. */
  forward(tokens: readonly number[], cache: KvCache, opts?: ForwardOptions): Float32Array {
    return forward(this, tokens, cache, opts);
  }

  /**
   * A KvCache shaped for this model. Its sliding-window layers (gemma3's local ones) drop positions older
   * than their window, as llama.cpp's SWA cache does: most of such a model's cache at long context.
   */
  createCache(o: CacheOptions): KvCache {
    const policy = withSlidingWindows(o.policy, layerWindows(this.hp));
    return new KvCache({
      layers: this.hp.nLayer,
      kvHeads: this.hp.nHeadKv,
      headDim: this.hp.headDim,
      capacity: o.capacity ?? this.hp.nCtxTrain,
      policy,
      chunkTokens: o.chunkTokens,
      attention: o.attention,
    });
  }

  get nVocab(): number {
    return this.hp.nVocab;
  }

  /** BOS id from the metadata (llama2.c: 1). */
  get bos(): number {
    const v = this.metadata.get('tokenizer.ggml.bos_token_id');
    return v && typeof v.value === 'number' ? v.value : 1;
  }

  /** Token ids that end generation: the tokenizer's EOG set, else `eos_token_id` (llama2.c: 2). */
  get eos(): number[] {
    if (this.tokenizer) return [...this.tokenizer.vocab.eog];
    const v = this.metadata.get('tokenizer.ggml.eos_token_id');
    return [v && typeof v.value === 'number' ? v.value : 2];
  }

  /** Bytes of weights held in memory. */
  get weightBytes(): number {
    const seen = new Set<Weight>();
    let n = 0;
    const add = (w: Weight) => {
      if (!seen.has(w)) n += w.nbytes;
      seen.add(w);
    };
    add(this.tokenEmbd);
    add(this.output);
    for (const L of this.layers) for (const w of [L.wq, L.wk, L.wv, L.wo, L.wGate, L.wUp, L.wDown]) add(w);
    return n;
  }
}

/** Per layer: the positions its attention sees (the sliding window), 0 for global layers. */
export function layerWindows(hp: Pick<Hparams, 'swaLayers' | 'slidingWindow'>): number[] {
  return hp.swaLayers.map((local) => (local ? hp.slidingWindow : 0));
}

/** Tensor lookup whose misses name the tensor and the model's tensor count. */
class TensorSet {
  constructor(private readonly m: ReadonlyMap<string, ModelTensor>) {}
  has(name: string): boolean {
    return this.m.has(name);
  }
  need(name: string): ModelTensor {
    const t = this.m.get(name);
    if (!t) throw new FileFormatError('gguf', `missing tensor '${name}' (the file has ${this.m.size} tensors)`);
    return t;
  }
}

/** Float32 bytes of every 2-D weight if expanded. */
function expandedBytes(m: LoadedModel): number {
  let n = 0;
  for (const t of m.tensors.values()) if (t.dims.length === 2) n += 4 * t.dims[0]! * t.dims[1]!;
  return n;
}

/** A usable tokenizer, or why there is none (placeholder vocabularies of converted checkpoints carry no text). */
function makeTokenizer(m: LoadedModel, source: ModelSource): { tokenizer?: Tokenizer; problem?: string } {
  const tokens = m.metadata.get('tokenizer.ggml.tokens');
  const noVocab =
    source === 'llama2c' ? 'no llama2.c tokenizer file (tok<N>.bin / tokenizer.bin) beside the checkpoint' : 'the file has no tokenizer.ggml.tokens';
  if (tokens?.type !== 'array') return { problem: noVocab };
  if (tokens.value.length > 259 && tokens.value[259] === '\u2581t259')
    return { problem: source === 'llama2c' ? noVocab : 'the file has a placeholder vocabulary (converted llama2.c checkpoint)' };
  try {
    return { tokenizer: createTokenizer(m.metadata) };
  } catch (e) {
    return { problem: `tokenizer: ${(e as Error).message}` };
  }
}

/** Loads a Hugging Face directory, a GGUF model or a llama2.c `.bin` checkpoint (by magic). */
export function loadModel(path: string, opts: LoadOptions = {}): Model {
  const { loaded, source } = loadedFromPath(path);
  return new Model(loaded, source, opts);
}

/** The same from any byte source (a browser's File, ArrayBuffer or URL: gguf/web-sources.ts). */
export function loadModelFrom(src: ByteSource, opts: LoadOptions = {}): Model {
  if (hasGgufMagic(src)) return new Model(modelFromGguf(readGgufFrom(src)), 'gguf', opts);
  return new Model(llama2cFrom(src, checkpointName(src.name)), 'llama2c', opts);
}

/** A Hugging Face directory's model from its ModelFiles (a page's picked folder or served directory). */
export function loadHfModelFrom(files: ModelFiles, opts: LoadOptions = {}): Model {
  return new Model(loadHfModel(files), 'hf', opts);
}

/** A model from tensors already in memory (tests, converted checkpoints). */
export function modelFromLoaded(m: LoadedModel, opts: LoadOptions & { source?: ModelSource } = {}): Model {
  return new Model(m, opts.source ?? 'gguf', opts);
}
