// Models by path (Node): a Hugging Face directory, a GGUF file or a llama2.c checkpoint told apart by magic.
// The browser build swaps in model-path.browser.ts: pages load from byte sources (loadModelFrom).
import { loadLlama2c } from '../gguf/llama2c-file.js';
import { modelFromGguf, type LoadedModel } from '../gguf/model.js';
import { hasGgufMagic, readGgufFrom } from '../gguf/reader.js';
import { fileSource } from '../gguf/source.js';
import { isHfDir, loadHfModel } from '../hf/load.js';

export function loadedFromPath(path: string): { loaded: LoadedModel; source: 'gguf' | 'llama2c' | 'hf' } {
  if (isHfDir(path)) return { loaded: loadHfModel(path), source: 'hf' };
  const src = fileSource(path);
  if (hasGgufMagic(src)) return { loaded: modelFromGguf(readGgufFrom(src)), source: 'gguf' };
  return { loaded: loadLlama2c(path), source: 'llama2c' };
}
