// The loaded engine behind the HTTP routes: the model, its file digest, the slots' scheduler, the prefix
// cache (with its remote tier when a chunk store is given) and the metrics, wired together once the model is loaded.
import { KvCache, type AttentionPrecision, type KvCacheOptions } from '../cache/kvcache.js';
import type { CachePolicy } from '../cache/policy.js';
import { FileFormatError } from '../errors.js';
import type { Model } from '../model/model.js';
import { registerStoreMetrics } from '../store/counters.js';
import type { ChunkStore } from '../store/chunk-store.js';
import { ServerMetrics } from './metrics.js';
import { PrefixCache } from './prefix-cache.js';
import { prefixRoot } from './prefix-key.js';
import { RemotePrefixTier } from './remote-prefix.js';
import { deepestResumable, type ResumeRule } from './resume-point.js';
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
  /** Also leave a resume point every this many chunks of a prompt (0: the prompt end and divergence points only). */
  resumeEvery?: number;
  runner?: StepRunner;
  /** Test-only: replaces where caches resume (negative controls: an unsafe rule must change answers). */
  resumeRule?: ResumeRule;
  /** The remote tier's store (e.g. a RedisChunkStore), shared with other instances. */
  chunkStore?: ChunkStore;
  /** Where the remote tier reports (default stderr). */
  storeLog?: (line: string) => void;
}

export class Engine {
  readonly scheduler: Scheduler;
  readonly prefix: PrefixCache;
  readonly metrics: ServerMetrics;
  /** The policy slots actually use (the model's sliding windows applied): part of every prefix key. */
  readonly policy: CachePolicy;
  /** Why the remote tier is off although a store was given (e.g. residual window mode), else ''. */
  readonly remoteProblem: string = '';

  constructor(
    readonly model: Model,
    readonly modelDigest: string,
    readonly o: EngineOptions,
  ) {
    const probe = model.createCache({ policy: o.policy, capacity: o.ctx, chunkTokens: o.chunkTokens, attention: o.attention });
    this.policy = probe.policy;
    const overlay = probe.plans.every((p) => p.windowMode === 'overlay');
    probe.dispose();
    this.prefix = new PrefixCache({ budgetBytes: o.cacheRamBytes, chunkTokens: o.chunkTokens, resume: o.resumeRule ?? deepestResumable });
    const hp = model.hp;
    this.metrics = new ServerMetrics({
      slotCaches: () => this.scheduler.slots.map((s) => ({ bytes: s.cache.nbytes(), positions: s.cache.length })),
      valuesPerPosition: 2 * hp.nLayer * hp.nHeadKv * hp.headDim,
      processing: () => this.scheduler.processing,
      deferred: () => this.scheduler.deferred,
      prefix: () => ({ entries: this.prefix.size, bytes: this.prefix.bytes, packed: this.prefix.packedBytes }),
    });
    this.scheduler = new Scheduler(model, { ...o }, this.prefix, this.metrics);
    const store = o.chunkStore;
    if (store) {
      if (store.counters)
        registerStoreMetrics(this.metrics.registry, store.counters, { chunkTokens: o.chunkTokens, queueBytes: () => store.pending?.().bytes ?? 0 });
      // Chunks are position-aligned only when the bulk holds every position (cache-chunks.ts).
      if (!overlay) this.remoteProblem = 'the remote store shares chunks of overlay window mode only; this residual-mode cache stays local';
      else {
        this.scheduler.remote = new RemotePrefixTier(store, { log: o.storeLog });
      }
    }
  }

  /**
   * The prefix key of a request: model digest, effective policy, attention precision (it changes the KV a
   * prefill writes), chunking and its salt. Not -ub: results do not depend on how prompts are batched.
   */
  keyFor(salt?: string): string {
    const computation = { policy: this.policy, attention: this.o.attention };
    return prefixRoot(this.modelDigest, computation, this.o.chunkTokens, salt ?? '');
  }

  /** An empty cache for a file or entry that claims options `c`; refuses any shape but the slots'. */
  cacheLike(c: KvCacheOptions, what: string): KvCache {
    const hp = this.model.hp;
    const same =
      c.layers === hp.nLayer &&
      c.kvHeads === hp.nHeadKv &&
      c.headDim === hp.headDim &&
      c.capacity === this.o.ctx &&
      c.chunkTokens === this.o.chunkTokens &&
      JSON.stringify(c.policy) === JSON.stringify(this.policy);
    if (!same)
      throw new FileFormatError(
        what,
        `holds a cache of another shape or policy than this server's slots (${c.layers}x${c.kvHeads}x${c.headDim}, ${c.capacity} positions, ${JSON.stringify(c.policy)})`,
      );
    return new KvCache({ ...c, attention: this.o.attention });
  }

  dispose(): void {
    this.scheduler.dispose();
  }
}
