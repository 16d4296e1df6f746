// The shared TinyStories-656K Hugging Face directory converted by `kvpack convert`, for llama.cpp to run.
// llama.cpp refuses a file without a vocabulary: while the converter writes none (tokenizer not yet
// converted), the tokenizer.* keys are taken from the shared gguf-py file, the tensors stay ours.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { modelFromGguf, modelToGgufInput } from '../../src/gguf/model.js';
import { readGguf } from '../../src/gguf/reader.js';
import { writeGguf } from '../../src/gguf/writer.js';
import { convertHfDir } from '../../src/hf/convert.js';
import { fromRoot } from '../paths.js';

export const TINYSTORIES_DIR = fromRoot('..', 'shared', 'models', 'tinystories-656k');
const TINYSTORIES_GGUF = fromRoot('..', 'shared', 'models', 'tinystories-656k.gguf');

/** The converted file's path in `dir` and whether its vocabulary was borrowed, or why it cannot be made. */
export function convertedTinyStories(dir: string): { path: string; borrowedVocab: boolean } | { skip: string } {
  if (!existsSync(TINYSTORIES_DIR) || !existsSync(TINYSTORIES_GGUF)) return { skip: `${TINYSTORIES_DIR} or its .gguf not present` };
  const converted = join(dir, 'tinystories-656k.converted.gguf');
  const m = convertHfDir(TINYSTORIES_DIR, converted);
  if (m.metadata.has('tokenizer.ggml.tokens')) return { path: converted, borrowedVocab: false };
  const file = modelFromGguf(readGguf(converted));
  const metadata = new Map(file.metadata);
  for (const [k, v] of readGguf(TINYSTORIES_GGUF).metadata) if (k.startsWith('tokenizer.')) metadata.set(k, v);
  const path = join(dir, 'tinystories-656k.vocab.gguf');
  writeGguf(path, modelToGgufInput({ ...file, metadata }));
  return { path, borrowedVocab: true };
}
