// The loaded engine behind the HTTP routes: the model, its file digest, the slots' scheduler, the prefix
// cache and the metrics, wired together once the model is loaded.
import { KvCache, type AttentionPrecision, type KvCacheOptions } from '../cache/kvcache.js';
import type { CachePolicy } from '../cache/policy.js';
import { FileFormatError } from '../errors.js';
import type { Model } from '../model/model.js';
import { ServerMetrics } from './metrics.js';
import { PrefixCache, type PrefixStore } from './prefix-cache.js';
import { prefixRoot } from './prefix-key.js';
import { Scheduler, type StepRunner } from './scheduler.js';

export interface EngineOptions {
  parallel: number;
  /** Positions per slot. */
  ctx: number;
  policy: CachePolicy;
  attention: AttentionPrecision;
  chunkTokens: number;
  /** Prefix-cache budget in bytes (0 disables it). */
  cacheRamBytes: number;
  queueMax: number;
  batching: boolean;
  prefillChunk: number;
  runner?: StepRunner;
  prefixStore?: PrefixStore;
}

export class Engine {
  readonly scheduler: Scheduler;
  readonly prefix: PrefixCache;
  readonly metrics: ServerMetrics;
  /** The policy slots actually use (the model's sliding windows applied): part of every prefix key. */
  readonly policy: CachePolicy;

  constructor(readonly model: Model, readonly modelDigest: string, readonly o: EngineOptions) {
    const probe = model.createCache({ policy: o.policy, capacity: o.ctx, chunkTokens: o.chunkTokens, attention: o.attention });
    this.policy = probe.policy;
    probe.dispose();
    this.prefix = new PrefixCache({ budgetBytes: o.cacheRamBytes, chunkTokens: o.chunkTokens, store: o.prefixStore, make: (c) => this.cacheLike(c, 'prefix entry') });
    const hp = model.hp;
    this.metrics = new ServerMetrics({
      slotCaches: () => this.scheduler.slots.map((s) => ({ bytes: s.cache.nbytes(), positions: s.cache.length })),
      valuesPerPosition: 2 * hp.nLayer * hp.nHeadKv * hp.headDim,
      processing: () => this.scheduler.processing,
      deferred: () => this.scheduler.deferred,
      prefix: () => ({ entries: this.prefix.size, bytes: this.prefix.bytes, packed: this.prefix.packedBytes }),
    });
    this.scheduler = new Scheduler(model, { ...o }, this.prefix, this.metrics);
  }

  /** The prefix key of a request: model digest, effective policy, chunking and its salt. */
  keyFor(salt?: string): string {
    return prefixRoot(this.modelDigest, this.policy, this.o.chunkTokens, salt ?? '');
  }

  /** An empty cache for a file or entry that claims options `c`; refuses any shape but the slots'. */
  cacheLike(c: KvCacheOptions, what: string): KvCache {
    const hp = this.model.hp;
    const same = c.layers === hp.nLayer && c.kvHeads === hp.nHeadKv && c.headDim === hp.headDim && c.capacity === this.o.ctx && c.chunkTokens === this.o.chunkTokens && JSON.stringify(c.policy) === JSON.stringify(this.policy);
    if (!same) throw new FileFormatError(what, `holds a cache of another shape or policy than this server's slots (${c.layers}x${c.kvHeads}x${c.headDim}, ${c.capacity} positions, ${JSON.stringify(c.policy)})`);
    return new KvCache({ ...c, attention: this.o.attention });
  }

  dispose(): void {
    this.scheduler.dispose();
  }
}
