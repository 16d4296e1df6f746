// The remote tier of the prefix cache, chunk by chunk: chunk c of a prefix lives under its chain hash h_c
// (which binds model, policy, salt and every token up to it), so instances share exactly the chunks that
// are byte-for-byte valid for both, and a lookup is one pipelined walk of the chain.
import type { KvCache } from '../cache/kvcache.js';
import { exportChunk, importChunks } from './cache-chunks.js';
import type { ChunkStore } from './redis-store.js';

export interface PrefixTierOptions {
  /** Chain hashes remembered as written, so a growing conversation does not resend its old chunks (default 65536). */
  recentKeys?: number;
  log?: (line: string) => void;
}

export class RemotePrefixTier {
  /** Insertion-ordered: the oldest remembered hash is forgotten first. */
  private readonly recent = new Set<string>();
  private readonly recentMax: number;
  /** The store's generation when `recent` was last valid (a reconnect or a lost write invalidates it). */
  private generation = -1;
  private readonly log: (line: string) => void;

  constructor(
    readonly store: ChunkStore,
    opts: PrefixTierOptions = {},
  ) {
    this.recentMax = opts.recentKeys ?? 65536;
    this.log = opts.log ?? ((line) => process.stderr.write(`kvpack store: ${line}\n`));
  }

  /**
   * Queues chunks [from, hashes.length) of `cache` (chunk c under hashes[c]) and returns at once: the bytes
   * are copied now, so the caller may change or free the cache straight after. Stops quietly at a chunk the
   * cache cannot export (incomplete, or dropped by a sliding-window layer): the chain is only useful up to there.
   */
  offer(hashes: readonly string[], cache: KvCache, from = 0): number {
    let queued = 0;
    this.checkGeneration();
    for (let c = from; c < hashes.length; c++) {
      const h = hashes[c]!;
      if (this.recent.has(h)) continue;
      let bytes: Buffer;
      try {
        bytes = exportChunk(cache, c);
      } catch (e) {
        this.log(`not storing chunks from ${c} on: ${(e as Error).message}`);
        break;
      }
      this.store.put(h, bytes);
      this.remember(h);
      queued++;
    }
    return queued;
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
