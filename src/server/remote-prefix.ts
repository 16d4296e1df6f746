// The prefix cache's remote tier in the server: after a prefill, the slot's exact chunks go to the chunk
// store (write-behind); before a request is scheduled, the chunks the store holds beyond what the local
// cache can resume from are fetched into an entry. Only exact chunks (a cold prefill's KV, exact-resume.ts)
// are shared, so a remote hit computes what a cold prefill on this instance would.
import type { KvCache } from '../cache/kvcache.js';
import type { RemotePrefixTier } from '../store/prefix-tier.js';
import { dropDecodeStart } from './cache-reuse.js';
import type { PrefixCache, PrefixEntry } from './prefix-cache.js';
import { chunkHashes } from './prefix-key.js';

export class RemotePrefixes {
  constructor(
    readonly tier: RemotePrefixTier,
    private readonly prefix: PrefixCache,
    /** An empty cache shaped like the slots'. */
    private readonly newCache: () => KvCache,
  ) {}

  /** Queues the chunks of `cache` inside its first `exact` positions (tokens[0, exact)); returns at once. */
  offer(key: string, tokens: readonly number[], exact: number, cache: KvCache): number {
    const C = this.prefix.o.chunkTokens;
    const n = Math.floor(Math.min(exact, cache.length, tokens.length) / C);
    return n > 0 ? this.tier.offer(chunkHashes(key, tokens, C, n), cache) : 0;
  }

  /**
   * Fetches the chain of `prompt` when the store may let it resume deeper than the local cache does, and
   * adds what came back as a pinned entry (the caller unpins it). Never rejects; null when nothing was added.
   */
  async fetch(key: string, prompt: readonly number[]): Promise<PrefixEntry | null> {
    const C = this.prefix.o.chunkTokens;
    const hashes = this.prefix.hashesFor(key, prompt);
    const local = this.prefix.lookup(key, hashes, prompt);
    if (this.prefix.resumeFor(hashes.length, hashes.length * C, prompt.length) <= (local?.keep ?? 0)) return null;
    // Start from the local entry's exact chunks when it has some: only the rest crosses the network.
    const k = local ? Math.min(local.depth, Math.floor(local.entry.exact / C)) : 0;
    let base: KvCache;
    try {
      base = k > 0 ? local!.entry.cache.fork() : this.newCache();
      if (base.length > k * C) base.rewind(k * C);
      dropDecodeStart(base);
    } catch {
      return null;
    }
    const got = await this.tier.fetchInto(base, hashes);
    if (got === 0) {
      base.dispose();
      return null;
    }
    const depth = k + got;
    return this.prefix.adopt(key, hashes.slice(0, depth), prompt.slice(0, depth * C), base);
  }
}
