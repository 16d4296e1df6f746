// Shared pieces of the Redis store tests: chunk keys, payloads and a store with short test timeouts.
import { createHash } from 'node:crypto';
import { RedisChunkStore, type RedisStoreOptions } from '../../src/store/redis-store.js';
import { RedisServer } from './harness.js';

/** Chain keys as the prefix cache makes them: hex digests, spread over hash slots. */
export const chainKeys = (name: string, n: number): string[] => Array.from({ length: n }, (_, i) => createHash('sha256').update(`${name}/${i}`).digest('hex'));

export const payload = (seed: number, n = 1000): Buffer => Buffer.from(Array.from({ length: n }, (_, i) => (i * 131 + seed * 17) & 255));

export type OpenStore = (url: string, opts?: RedisStoreOptions) => { store: RedisChunkStore; lines: string[] };

/**
 * Runs fn with a fresh redis-server and a store opener; every store is closed and the server stopped
 * afterwards, also when fn fails (an open client would keep the test process alive, reconnecting).
 */
export async function withRedis(fn: (r: RedisServer, open: OpenStore) => Promise<void>, args: string[] = []): Promise<void> {
  const r = await RedisServer.start(args);
  const opened: RedisChunkStore[] = [];
  try {
    await fn(r, (url, opts) => {
      const s = testStore(url, opts);
      opened.push(s.store);
      return s;
    });
  } finally {
    await Promise.all(opened.map((s) => s.close(0)));
    await r.stop();
  }
}

/** The key test stores sign values with (as an operator sets KVPACK_STORE_KEY on every instance). */
export const TEST_STORE_KEY = 'kvpack test store key, 32 bytes';

/** A store whose log lines land in `lines` (tests assert on them) instead of stderr; timeouts generous enough for a loaded CI machine (fault tests set their own). */
export function testStore(url: string, opts: RedisStoreOptions = {}): { store: RedisChunkStore; lines: string[] } {
  const lines: string[] = [];
  const store = new RedisChunkStore(url, {
    namespace: 'test',
    key: TEST_STORE_KEY,
    lookupTimeoutMs: 5000,
    commandTimeoutMs: 5000,
    log: (l) => lines.push(l),
    ...opts,
  });
  return { store, lines };
}
