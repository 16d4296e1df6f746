// ChunkStore: what the prefix cache's remote tier needs from a store of chunk values (RedisChunkStore, and
// MemoryChunkStore, the reference for its contract).
import type { StoreCounters } from './counters.js';

/** What the server's prefix cache needs from a store behind its local LRU. */
export interface ChunkStore {
  /** Payloads of keys[0..h), h the first key missing (or refused): a short answer is a normal partial hit. Never rejects. */
  getChain(keys: readonly string[]): Promise<Buffer[]>;
  /** Queues a write and returns at once (the store keeps `payload`: do not modify it afterwards). */
  put(key: string, payload: Uint8Array): void;
  /** Resolves when every queued write was sent (and answered or failed). */
  flush(): Promise<void>;
  close(): Promise<void>;
  /** Changes whenever written chunks may have been lost (a reconnect, a dropped or failed write). */
  readonly generation: number;
  /** Hit/miss/byte/error counters and latencies, when the store keeps them (for /metrics). */
  readonly counters?: StoreCounters;
  /** Writes waiting to be sent, and their payload bytes. */
  pending?(): { entries: number; bytes: number };
}
