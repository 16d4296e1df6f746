// Hugging Face architectures by model class (config.json `architectures[0]`); an unknown class is an error
// listing the known ones.
import { DefinitionError, UnknownFormatError } from '../../errors.js';
import { gemma3 } from './gemma3.js';
import { llama } from './llama.js';
import { qwen2 } from './qwen2.js';
import { qwen3 } from './qwen3.js';
import type { HfArch } from './spec.js';

export type { HfArch } from './spec.js';

export const hfArchitectures: ReadonlyMap<string, HfArch> = (() => {
  const m = new Map<string, HfArch>();
  for (const a of [llama, qwen2, qwen3, gemma3]) {
    for (const c of a.classes) {
      // A class claimed twice would silently pick one reading of its weights.
      if (m.has(c)) throw new DefinitionError(`Hugging Face class '${c}' registered twice`);
      m.set(c, a);
    }
  }
  return m;
})();

export function hfArchitecture(modelClass: string): HfArch {
  const a = hfArchitectures.get(modelClass);
  if (!a) throw new UnknownFormatError('Hugging Face architecture', modelClass, [...hfArchitectures.keys()]);
  return a;
}
