// A ChunkStore in process memory: the reference for RedisChunkStore's contract, and what tests share between
// servers in one process when Redis itself is not the subject.
import { StoreCounters } from './counters.js';
import type { ChunkStore } from './chunk-store.js';

export class MemoryChunkStore implements ChunkStore {
  readonly values = new Map<string, Buffer>();
  readonly counters = new StoreCounters();
  readonly generation = 0;

  async getChain(keys: readonly string[]): Promise<Buffer[]> {
    const out: Buffer[] = [];
    for (const k of keys) {
      const v = this.values.get(k);
      if (!v) break;
      out.push(v);
    }
    this.counters.add('hitChunks', out.length);
    this.counters.add('missChunks', keys.length - out.length);
    return out;
  }

  put(key: string, payload: Uint8Array): void {
    this.values.set(key, Buffer.from(payload));
    this.counters.add('writtenChunks');
    this.counters.add('writtenBytes', payload.length);
  }

  async flush(): Promise<void> {}

  async close(): Promise<void> {}
}
