// A PrefixStore in process memory: the reference second tier (a Redis store keeps the same contract), and
// what tests share between servers to check that keys keep models, policies and tenants apart.
import type { PrefixStore } from './prefix-cache.js';

export class MemoryPrefixStore implements PrefixStore {
  private readonly blobs = new Map<string, { depth: number; bytes: Uint8Array }>();
  puts = 0;
  gets = 0;

  async put(hashes: readonly string[], bytes: Uint8Array): Promise<void> {
    this.puts++;
    const blob = { depth: hashes.length, bytes };
    // Every chain hash of the entry points at it, unless a deeper entry already covers that hash.
    hashes.forEach((h) => {
      const have = this.blobs.get(h);
      if (!have || have.depth < blob.depth) this.blobs.set(h, blob);
    });
  }

  async get(hashes: readonly string[]): Promise<{ depth: number; bytes: Uint8Array } | null> {
    this.gets++;
    for (let d = hashes.length; d > 0; d--) {
      const b = this.blobs.get(hashes[d - 1]!);
      if (b) return { depth: d, bytes: b.bytes };
    }
    return null;
  }
}
