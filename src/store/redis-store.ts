// RedisChunkStore: cache chunks in Redis (or a Redis Cluster) behind the local prefix cache. Reads are
// pipelined chain lookups; writes are write-behind; every fault becomes a miss or a dropped write.
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { parseStoreUrl, type StoreTarget } from './url.js';
import { decodeStoreValue, encodeStoreValue, storeKey, STORE_FORMAT_VERSION, type StoreMacKey } from './value.js';
import { StoreCounters, type CounterValues } from './counters.js';
import type { ChunkStore } from './chunk-store.js';
import { WriteQueue, type QueuedWrite } from './write-queue.js';
import { ArgumentError } from '../errors.js';

export interface RedisStoreOptions {
  /** Key prefix shared by the instances that share chunks (default 'kvpack'). */
  namespace?: string;
  /** Expiry of every key written (default one day). */
  ttlSeconds?: number;
  /** Longest a chain lookup may take before its remaining chunks count as misses (default 500 ms). */
  lookupTimeoutMs?: number;
  /** Per-command timeout of the client (default 1000 ms). */
  commandTimeoutMs?: number;
  connectTimeoutMs?: number;
  /** Write-behind bounds; beyond them the oldest queued writes are dropped (default 1024 entries, 256 MiB). */
  maxQueueEntries?: number;
  maxQueueBytes?: number;
  /** Keys per pipelined round trip (default 16). */
  batch?: number;
  /** One line per event worth a look (outage, reconnect, refused value); default stderr. */
  log?: (line: string) => void;
  /** Store format version in keys and values (tests write other versions with it). */
  formatVersion?: number;
  /** The secret values are signed with (HMAC-SHA256), shared by the instances; default KVPACK_STORE_KEY. */
  key?: string;
  /** No key: values carry a plain sha256, and anyone who can write to the store can feed every instance. */
  unauthenticated?: boolean;
  env?: NodeJS.ProcessEnv;
}

/** Shortest store key accepted (bytes). */
export const MIN_STORE_KEY_BYTES = 16;

/** The MAC secret from the options or KVPACK_STORE_KEY; refuses a shared store with neither a key nor the explicit opt-out. */
export function storeSecret(opts: Pick<RedisStoreOptions, 'key' | 'unauthenticated' | 'env'>): StoreMacKey {
  const k = opts.key ?? (opts.env ?? process.env)['KVPACK_STORE_KEY'];
  if (k === undefined || k === '') {
    if (opts.unauthenticated) return null;
    throw new ArgumentError(
      'a shared store needs a key to sign its values: --kv-store-key KEY or KVPACK_STORE_KEY (the same on every instance), or --kv-store-unauthenticated to run without one',
    );
  }
  const b = Buffer.from(k, 'utf8');
  if (b.length < MIN_STORE_KEY_BYTES) throw new ArgumentError(`the store key must be at least ${MIN_STORE_KEY_BYTES} bytes, got ${b.length}`);
  return b;
}

const TIMEOUT = Symbol('timeout');

/** p, or TIMEOUT after ms (the timer never keeps the process alive). */
function deadline<T>(p: Promise<T>, ms: number): Promise<T | typeof TIMEOUT> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<typeof TIMEOUT>((resolve) => {
    timer = setTimeout(() => resolve(TIMEOUT), Math.max(0, ms));
    timer.unref();
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

/** Reconnect delays: quick first retries, then every 2 s, forever (a restarted Redis is picked up by itself). */
const retryDelay = (times: number) => Math.min(50 * 2 ** Math.min(times, 6), 2000);

function positive(name: string, x: number | undefined, dflt: number): number {
  const v = x ?? dflt;
  if (!Number.isFinite(v) || v <= 0) throw new ArgumentError(`redis store: ${name} must be a positive number, got ${x}`);
  return v;
}

function makeClient(t: StoreTarget, commandTimeout: number, connectTimeout: number): Redis | Cluster {
  const common: RedisOptions = {
    ...(t.username ? { username: t.username } : {}),
    ...(t.password !== undefined ? { password: t.password } : {}),
    ...(t.tls ? { tls: {} } : {}),
    commandTimeout,
    connectTimeout,
    // Fail fast instead of queueing or retrying: a lookup that cannot be answered now is a miss.
    maxRetriesPerRequest: 0,
  };
  if (t.mode === 'cluster') {
    return new Cluster(t.nodes, { redisOptions: common, enableOfflineQueue: false, enableAutoPipelining: true, clusterRetryStrategy: retryDelay });
  }
  const n = t.nodes[0]!;
  return new Redis({ ...common, host: n.host, port: n.port, db: t.db, enableOfflineQueue: false, enableAutoPipelining: true, retryStrategy: retryDelay });
}

export class RedisChunkStore implements ChunkStore {
  readonly target: StoreTarget;
  readonly counters = new StoreCounters();
  readonly namespace: string;
  readonly ttlMs: number;
  private readonly client: Redis | Cluster;
  private readonly queue: WriteQueue;
  private readonly lookupTimeout: number;
  private readonly batch: number;
  private readonly version: number;
  private readonly secret: StoreMacKey;
  private readonly log: (line: string) => void;
  private draining: Promise<void> | null = null;
  /** DELs of refused values still in flight (flush waits for them too). */
  private deleting = new Set<Promise<unknown>>();
  private closed = false;
  private connects = 0;
  /** True between a connection error and the next ready: one log line per outage, not per command. */
  private down = false;

  /** Parses `url` (StoreUrlError when malformed), takes the key (ArgumentError without one), starts connecting in the background. */
  constructor(url: string, opts: RedisStoreOptions = {}) {
    this.target = parseStoreUrl(url, opts.env);
    this.namespace = opts.namespace ?? 'kvpack';
    this.ttlMs = Math.round(positive('ttlSeconds', opts.ttlSeconds, 86400) * 1000);
    this.lookupTimeout = positive('lookupTimeoutMs', opts.lookupTimeoutMs, 500);
    this.batch = Math.floor(positive('batch', opts.batch, 16));
    this.version = opts.formatVersion ?? STORE_FORMAT_VERSION;
    this.secret = storeSecret(opts);
    this.log = opts.log ?? ((line) => process.stderr.write(`kvpack store: ${line}\n`));
    this.queue = new WriteQueue(
      Math.floor(positive('maxQueueEntries', opts.maxQueueEntries, 1024)),
      positive('maxQueueBytes', opts.maxQueueBytes, 256 << 20),
      () => this.counters.add('droppedWrites'),
    );
    this.client = makeClient(this.target, positive('commandTimeoutMs', opts.commandTimeoutMs, 1000), positive('connectTimeoutMs', opts.connectTimeoutMs, 2000));
    const lost = (why: string): void => {
      if (this.down || this.closed) return;
      this.down = true;
      this.log(`${this.where()} unavailable (${why}); serving without it, reconnecting`);
    };
    this.client.on('error', (e: Error) => lost(e.message));
    // A dropped connection is news at once; 'error' only comes with the first failed reconnect.
    this.client.on('close', () => lost('connection closed'));
    this.client.on('ready', () => {
      this.connects++;
      if (this.down) this.log(`${this.where()} reconnected`);
      this.down = false;
    });
  }

  private where(): string {
    return `redis ${this.target.nodes.map((n) => `${n.host}:${n.port}`).join(',')}`;
  }

  /** Connected and answering (commands are sent only then). */
  /** True when values carry a plain sha256 (no key). */
  get unauthenticated(): boolean {
    return this.secret === null;
  }

  get ready(): boolean {
    return !this.closed && this.client.status === 'ready';
  }

  /** Resolves true once ready, false after timeoutMs. */
  async waitReady(timeoutMs: number): Promise<boolean> {
    const end = Date.now() + timeoutMs;
    while (!this.ready && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
    return this.ready;
  }

  /** The Redis key a chunk key is stored under. */
  fullKey(key: string): string {
    return storeKey(this.namespace, key, this.version);
  }

  /** Writes waiting to be sent, and their payload bytes. */
  pending(): { entries: number; bytes: number } {
    return { entries: this.queue.length, bytes: this.queue.bytes };
  }

  get generation(): number {
    const v = this.counters.values;
    return this.connects + v.failedWrites + v.droppedWrites;
  }

  stats(): CounterValues {
    return this.counters.snapshot();
  }

  async getChain(keys: readonly string[]): Promise<Buffer[]> {
    const hits: Buffer[] = [];
    const c = this.counters;
    try {
      if (keys.length === 0) return hits;
      if (!this.ready) {
        c.add('errors');
        return hits;
      }
      const end = Date.now() + this.lookupTimeout;
      for (let i = 0; i < keys.length; i += this.batch) {
        const full = keys.slice(i, i + this.batch).map((k) => this.fullKey(k));
        const t0 = performance.now();
        // One command per key (no multi-key commands: in a cluster the keys of a chain live in many slots);
        // auto-pipelining sends the batch in one write per node.
        const got = await deadline(Promise.allSettled(full.map((k) => this.client.getBuffer(k))), end - Date.now());
        if (got === TIMEOUT) {
          c.add('errors');
          break;
        }
        c.observe('get', performance.now() - t0);
        const n = this.takeHits(full, got, hits);
        if (n < full.length) break;
      }
    } catch (e) {
      // Nothing escapes a lookup: whatever went wrong, the rest of the chain is a miss.
      c.add('errors');
      this.log(`lookup failed: ${(e as Error).message}`);
    } finally {
      c.add('hitChunks', hits.length);
      c.add('missChunks', keys.length - hits.length);
    }
    return hits;
  }

  /** Appends the verified values of one batch up to its first miss; returns how many it took. */
  private takeHits(full: string[], got: PromiseSettledResult<Buffer | null>[], hits: Buffer[]): number {
    const c = this.counters;
    for (const r of got) if (r.status === 'fulfilled' && r.value) c.add('readBytes', r.value.length);
    for (let j = 0; j < got.length; j++) {
      const r = got[j]!;
      if (r.status === 'rejected') {
        c.add('errors');
        return j;
      }
      if (r.value === null) return j;
      const d = decodeStoreValue(full[j]!, r.value, this.secret, this.version);
      if (!d.ok) {
        c.add('corrupt');
        this.log(`refused ${full[j]}: ${d.reason}; deleted`);
        const del = this.client.del(full[j]!).catch(() => c.add('errors'));
        this.deleting.add(del);
        void del.finally(() => this.deleting.delete(del));
        return j;
      }
      hits.push(d.payload);
      c.add('hitBytes', d.payload.length);
    }
    return got.length;
  }

  put(key: string, payload: Uint8Array): void {
    if (this.closed) {
      this.counters.add('failedWrites');
      return;
    }
    this.queue.push({ key, payload });
    this.draining ??= new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.drain());
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const ws = this.queue.take(this.batch, 8 << 20);
        if (!this.ready) {
          this.counters.add('failedWrites', ws.length);
          continue;
        }
        await this.send(ws);
      }
    } finally {
      this.draining = null;
    }
  }

  private async send(ws: QueuedWrite[]): Promise<void> {
    const c = this.counters;
    try {
      const values = ws.map((w) => {
        const k = this.fullKey(w.key);
        return [k, encodeStoreValue(k, w.payload, this.secret, this.version)] as const;
      });
      const t0 = performance.now();
      const done = await Promise.allSettled(values.map(([k, v]) => this.client.set(k, v, 'PX', this.ttlMs)));
      c.observe('set', performance.now() - t0);
      done.forEach((r, i) => {
        if (r.status === 'fulfilled') {
          c.add('writtenChunks');
          c.add('writtenBytes', values[i]![1].length);
        } else {
          c.add('errors');
          c.add('failedWrites');
        }
      });
    } catch (e) {
      c.add('errors');
      c.add('failedWrites', ws.length);
      this.log(`write failed: ${(e as Error).message}`);
    }
  }

  async flush(): Promise<void> {
    while (this.draining || this.deleting.size > 0) await Promise.all([this.draining, ...this.deleting]);
  }

  /** Sends what is queued (for at most flushTimeoutMs), then disconnects. */
  async close(flushTimeoutMs = 1000): Promise<void> {
    if (this.closed) return;
    await deadline(this.flush(), flushTimeoutMs);
    this.closed = true;
    this.client.disconnect();
  }
}
