// llama2.c checkpoints and tokenizer files by path (Node): the checkpoint's tokenizer is found beside it
// the way llama2.c names them, so `-m stories260K.bin` has its real vocabulary.
import { existsSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileSource } from './source.js';
import { checkpointName, llama2cFrom, readLlama2cConfig } from './llama2c.js';
import { readLlama2cVocab, type Llama2cVocab } from './llama2c-vocab.js';
import type { LoadedModel } from './model.js';

export interface Llama2cLoadOptions {
  /** The checkpoint's tokenizer file; default `tok<vocab_size>.bin` or `tokenizer.bin` beside it, if present. */
  vocab?: string;
}

/** Loads a llama2.c checkpoint lazily (tensors stay in the file) with its tokenizer file when there is one. */
export function loadLlama2c(path: string, opts: Llama2cLoadOptions = {}): LoadedModel {
  const src = fileSource(path);
  const c = readLlama2cConfig(src);
  const vocabPath = opts.vocab ?? findLlama2cVocab(path, c.vocabSize);
  const vocab = vocabPath === undefined ? undefined : loadLlama2cVocab(vocabPath, c.vocabSize);
  return llama2cFrom(src, checkpointName(path), vocab);
}

/** Reads a llama2.c tokenizer file for a checkpoint of `nVocab` tokens. */
export function loadLlama2cVocab(path: string, nVocab: number): Llama2cVocab {
  return readLlama2cVocab(fileSource(path), nVocab);
}

/** llama2.c's naming: `tok<N>.bin` beside the checkpoint for a custom vocab of N, else `tokenizer.bin` (run.c's default). */
export function findLlama2cVocab(checkpoint: string, nVocab: number): string | undefined {
  const dir = dirname(checkpoint);
  for (const name of [`tok${nVocab}.bin`, 'tokenizer.bin']) {
    const p = join(dir, name);
    if (basename(p) !== basename(checkpoint) && existsSync(p)) return p;
  }
  return undefined;
}
