// Decode tok/s the way llama-bench's -r reports it, for benches that set kvpack beside it: one warm-up step,
// then `reps` timed passes of `steps` greedy steps, each rewound to where the cache stood (median by the caller).
import { argmax } from '../src/model/sampler.js';
import type { KvCache } from '../src/cache/kvcache.js';
import type { Model } from '../src/model/model.js';

/** tok/s of each pass; `first` is the token after the cache's last position. */
export function decodePasses(model: Model, cache: KvCache, first: number, steps: number, reps: number): number[] {
  const base = cache.length;
  model.forward([first], cache);
  const tps: number[] = [];
  for (let r = 0; r < reps; r++) {
    cache.rewind(base);
    let next = first;
    const t0 = performance.now();
    for (let i = 0; i < steps; i++) next = argmax(model.forward([next], cache));
    tps.push(steps / ((performance.now() - t0) / 1000));
  }
  return tps;
}
