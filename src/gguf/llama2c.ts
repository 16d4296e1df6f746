// llama2.c checkpoints (`.bin`, karpathy/llama2.c run.c "legacy" export): a header of 7 int32
// [dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len], then float32 weights, each kind
// for all layers in turn. A negative vocab_size means a separate classifier (wcls) follows.
//
// The weights already use the interleaved rotary layout llama.cpp's `llama` architecture expects (export.py
// undoes HF's permutation), so q/k are copied as they are: llama2c.test.ts shows the result equals llama.cpp's
// own conversion, stories260K.gguf, tensor for tensor.
//
// Loading is lazy, as for GGUF (model.ts): the header is read and checked, tensors stay in the file until
// the engine places each one (one positioned read straight into the wasm arena), so the weights never
// exist twice in memory.
import { ArgumentError, FileFormatError } from '../errors.js';
import { GGML } from './types.js';
import { readInto, type ByteSource } from './source.js';
import { gv, type GgufValue } from './values.js';
import { placeholderVocab, PLACEHOLDER_MIN_VOCAB } from './vocab.js';
import { llama2cVocabMetadata, type Llama2cVocab } from './llama2c-vocab.js';
import type { LoadedModel, ModelHparams, ModelTensor } from './model.js';

const HEADER_BYTES = 28;
/** Versioned llama2.c exports start with "ak42"; only the legacy (7-int header) layout is read here. */
const LLAMA2C_V1_MAGIC = 0x616b3432;
/** Bounds on header fields: far above any llama2.c model, low enough that size products stay exact. */
const MAX_DIM = 1 << 16;
const MAX_HIDDEN = 1 << 18;
const MAX_LAYERS = 1 << 10;
const MAX_VOCAB = 1 << 20;
const MAX_SEQ = 1 << 20;
/** llama2.c's RMSNorm epsilon (run.c rmsnorm) and RoPE base (10000.0f in run.c). */
const RMS_EPS = 1e-5;
const ROPE_THETA = 10000;

export interface Llama2cConfig {
  readonly dim: number;
  readonly hiddenDim: number;
  readonly nLayers: number;
  readonly nHeads: number;
  readonly nKvHeads: number;
  readonly vocabSize: number;
  readonly seqLen: number;
  /** True when the classifier is the token embedding (header vocab_size > 0). */
  readonly sharedClassifier: boolean;
}

const fail = (src: ByteSource, message: string) => new FileFormatError('llama2c', `${src.name}: ${message}`);

export function readLlama2cConfig(src: ByteSource): Llama2cConfig {
  if (src.size < HEADER_BYTES) throw fail(src, `truncated: ${src.size} B is shorter than the ${HEADER_BYTES} B header`);
  const dv = new DataView(src.read(0, HEADER_BYTES).slice().buffer);
  const h = Array.from({ length: 7 }, (_, i) => dv.getInt32(i * 4, true));
  if (dv.getUint32(0, true) === LLAMA2C_V1_MAGIC) throw fail(src, 'versioned llama2.c export (magic "ak42") is not supported; use the legacy export');
  const [dim, hiddenDim, nLayers, nHeads, nKvHeads, vocab, seqLen] = h as [number, number, number, number, number, number, number];
  const check = (name: string, v: number, max: number): void => {
    if (v < 1 || v > max) throw fail(src, `header ${name} = ${v} is outside 1..${max} (not a llama2.c checkpoint?)`);
  };
  check('dim', dim, MAX_DIM);
  check('hidden_dim', hiddenDim, MAX_HIDDEN);
  check('n_layers', nLayers, MAX_LAYERS);
  check('n_heads', nHeads, dim);
  check('n_kv_heads', nKvHeads, nHeads);
  check('|vocab_size|', Math.abs(vocab), MAX_VOCAB);
  check('seq_len', seqLen, MAX_SEQ);
  if (dim % nHeads !== 0 || (dim / nHeads) % 2 !== 0) throw fail(src, `dim ${dim} is not n_heads ${nHeads} x an even head size`);
  if (nHeads % nKvHeads !== 0) throw fail(src, `n_kv_heads ${nKvHeads} does not divide n_heads ${nHeads}`);
  return { dim, hiddenDim, nLayers, nHeads, nKvHeads, vocabSize: Math.abs(vocab), seqLen, sharedClassifier: vocab > 0 };
}

/** One weight kind in file order: its GGUF name pattern, per-layer count of floats, and GGUF dims. */
interface Section {
  readonly name: string | null;
  readonly perLayer: boolean;
  readonly dims: readonly number[];
}

/** The file's sections in llama2.c order; `name: null` sections (RoPE tables) are skipped. */
function sections(c: Llama2cConfig): Section[] {
  const kvDim = (c.dim / c.nHeads) * c.nKvHeads;
  const half = c.dim / c.nHeads / 2;
  const s: Section[] = [
    { name: 'token_embd.weight', perLayer: false, dims: [c.dim, c.vocabSize] },
    { name: 'attn_norm.weight', perLayer: true, dims: [c.dim] },
    { name: 'attn_q.weight', perLayer: true, dims: [c.dim, c.dim] },
    { name: 'attn_k.weight', perLayer: true, dims: [c.dim, kvDim] },
    { name: 'attn_v.weight', perLayer: true, dims: [c.dim, kvDim] },
    { name: 'attn_output.weight', perLayer: true, dims: [c.dim, c.dim] },
    { name: 'ffn_norm.weight', perLayer: true, dims: [c.dim] },
    { name: 'ffn_gate.weight', perLayer: true, dims: [c.dim, c.hiddenDim] },
    { name: 'ffn_down.weight', perLayer: true, dims: [c.hiddenDim, c.dim] },
    { name: 'ffn_up.weight', perLayer: true, dims: [c.dim, c.hiddenDim] },
    { name: 'output_norm.weight', perLayer: false, dims: [c.dim] },
    // freq_cis_real and freq_cis_imag [seq_len, head_size / 2]: recomputed by every engine, not stored in GGUF.
    { name: null, perLayer: false, dims: [half, c.seqLen] },
    { name: null, perLayer: false, dims: [half, c.seqLen] },
  ];
  if (!c.sharedClassifier) s.push({ name: 'output.weight', perLayer: false, dims: [c.dim, c.vocabSize] });
  return s;
}

const count = (dims: readonly number[]): number => dims.reduce((a, b) => a * b, 1);

/** Expected file size for a config: the header plus every section. */
export function llama2cFileBytes(c: Llama2cConfig): number {
  return HEADER_BYTES + 4 * sections(c).reduce((s, x) => s + count(x.dims) * (x.perLayer ? c.nLayers : 1), 0);
}

export function llama2cHparams(c: Llama2cConfig): ModelHparams {
  const headDim = c.dim / c.nHeads;
  return {
    nVocab: c.vocabSize,
    nCtxTrain: c.seqLen,
    nEmbd: c.dim,
    nFf: c.hiddenDim,
    nLayer: c.nLayers,
    nHead: c.nHeads,
    nHeadKv: c.nKvHeads,
    headDim,
    headDimV: headDim,
    ropeDim: headDim,
    rmsEps: RMS_EPS,
    ropeTheta: ROPE_THETA,
  };
}

/**
 * GGUF metadata for a llama2.c model, keys in the order llama.cpp's writer stores them; the vocabulary is
 * the checkpoint's tokenizer file when given, else a placeholder (vocab_size >= 259).
 */
export function llama2cMetadata(c: Llama2cConfig, name: string, vocab?: Llama2cVocab): [string, GgufValue][] {
  const hp = llama2cHparams(c);
  const md: [string, GgufValue][] = [
    ['general.architecture', gv.str('llama')],
    ['general.name', gv.str(name)],
    ['llama.context_length', gv.u32(hp.nCtxTrain)],
    ['llama.embedding_length', gv.u32(hp.nEmbd)],
    ['llama.block_count', gv.u32(hp.nLayer)],
    ['llama.feed_forward_length', gv.u32(hp.nFf)],
    ['llama.attention.head_count', gv.u32(hp.nHead)],
    ['llama.attention.head_count_kv', gv.u32(hp.nHeadKv)],
    ['llama.rope.dimension_count', gv.u32(hp.ropeDim)],
    ['llama.attention.layer_norm_rms_epsilon', gv.f32(hp.rmsEps)],
    ['llama.rope.freq_base', gv.f32(hp.ropeTheta)],
    // LLAMA_FTYPE_ALL_F32: every tensor is stored as f32.
    ['general.file_type', gv.u32(0)],
    ['llama.vocab_size', gv.u32(hp.nVocab)],
  ];
  if (vocab) md.push(...llama2cVocabMetadata(vocab));
  else if (c.vocabSize >= PLACEHOLDER_MIN_VOCAB) md.push(...placeholderVocab(c.vocabSize));
  return md;
}

/**
 * An f32 tensor at `offset` of the checkpoint, left in the file: `readInto` lands its bytes in the
 * caller's memory, `data` reads a fresh copy on each access (nothing is cached).
 */
function fileTensor(src: ByteSource, name: string, offset: number, dims: readonly number[]): ModelTensor {
  const nbytes = 4 * count(dims);
  return Object.freeze({
    type: GGML.F32,
    dims,
    nbytes,
    get data(): Uint8Array {
      return src.read(offset, nbytes);
    },
    readInto: (dst: Uint8Array, at = 0) => {
      if (!Number.isSafeInteger(at) || at < 0 || at + dst.length > nbytes) {
        throw new ArgumentError(`${src.name}: read of ${dst.length} B at ${at} is outside tensor '${name}' (${nbytes} B)`);
      }
      readInto(src, offset + at, dst);
    },
  });
}

/** general.name for a checkpoint at `path`: its file name without directories or `.bin`. */
export function checkpointName(path: string): string {
  return path.replace(/^.*[\\/]/, '').replace(/\.bin$/, '');
}

/**
 * A llama2.c checkpoint from any byte source (`name` becomes general.name): checks the length against the
 * header and maps each tensor to its place (f32, GGUF names, llama.cpp's tensor order), reading none of
 * them. The vocabulary is the checkpoint's tokenizer file when given (llama2c-vocab.ts), else a placeholder.
 */
export function llama2cFrom(src: ByteSource, name: string, vocab?: Llama2cVocab): LoadedModel {
  const c = readLlama2cConfig(src);
  const want = llama2cFileBytes(c);
  if (src.size !== want) {
    const other = llama2cFileBytes({ ...c, sharedClassifier: !c.sharedClassifier });
    const hint = src.size === other ? ` (the size fits a ${c.sharedClassifier ? 'separate' : 'shared'} classifier: wrong vocab_size sign?)` : '';
    throw fail(src, `file is ${src.size} B, the header (${c.sharedClassifier ? 'shared' : 'separate'} classifier) implies ${want} B${hint}`);
  }
  // Offsets of each section, then the tensors in llama.cpp's order.
  const offsets = new Map<string, number>();
  let at = HEADER_BYTES;
  for (const s of sections(c)) {
    if (s.name) offsets.set(s.name, at);
    at += 4 * count(s.dims) * (s.perLayer ? c.nLayers : 1);
  }
  const tensors = new Map<string, ModelTensor>();
  const put = (gguf: string, s: Section, layer: number): void => {
    tensors.set(gguf, fileTensor(src, gguf, offsets.get(s.name!)! + layer * 4 * count(s.dims), s.dims));
  };
  const bySection = new Map(
    sections(c)
      .filter((s) => s.name)
      .map((s) => [s.name!, s]),
  );
  // llama.cpp's writer order: embeddings, final norm, classifier, then the blocks.
  put('token_embd.weight', bySection.get('token_embd.weight')!, 0);
  put('output_norm.weight', bySection.get('output_norm.weight')!, 0);
  if (!c.sharedClassifier) put('output.weight', bySection.get('output.weight')!, 0);
  for (let l = 0; l < c.nLayers; l++) {
    for (const n of ['attn_norm', 'attn_q', 'attn_k', 'attn_v', 'attn_output', 'ffn_norm', 'ffn_gate', 'ffn_down', 'ffn_up']) {
      put(`blk.${l}.${n}.weight`, bySection.get(`${n}.weight`)!, l);
    }
  }
  return { arch: 'llama', hparams: llama2cHparams(c), tensors, metadata: new Map(llama2cMetadata(c, name, vocab)) };
}
