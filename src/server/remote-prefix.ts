// The prefix cache's remote tier, chunk by chunk: chunk c of a prefix lives under its chain hash h_c (which
// binds model, policy, salt and every token up to it), so instances share exactly the chunks that are
// byte-for-byte valid for both, and a lookup is one pipelined walk of the chain. The resume rows at the end of
// chunk c (the exact rows a query there reads, store/cache-chunks.ts) live under resumeKey(h_c): a chain is
// resumable only where they were stored. The server offers a prefill's chunks and resume rows at its resume
// marks (write-behind) and, before a request is scheduled, fetches the chain the store holds beyond what the
// local cache resumes from into a prefix-cache entry: imported positions then read exactly what the
// producer's did, so a remote hit computes what a cold prefill on this instance would.
import type { KvCache } from '../cache/kvcache.js';
import { FileFormatError } from '../errors.js';
import { exportChunk, exportResumeRows, importChunks, importResumeRows } from '../store/cache-chunks.js';
import type { ChunkStore } from '../store/chunk-store.js';
import type { PrefixCache, PrefixEntry } from './prefix-cache.js';
import { chunkHashes } from './prefix-key.js';

/** The store key of the resume rows at the end of the chunk whose chain hash is h. */
export const resumeKey = (h: string): string => `${h}:resume`;

/** A chain imported from the store: `cache` holds its first `depth` chunks and is resumable there. */
export interface ResumableChain {
  /** Null when no boundary probed had resume rows (or the import was refused). */
  cache: KvCache | null;
  depth: number;
  /** Chunks of the chain the store holds (resume rows or not). */
  chain: number;
}

export interface PrefixTierOptions {
  /** Chain hashes remembered as written, so a growing conversation does not resend its old chunks (default 65536). */
  recentKeys?: number;
  /** Most boundaries below the chain's end probed for resume rows by fetchEntry (default 8). */
  probes?: number;
  log?: (line: string) => void;
}

export interface RemoteFetch {
  /** The entry added (pinned: the caller unpins it), or null. */
  entry: PrefixEntry | null;
  /** Tokens of the prompt the store's chain covers, resumable or not (where this prefill should leave resume rows). */
  matched: number;
}

export class RemotePrefixTier {
  /** Insertion-ordered: the oldest remembered hash is forgotten first. */
  private readonly recent = new Set<string>();
  private readonly recentMax: number;
  /** The store's generation when `recent` was last valid (a reconnect or a lost write invalidates it). */
  private generation = -1;
  private readonly log: (line: string) => void;
  private readonly probes: number;

  constructor(
    readonly store: ChunkStore,
    opts: PrefixTierOptions = {},
  ) {
    this.recentMax = opts.recentKeys ?? 65536;
    this.probes = opts.probes ?? 8;
    this.log = opts.log ?? ((line) => process.stderr.write(`kvpack store: ${line}\n`));
  }

  /**
   * The server's write at a prefill's resume mark: queues the chunks of `cache` (positions tokens[0,
   * cache.length), a chunk boundary it is resumable at) under the chain of `key` not yet sent, and its
   * resume rows there; returns at once with how many values were queued.
   */
  offerPrefill(key: string, tokens: readonly number[], cache: KvCache): number {
    const C = cache.chunkTokens;
    const n = cache.length / C;
    if (!Number.isInteger(n) || n === 0 || tokens.length < cache.length) return 0;
    return this.offerResumable(chunkHashes(key, tokens, C, n), cache);
  }

  /**
   * The server's read before a request is scheduled: fetches the chain of `prompt` when the store may let it
   * resume deeper than `prefix` (the local cache) does, and adds it, up to the deepest boundary with resume
   * rows, as a pinned entry; newCache() gives an empty cache shaped like the slots'. Never rejects.
   */
  async fetchEntry(prefix: PrefixCache, newCache: () => KvCache, key: string, prompt: readonly number[]): Promise<RemoteFetch> {
    const C = prefix.o.chunkTokens;
    const hashes = prefix.hashesFor(key, prompt);
    const local = prefix.lookup(key, hashes, prompt).hit?.keep ?? 0;
    const minDepth = Math.floor(local / C);
    if (hashes.length <= minDepth) return { entry: null, matched: 0 };
    let got: ResumableChain;
    try {
      got = await this.fetchResumable(newCache, hashes, minDepth, this.probes);
    } catch {
      return { entry: null, matched: 0 };
    }
    const matched = got.chain * C;
    if (!got.cache) return { entry: null, matched };
    const entry = prefix.adopt(key, hashes.slice(0, got.depth), prompt.slice(0, got.depth * C), got.cache);
    return { entry, matched };
  }

  /**
   * Queues chunks [from, hashes.length) of `cache` (chunk c under hashes[c]) and returns at once: the bytes
   * are copied now, so the caller may change or free the cache straight after. Stops quietly at a chunk the
   * cache cannot export (incomplete, or dropped by a sliding-window layer): the chain is only useful up to there.
   */
  offer(hashes: readonly string[], cache: KvCache, from = 0): number {
    return this.offerChunks(hashes, cache, from).queued;
  }

  /**
   * offer() for all of hashes, then the resume rows at their end (cache.length must be that boundary, and
   * the cache resumable there); returns the values queued.
   */
  offerResumable(hashes: readonly string[], cache: KvCache): number {
    const { queued, complete } = this.offerChunks(hashes, cache, 0);
    const rk = resumeKey(hashes[hashes.length - 1]!);
    if (!complete || this.recent.has(rk)) return queued;
    let bytes: Buffer;
    try {
      bytes = exportResumeRows(cache, cache.length);
    } catch (e) {
      this.log(`not storing resume rows at ${cache.length}: ${(e as Error).message}`);
      return queued;
    }
    this.store.put(rk, bytes);
    this.remember(rk);
    return queued + 1;
  }

  private offerChunks(hashes: readonly string[], cache: KvCache, from: number): { queued: number; complete: boolean } {
    let queued = 0;
    this.checkGeneration();
    const states = cache.state(); // once: the cache does not change while its chunks are offered
    for (let c = from; c < hashes.length; c++) {
      const h = hashes[c]!;
      if (this.recent.has(h)) continue;
      let bytes: Buffer;
      try {
        bytes = exportChunk(cache, c, states);
      } catch (e) {
        this.log(`not storing chunks from ${c} on: ${(e as Error).message}`);
        return { queued, complete: false };
      }
      this.store.put(h, bytes);
      this.remember(h);
      queued++;
    }
    return { queued, complete: true };
  }

  /**
   * Walks the chain (one pipelined lookup), then probes the resume rows of its deepest `probes` boundaries
   * above minDepth chunks, deepest first, and imports the chain up to the first boundary that has them into
   * a cache from newCache(). Never rejects (faults are misses; a refused import is logged).
   */
  async fetchResumable(newCache: () => KvCache, hashes: readonly string[], minDepth: number, probes: number): Promise<ResumableChain> {
    const got = await this.store.getChain(hashes);
    for (let c = got.length; c < hashes.length; c++) this.recent.delete(hashes[c]!);
    const chain = got.length;
    for (let c = chain; c > minDepth && c > chain - probes; c--) {
      const rk = resumeKey(hashes[c - 1]!);
      const [rows] = await this.store.getChain([rk]);
      if (!rows) {
        this.recent.delete(rk);
        continue;
      }
      const cache = newCache();
      try {
        importChunks(cache, got.slice(0, c), 0);
        importResumeRows(cache, c * cache.chunkTokens, rows);
        if (!cache.resumableAt(c * cache.chunkTokens))
          throw new FileFormatError('remote chunks', `the imported cache is not resumable at ${c * cache.chunkTokens}`);
      } catch (e) {
        cache.dispose();
        this.log(`refused ${c} remote chunks and their resume rows: ${(e as Error).message}`);
        return { cache: null, depth: 0, chain };
      }
      for (let i = 0; i < c; i++) this.remember(hashes[i]!);
      this.remember(rk);
      return { cache, depth: c, chain };
    }
    return { cache: null, depth: 0, chain };
  }

  /**
   * Extends `into` (holding the first k = into.length / chunkTokens chunks of this chain, k often 0) with the
   * chunks the store holds from hashes[k] on, up to the first miss. Returns how many were added; 0 on any
   * miss, fault or refusal (logged), with `into` unchanged. Never rejects.
   */
  async fetchInto(into: KvCache, hashes: readonly string[]): Promise<number> {
    const C = into.chunkTokens;
    const k = into.length / C;
    if (!Number.isInteger(k) || k >= hashes.length) return 0;
    const got = await this.store.getChain(hashes.slice(k));
    // What the chain lacks (evicted, expired, lost) must be offered again, remembered or not.
    for (let c = k + got.length; c < hashes.length; c++) this.recent.delete(hashes[c]!);
    if (got.length === 0) return 0;
    try {
      importChunks(into, got, k);
    } catch (e) {
      // A chunk of the right key but the wrong shape means a key collision or a bug: never attend over it.
      this.log(`refused ${got.length} remote chunks: ${(e as Error).message}`);
      return 0;
    }
    for (let c = k; c < k + got.length; c++) this.remember(hashes[c]!);
    return got.length;
  }

  private checkGeneration(): void {
    const g = this.store.generation;
    if (g === this.generation) return;
    this.recent.clear();
    this.generation = g;
  }

  private remember(h: string): void {
    this.recent.delete(h);
    this.recent.add(h);
    if (this.recent.size > this.recentMax) this.recent.delete(this.recent.values().next().value!);
  }
}
