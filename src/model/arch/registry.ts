// Architecture registry keyed by GGUF `general.architecture`; an unknown name is an error listing the known.
import { DefinitionError, UnknownArchitectureError } from '../../errors.js';
import { gemma3 } from './gemma3.js';
import { llama } from './llama.js';
import { qwen2 } from './qwen2.js';
import { qwen3 } from './qwen3.js';
import type { ArchSpec } from './spec.js';

export type { ArchSpec } from './spec.js';

export const architectures: ReadonlyMap<string, ArchSpec> = (() => {
  const m = new Map<string, ArchSpec>();
  for (const a of [llama, qwen2, qwen3, gemma3]) {
    // A duplicate name would silently shadow an architecture.
    if (m.has(a.name)) throw new DefinitionError(`architecture '${a.name}' registered twice`);
    m.set(a.name, a);
  }
  return m;
})();

export function getArchitecture(name: string): ArchSpec {
  const a = architectures.get(name);
  if (!a) throw new UnknownArchitectureError(name, [...architectures.keys()]);
  return a;
}
