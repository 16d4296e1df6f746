// The in-memory model both loaders produce (GGUF and llama2.c): tensors under GGUF names, metadata,
// and the hyperparameters read once from `<arch>.*` keys.
import { FileFormatError } from '../errors.js';
import { getF32, getInt, getString, type Metadata } from './metadata.js';
import { readGguf, type GgufFile, type GgufTensorInfo } from './reader.js';
import type { GgufTensorInput, GgufWriteInput } from './writer.js';
import type { GgufValue } from './values.js';

export interface ModelTensor {
  /** ggml type id. */
  readonly type: number;
  /** ggml order, ne0 first: a [out, in] matrix has dims [in, out]. */
  readonly dims: readonly number[];
  /**
   * The bytes. A file-backed tensor (modelFromGguf) reads them from the file on each access and keeps
   * nothing: loaders that place weights elsewhere use `readInto` so the weights exist once.
   */
  readonly data: Uint8Array;
  /** Byte size, known without reading (file-backed tensors); else data.length. */
  readonly nbytes?: number;
  /** Copies dst.length bytes from byte `at` of the data into dst (a positioned file read when file-backed). */
  readInto?(dst: Uint8Array, at?: number): void;
}

/** Byte size of a tensor's data without reading it. */
export function tensorBytes(t: ModelTensor): number {
  return t.nbytes ?? t.data.length;
}

/** dst.length bytes from byte `at` of the tensor into dst, through the file when the tensor is file-backed. */
export function readTensor(t: ModelTensor, dst: Uint8Array, at = 0): void {
  if (t.readInto) t.readInto(dst, at);
  else dst.set(t.data.subarray(at, at + dst.length));
}

/** A tensor of an opened GGUF whose bytes stay in the file until asked for (nothing cached). */
function fileTensor(file: GgufFile, info: GgufTensorInfo): ModelTensor {
  const name = info.name;
  return Object.freeze({
    type: info.type,
    dims: info.dims,
    nbytes: info.bytes,
    get data(): Uint8Array {
      return file.tensorData(name);
    },
    readInto: (dst: Uint8Array, at = 0) => file.readTensorInto(name, dst, at),
  });
}

/** Hyperparameters shared by the llama-like families (llama, qwen2, qwen3, gemma3). */
export interface ModelHparams {
  readonly nVocab: number;
  /** Training context (`<arch>.context_length`). */
  readonly nCtxTrain: number;
  readonly nEmbd: number;
  readonly nFf: number;
  readonly nLayer: number;
  readonly nHead: number;
  readonly nHeadKv: number;
  /** Per-head size of K (`attention.key_length`, default nEmbd / nHead). */
  readonly headDim: number;
  /** Per-head size of V (`attention.value_length`, default headDim). */
  readonly headDimV: number;
  /** Rotated dims per head (`rope.dimension_count`, default headDim). */
  readonly ropeDim: number;
  readonly rmsEps: number;
  readonly ropeTheta: number;
}

export interface LoadedModel {
  /** `general.architecture` ('llama', 'qwen2', ...). */
  readonly arch: string;
  readonly hparams: ModelHparams;
  /** GGUF tensor names (token_embd.weight, blk.N.attn_q.weight, ...) in file order. */
  readonly tensors: ReadonlyMap<string, ModelTensor>;
  readonly metadata: ReadonlyMap<string, GgufValue>;
}

/** Reads hyperparameters from `<arch>.*` metadata; missing required keys are errors naming the key. */
export function readHparams(md: Metadata, nVocabFallback?: number): ModelHparams {
  const arch = getString(md, 'general.architecture');
  const k = (s: string): string => `${arch}.${s}`;
  const nEmbd = getInt(md, k('embedding_length'));
  const nHead = getInt(md, k('attention.head_count'));
  if (nHead < 1) throw new FileFormatError('gguf', `${k('attention.head_count')} must be >= 1`);
  const nHeadKv = getInt(md, k('attention.head_count_kv'), nHead);
  if (nHeadKv < 1 || nHead % nHeadKv !== 0) {
    throw new FileFormatError('gguf', `${k('attention.head_count_kv')} ${nHeadKv} does not divide head_count ${nHead}`);
  }
  const headDim = getInt(md, k('attention.key_length'), Math.floor(nEmbd / nHead));
  const tokens = md.get('tokenizer.ggml.tokens');
  const nVocab = getInt(md, k('vocab_size'), tokens?.type === 'array' ? tokens.value.length : (nVocabFallback ?? 0));
  return {
    nVocab,
    nCtxTrain: getInt(md, k('context_length')),
    nEmbd,
    nFf: getInt(md, k('feed_forward_length')),
    nLayer: getInt(md, k('block_count')),
    nHead,
    nHeadKv,
    headDim,
    headDimV: getInt(md, k('attention.value_length'), headDim),
    ropeDim: getInt(md, k('rope.dimension_count'), headDim),
    rmsEps: getF32(md, k('attention.layer_norm_rms_epsilon'), 1e-5),
    ropeTheta: getF32(md, k('rope.freq_base'), 10000),
  };
}

/**
 * The tensors of an opened GGUF, left in the file: each is read when the engine places it (straight into
 * the wasm arena, see model/forward-weights.ts), so loading never holds a second copy of the weights.
 */
export function modelFromGguf(file: GgufFile): LoadedModel {
  const tensors = new Map<string, ModelTensor>();
  for (const t of file.tensors) tensors.set(t.name, fileTensor(file, t));
  const embd = tensors.get('token_embd.weight');
  return {
    arch: getString(file.metadata, 'general.architecture'),
    hparams: readHparams(file.metadata, embd?.dims[1]),
    tensors,
    metadata: file.metadata,
  };
}

export function loadGgufModel(path: string): LoadedModel {
  return modelFromGguf(readGguf(path));
}

/** Writer input for a loaded model: its metadata and tensors in order, each read only when written. */
export function modelToGgufInput(model: LoadedModel): GgufWriteInput {
  const tensors: GgufTensorInput[] = [...model.tensors].map(([name, t]) => ({
    name,
    type: t.type,
    dims: t.dims,
    nbytes: tensorBytes(t),
    get data() {
      return t.data;
    },
  }));
  const a = model.metadata.get('general.alignment');
  return { metadata: model.metadata, tensors, alignment: a?.type === 'u32' ? a.value : undefined };
}
