// llama2.c checkpoint -> GGUF (f32, llama architecture, its tokenizer file's vocabulary or a placeholder)
// that llama.cpp loads.
import { ArgumentError } from '../errors.js';
import { loadLlama2c, type Llama2cLoadOptions } from './llama2c-file.js';
import { modelToGgufInput, type LoadedModel } from './model.js';
import { writeGguf } from './writer.js';

/** Converts `binPath` to `outPath` and returns the model it wrote. */
export function convertLlama2c(binPath: string, outPath: string, opts: Llama2cLoadOptions = {}): LoadedModel {
  const model = loadLlama2c(binPath, opts);
  if (!model.metadata.has('tokenizer.ggml.tokens')) {
    // llama.cpp refuses a llama model without a vocabulary; below 259 tokens no byte-fallback vocab fits.
    throw new ArgumentError(`${binPath}: vocab_size ${model.hparams.nVocab} is too small for a placeholder vocabulary (need >= 259)`);
  }
  writeGguf(outPath, modelToGgufInput(model));
  return model;
}
