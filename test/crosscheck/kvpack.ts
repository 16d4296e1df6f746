// kvpack's side of a cross-check: the same step protocol as llamacpp.ts (prompt in one batch, then one
// token per forward), over a cache of the given scheme with no exact window or sinks.
import type { CachePolicy } from '../../src/cache/policy.js';
import { schemePolicy } from '../../src/cache/schemes.js';
import type { Model } from '../../src/model/model.js';
import type { StepRun } from './compare.js';
import { argmax, type CacheType } from './llamacpp.js';

/** The scheme with window 0 and sinks 0, so every position is stored in the scheme's format like llama.cpp's cache. */
export function plainPolicy(cache: CacheType, cacheV: CacheType = cache): CachePolicy {
  return { ...schemePolicy(cache, { window: 0, sinks: 0 }), v: cacheV };
}

/** Prompt, then `steps` decodes; step i feeds `force[i]` when given, else the greedy argmax. */
export function kvpackRun(model: Model, prompt: readonly number[], steps: number, cache: CacheType, force?: readonly number[], cacheV?: CacheType): StepRun {
  const kv = model.createCache({ policy: plainPolicy(cache, cacheV), capacity: prompt.length + steps + 1 });
  try {
    const logits: Float32Array[] = [];
    const tokens: number[] = [];
    let row = model.forward(prompt, kv);
    kv.beginDecode();
    for (let i = 0; i < steps; i++) {
      logits.push(row);
      const id = force?.[i] ?? argmax(row);
      tokens.push(id);
      if (i + 1 < steps) row = model.forward([id], kv);
    }
    return { tokens, logits };
  } finally {
    kv.dispose();
  }
}
