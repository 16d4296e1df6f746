// The prefix cache's remote tier in the server: at a prefill's resume marks on chunk boundaries, the slot's
// chunks and its resume rows there go to the chunk store (write-behind); before a request is scheduled, the
// chain the store holds beyond what the local cache can resume from is fetched, with the resume rows of the
// deepest boundary that has them, into an entry. Imported positions then read exactly what the producer's
// did, so a remote hit computes what a cold prefill on this instance would.
import type { KvCache } from '../cache/kvcache.js';
import type { RemotePrefixTier, ResumableChain } from '../store/prefix-tier.js';
import type { PrefixCache, PrefixEntry } from './prefix-cache.js';
import { chunkHashes } from './prefix-key.js';

export interface RemoteFetch {
  /** The entry added (pinned: the caller unpins it), or null. */
  entry: PrefixEntry | null;
  /** Tokens of the prompt the store's chain covers, resumable or not (where this prefill should leave resume rows). */
  matched: number;
}

export class RemotePrefixes {
  constructor(
    readonly tier: RemotePrefixTier,
    private readonly prefix: PrefixCache,
    /** An empty cache shaped like the slots'. */
    private readonly newCache: () => KvCache,
    /** Most boundaries below the chain's end probed for resume rows. */
    private readonly probes = 8,
  ) {}

  /**
   * Queues the chunks of `cache` (positions tokens[0, cache.length), a chunk boundary it is resumable at)
   * not yet sent, and its resume rows there; returns at once with how many values were queued.
   */
  offer(key: string, tokens: readonly number[], cache: KvCache): number {
    const C = this.prefix.o.chunkTokens;
    const n = cache.length / C;
    if (!Number.isInteger(n) || n === 0 || tokens.length < cache.length) return 0;
    return this.tier.offerResumable(chunkHashes(key, tokens, C, n), cache);
  }

  /**
   * Fetches the chain of `prompt` when the store may let it resume deeper than the local cache does, and
   * adds it, up to the deepest boundary with resume rows, as a pinned entry. Never rejects.
   */
  async fetch(key: string, prompt: readonly number[]): Promise<RemoteFetch> {
    const C = this.prefix.o.chunkTokens;
    const hashes = this.prefix.hashesFor(key, prompt);
    const local = this.prefix.lookup(key, hashes, prompt).hit?.keep ?? 0;
    const minDepth = Math.floor(local / C);
    if (hashes.length <= minDepth) return { entry: null, matched: 0 };
    let got: ResumableChain;
    try {
      got = await this.tier.fetchResumable(this.newCache, hashes, minDepth, this.probes);
    } catch {
      return { entry: null, matched: 0 };
    }
    const matched = got.chain * C;
    if (!got.cache) return { entry: null, matched };
    const entry = this.prefix.adopt(key, hashes.slice(0, got.depth), prompt.slice(0, got.depth * C), got.cache);
    return { entry, matched };
  }
}
