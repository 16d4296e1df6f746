// Models by path (Node): a Hugging Face directory, a GGUF file or a llama2.c checkpoint told apart by magic.
// The browser build swaps in model-path.browser.ts: pages load from byte sources (loadModelFrom).
import { FileFormatError } from '../errors.js';
import { isGgufFile } from '../gguf/file-source.js';
import { loadLlama2c } from '../gguf/llama2c-file.js';
import { loadGgufModel, type LoadedModel } from '../gguf/model.js';
import { isHfDir, loadHfModel } from '../hf/load.js';

export function loadedFromPath(path: string): { loaded: LoadedModel; source: 'gguf' | 'llama2c' | 'hf' } {
  if (isHfDir(path)) return { loaded: loadHfModel(path), source: 'hf' };
  if (isGgufFile(path, 'model file')) return { loaded: loadGgufModel(path), source: 'gguf' };
  try {
    return { loaded: loadLlama2c(path), source: 'llama2c' };
  } catch (e) {
    // Without the GGUF magic the file could only be a llama2.c checkpoint: say both.
    if (e instanceof FileFormatError) throw new FileFormatError(`model file '${path}'`, `not a GGUF file, nor a llama2.c checkpoint (${e.message})`);
    throw e;
  }
}
