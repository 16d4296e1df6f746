// A Hugging Face model directory (config.json + safetensors + tokenizer files) as the same LoadedModel the
// GGUF loader produces: GGUF tensor names and dims order, `<arch>.*` metadata from config.json, the
// tokenizer's tokenizer.ggml.* keys. Tensors stay in the safetensors files until the engine places them.
// Every file is read through the directory's ModelFiles, so the same loader runs in Node (a path) and in
// a page (a picked folder, a served directory).
import { FileFormatError } from '../errors.js';
import { readHparams, type LoadedModel, type ModelTensor } from '../gguf/model.js';
import { GGML } from '../gguf/types.js';
import { gv, type GgufValue } from '../gguf/values.js';
import { checkActivation } from './arch/common.js';
import { hfArchitecture, type HfArch } from './arch/registry.js';
import { openCheckpoint } from './checkpoint.js';
import { HfConfig } from './config.js';
import { asModelFiles } from './dir-files.js';
import { hasFile, type ModelFiles } from './model-files.js';
import type { SafetensorsTensor } from './safetensors.js';
import { interleavedHalvesSource, matrixTensor, vectorTensor, type RowPermutation } from './tensors.js';
import { hfTokenizerMetadata, TOKENIZER_FILE } from './tokenizer-json.js';

export { isHfDir } from './dir-files.js';

/** llama.cpp's LLAMA_FTYPE for the matrices' dtype: all f32, mostly f16, mostly bf16. */
const FILE_TYPE: Readonly<Record<number, number>> = { [GGML.F32]: 0, [GGML.F16]: 1, [GGML.BF16]: 32 };

/** Tensors no engine needs (recomputed buffers), skipped as llama.cpp's converter skips them. */
const SKIPPED = ['.rotary_emb.inv_freq', '.attention.masked_bias', '.attention.bias'];
/** Multimodal checkpoints: the vision side is not part of the language model. */
const VISION_PREFIXES = ['vision_tower.', 'multi_modal_projector.', 'model.vision_tower.', 'model.multi_modal_projector.'];

/** The model in a directory: a path (Node) or any ModelFiles (a page's picked folder or served directory). */
export function loadHfModel(dir: string | ModelFiles): LoadedModel {
  const files = asModelFiles(dir);
  const config = HfConfig.read(files);
  const arch = hfArchitecture(config.architecture);
  checkActivation(arch, config);
  const archMetadata = arch.metadata(config);
  // A weights-only directory loads without a tokenizer (ids only), as transformers' from_pretrained does.
  const tokenizer = hasFile(files, TOKENIZER_FILE) ? hfTokenizerMetadata(files) : [];
  const tokens = tokenizer.find(([k]) => k === 'tokenizer.ggml.tokens')?.[1];
  const vocabRows = arch.embedToVocab && tokens?.type === 'array' ? tokens.value.length : undefined;
  const tensors = ggufTensors(arch, config, openCheckpoint(files).tensors, vocabRows, files.location);

  const metadata = new Map<string, GgufValue>([
    ['general.architecture', gv.str(arch.gguf)],
    ['general.name', gv.str(files.name)],
    ...archMetadata,
    ['general.file_type', gv.u32(fileType(tensors))],
  ]);
  for (const [k, v] of tokenizer) metadata.set(k, v);
  return { arch: arch.gguf, hparams: readHparams(metadata, tensors.get('token_embd.weight')!.dims[1]), tensors, metadata };
}

/** An HF tensor name with multimodal wrappers removed; undefined for tensors that are skipped. */
function languageModelName(name: string): string | undefined {
  if (SKIPPED.some((s) => name.endsWith(s)) || VISION_PREFIXES.some((p) => name.startsWith(p))) return undefined;
  return name.replace(/^model\.language_model\./, 'model.').replace(/^language_model\./, '');
}

/** Every checkpoint tensor under its GGUF name, in llama.cpp's order; missing or unknown tensors are errors. */
function ggufTensors(
  arch: HfArch,
  c: HfConfig,
  st: ReadonlyMap<string, SafetensorsTensor>,
  vocabRows: number | undefined,
  dir: string,
): Map<string, ModelTensor> {
  const nLayer = c.int('num_hidden_layers');
  const byGguf = new Map<string, SafetensorsTensor>();
  const layerTensor = new Map(arch.layerTensors.map((x) => [x.hf, x.gguf]));
  for (const [name, t] of st) {
    const n = languageModelName(name);
    if (n === undefined) continue;
    let gguf: string | undefined;
    const layer = /^model\.layers\.(\d+)\.(.+)$/.exec(n);
    if (layer) {
      const l = Number(layer[1]);
      if (l >= nLayer) throw new FileFormatError('hf', `${dir}: tensor '${name}' is past num_hidden_layers ${nLayer}`);
      const suffix = layerTensor.get(layer[2]!);
      if (suffix) gguf = `blk.${l}.${suffix}`;
    } else {
      gguf = { 'model.embed_tokens.weight': 'token_embd.weight', 'model.norm.weight': 'output_norm.weight', 'lm_head.weight': 'output.weight' }[n];
    }
    if (!gguf) throw new FileFormatError('hf', `${dir}: tensor '${name}' has no place in a ${arch.gguf} model (not supported)`);
    if (byGguf.has(gguf)) throw new FileFormatError('hf', `${dir}: tensors '${byGguf.get(gguf)!.name}' and '${name}' both map to '${gguf}'`);
    byGguf.set(gguf, t);
  }
  // A tied classifier is the embedding: no output.weight, as llama.cpp writes tied models. Savers keep one
  // copy of tied weights, sometimes only lm_head.weight (its __metadata__ then names embed_tokens an alias).
  if (c.bool('tie_word_embeddings', false)) {
    const lmHead = byGguf.get('output.weight');
    if (!byGguf.has('token_embd.weight') && lmHead) byGguf.set('token_embd.weight', lmHead);
    byGguf.delete('output.weight');
  } else if (c.has('tie_word_embeddings') && !byGguf.has('output.weight')) {
    throw new FileFormatError('hf', `${dir}: no lm_head.weight although tie_word_embeddings is false`);
  }

  // Heads of q and of k: each head's rows are permuted among themselves.
  const headsOf = (qk: string): number => (qk === 'q' ? c.int('num_attention_heads') : c.int('num_key_value_heads', c.int('num_attention_heads')));
  const out = new Map<string, ModelTensor>();
  const put = (gguf: string, required: boolean): void => {
    const t = byGguf.get(gguf);
    if (!t) {
      if (required) throw new FileFormatError('hf', `${dir}: missing tensor for '${gguf}' (${arch.gguf} needs it)`);
      return;
    }
    const qk = /\.attn_([qk])\./.exec(gguf)?.[1];
    const perm: RowPermutation | undefined = arch.permuteQk && qk ? { groupRows: t.shape[0]! / headsOf(qk), source: interleavedHalvesSource } : undefined;
    const isNorm = gguf.endsWith('norm.weight');
    if (t.shape.length === 1) out.set(gguf, vectorTensor(t, { shift: isNorm ? arch.normShift : 0, perm }));
    else out.set(gguf, matrixTensor(t, { perm, rows: gguf === 'token_embd.weight' ? vocabRows : undefined }));
  };
  put('token_embd.weight', true);
  put('output_norm.weight', true);
  put('output.weight', false);
  for (const [name, t] of arch.extraTensors?.(c) ?? []) out.set(name, t);
  for (let l = 0; l < nLayer; l++) for (const x of arch.layerTensors) put(`blk.${l}.${x.gguf}`, !x.optional);
  return out;
}

/** The file type of the matrices' most common dtype (1-D tensors are always f32). */
function fileType(tensors: ReadonlyMap<string, ModelTensor>): number {
  const count = new Map<number, number>();
  for (const t of tensors.values()) if (t.dims.length === 2) count.set(t.type, (count.get(t.type) ?? 0) + 1);
  const [top] = [...count].filter(([ty]) => ty !== GGML.F32).sort((a, b) => b[1] - a[1]);
  return FILE_TYPE[top?.[0] ?? GGML.F32]!;
}
