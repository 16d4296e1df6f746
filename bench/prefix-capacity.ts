// How many positions a --cache-ram budget holds: a real PrefixCache filled with distinct conversations'
// entries (random K/V on a model's cache shape, as slots leave them) until it evicts. Used by bench:serve
// (model shapes, per scheme) and by src/server/prefix-cache.test.ts (the ratios it asserts).
import { KvCache } from '../src/cache/kvcache.js';
import type { CachePolicy } from '../src/cache/policy.js';
import { PrefixCache } from '../src/server/prefix-cache.js';
import { prefixRoot } from '../src/server/prefix-key.js';
import { Prng } from '../src/numeric/prng.js';

export interface CacheShape {
  layers: number;
  kvHeads: number;
  headDim: number;
}

export interface Capacity {
  /** Positions the budget held when the next entry evicted one. */
  positions: number;
  /** Allocated bytes of one entry (what the budget counts). */
  entryBytes: number;
}

/**
 * Fills a `budget`-byte prefix cache with entries of `entry` positions (a multiple of chunkTokens) cut from
 * caches `past` positions longer (tokens decoded beyond the entry's last whole chunk) until it evicts.
 */
export function positionsHeld(shape: CacheShape, policy: CachePolicy, budget: number, entry: number, past: number, chunkTokens = 32): Capacity {
  const pc = new PrefixCache({ budgetBytes: budget, chunkTokens });
  const n = entry + past;
  const row = shape.kvHeads * shape.headDim;
  // [n, kvHeads * headDim] K and V rows, the same for every conversation: entries never share chunks anyway.
  const [k, v] = [new Prng(11).normals(n * row, 1), new Prng(12).normals(n * row, 1)];
  let entryBytes = 0;
  for (let i = 0; pc.size === i; i++) {
    const c = new KvCache({ ...shape, capacity: n, policy, chunkTokens });
    for (let l = 0; l < shape.layers; l++) c.append(l, k, v);
    pc.insert(
      prefixRoot('capacity', policy, chunkTokens, `conversation ${i}`),
      Array.from({ length: n }, (_, t) => t + i * n),
      entry,
      c,
    );
    c.dispose();
    if (i === 0) entryBytes = pc.bytes;
  }
  const positions = pc.size * entry;
  pc.clear();
  return { positions, entryBytes };
}
