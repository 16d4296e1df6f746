// Hugging Face directory -> GGUF: the loaded model (GGUF names, dims, metadata; q/k permuted for llama)
// written by our writer, each tensor read from its safetensors file only while it is written.
import { modelToGgufInput, type LoadedModel } from '../gguf/model.js';
import { writeGguf } from '../gguf/writer.js';
import { loadHfModel } from './load.js';

/** Converts the directory `dir` to `outPath` and returns the model it wrote. */
export function convertHfDir(dir: string, outPath: string): LoadedModel {
  const model = loadHfModel(dir);
  writeGguf(outPath, modelToGgufInput(model));
  return model;
}
