// Browser twin of model-path.ts (scripts/build-browser.mjs swaps it in): a page has no file paths.
import { ArgumentError } from '../errors.js';
import type { LoadedModel } from '../gguf/model.js';

export function loadedFromPath(path: string): { loaded: LoadedModel; source: 'gguf' | 'llama2c' | 'hf' } {
  throw new ArgumentError(`'${path}': model paths need Node; in a browser use loadModelFrom with a File/Blob, ArrayBuffer or URL source (gguf/web-sources.ts)`);
}
