// The compressed prefix cache: forks of finished slots' packed caches, found by the hash chain of their
// token chunks (prefix-key.ts), bounded by bytes, evicted least recently used, never while pinned by a slot
// that is restoring from it. Bytes are the packed bytes the entries hold (chunks shared between entries
// count once). A PrefixStore (e.g. Redis) can sit behind it: entries go there serialized, and a request
// whose prefix is deeper there than here pulls it in before it is scheduled.
import type { KvCache } from '../cache/kvcache.js';
import type { Chunk } from '../cache/stream.js';
import { chunkHashes } from './prefix-key.js';
import { dropDecodeStart } from './cache-reuse.js';
import { deserializeEntry, serializeEntry, type EntryCacheFactory } from './prefix-serialize.js';

/** A second tier: serialized entries keyed by their chain hashes. */
export interface PrefixStore {
  /** Stores an entry covering hashes h_1..h_d (a later get for any prefix of them may return it). */
  put(hashes: readonly string[], bytes: Uint8Array): Promise<void>;
  /** The deepest entry covering a prefix of `hashes`: its depth and bytes, or null. */
  get(hashes: readonly string[]): Promise<{ depth: number; bytes: Uint8Array } | null>;
}

export interface PrefixEntry {
  /** Chain root (model, policy, salt). */
  readonly key: string;
  readonly hashes: readonly string[];
  /** The tokens whose KV the cache holds: hashes.length whole chunks. */
  readonly tokens: readonly number[];
  readonly cache: KvCache;
  /** Bytes outside the shared bulk chunks (exact regions, staging), allocated per entry. */
  readonly ownBytes: number;
  /** Of those, bytes holding data (an entry's staging and rewound window hold none). */
  readonly ownPacked: number;
  pins: number;
  used: number;
}

export interface PrefixHit {
  entry: PrefixEntry;
  /** Whole chunks matched. */
  depth: number;
}

export interface PrefixCacheOptions {
  budgetBytes: number;
  chunkTokens: number;
  store?: PrefixStore;
  /** Builds an empty cache for a deserialized entry (the server's shape, arena and attention). */
  make: EntryCacheFactory;
}

export class PrefixCache {
  private readonly entries = new Set<PrefixEntry>();
  private readonly index = new Map<string, Set<PrefixEntry>>();
  /** How many entries hold each shared bulk chunk, and its size. */
  private readonly chunks = new Map<Chunk, { refs: number; bytes: number }>();
  private chunkBytes = 0;
  private clock = 0;
  /** Positions served from entries and lookups that found nothing (for /metrics). */
  hitTokens = 0;
  misses = 0;

  constructor(readonly o: PrefixCacheOptions) {}

  get enabled(): boolean {
    return this.o.budgetBytes > 0;
  }

  get size(): number {
    return this.entries.size;
  }

  /** Bytes allocated for the entries (what the budget bounds): shared chunks once, plus each entry's exact regions. */
  get bytes(): number {
    let own = 0;
    for (const e of this.entries) own += e.ownBytes;
    return own + this.chunkBytes;
  }

  /** Bytes of packed K/V data the entries hold (entries end on chunk boundaries: their chunks are full). */
  get packedBytes(): number {
    let own = 0;
    for (const e of this.entries) own += e.ownPacked;
    return own + this.chunkBytes;
  }

  /** Chain hashes of the chunks of `tokens` a hit may cover: at least one token must stay to be fed. */
  hashesFor(key: string, tokens: readonly number[]): string[] {
    return chunkHashes(key, tokens, this.o.chunkTokens, Math.floor((tokens.length - 1) / this.o.chunkTokens));
  }

  /** The deepest local entry under `key` whose tokens start `tokens`; hashes from hashesFor. */
  lookup(key: string, hashes: readonly string[], tokens: readonly number[]): PrefixHit | null {
    for (let d = hashes.length; d > 0; d--) {
      const set = this.index.get(hashes[d - 1]!);
      if (!set) continue;
      let best: PrefixEntry | null = null;
      for (const e of set) if (e.key === key && (!best || e.used > best.used) && samePrefix(e.tokens, tokens, d * this.o.chunkTokens)) best = e;
      if (best) return { entry: best, depth: d };
    }
    return null;
  }

  /** Pins an entry while a slot copies from it; unpin() when done. */
  pin(e: PrefixEntry): void {
    e.pins++;
    e.used = ++this.clock;
  }

  unpin(e: PrefixEntry): void {
    e.pins = Math.max(0, e.pins - 1);
    this.evict();
  }

  /**
   * Adds a fork of `cache` holding its first `aligned` positions (a multiple of chunkTokens) whose tokens are
   * tokens[0, aligned). An entry already covering them (as long or longer) is only touched. Also sent to the store when there is one.
   */
  insert(key: string, tokens: readonly number[], aligned: number, cache: KvCache): void {
    const C = this.o.chunkTokens;
    if (!this.enabled || aligned < C || aligned % C !== 0 || aligned > cache.length || !cache.canRewind(aligned)) return;
    const hashes = chunkHashes(key, tokens, C, aligned / C);
    const have = this.lookup(key, hashes, tokens);
    if (have && have.depth === hashes.length) {
      have.entry.used = ++this.clock;
      return;
    }
    const fork = cache.fork();
    fork.rewind(aligned);
    dropDecodeStart(fork);
    const e = this.add(key, hashes, tokens.slice(0, aligned), fork);
    if (e && this.o.store) this.o.store.put(hashes, serializeEntry(key, e.tokens, fork)).catch(() => {});
  }

  /** Pulls an entry from the store when it covers more of `tokens` than any local one (no-op without a store). */
  async prefetch(key: string, tokens: readonly number[]): Promise<void> {
    const store = this.o.store;
    if (!store || !this.enabled) return;
    const hashes = this.hashesFor(key, tokens);
    const local = this.lookup(key, hashes, tokens)?.depth ?? 0;
    if (hashes.length <= local) return;
    const got = await store.get(hashes);
    if (!got || got.depth <= local) return;
    const d = deserializeEntry(got.bytes, this.o.make);
    const C = this.o.chunkTokens;
    // Trust nothing from outside: same key, and the tokens must hash to the chain asked for.
    const theirs = chunkHashes(d.key, d.tokens, C);
    const depth = Math.min(got.depth, theirs.length);
    if (d.key !== key || depth === 0 || theirs[depth - 1] !== hashes[depth - 1] || d.cache.length !== d.tokens.length) {
      d.cache.dispose();
      return;
    }
    this.add(key, theirs, d.tokens, d.cache);
  }

  private add(key: string, hashes: string[], tokens: readonly number[], cache: KvCache): PrefixEntry | null {
    // Entries are only forked, saved and measured: frozen, their exact regions allocate only the rows they hold.
    cache.freeze();
    let shared = 0;
    const chunks = bulkChunks(cache);
    for (const c of chunks) shared += c.bytes;
    const nb = cache.nbytes();
    const e: PrefixEntry = { key, hashes, tokens, cache, ownBytes: nb.allocated - shared, ownPacked: nb.total - nb.bulk, pins: 0, used: ++this.clock };
    this.entries.add(e);
    for (const h of hashes) {
      let s = this.index.get(h);
      if (!s) this.index.set(h, (s = new Set()));
      s.add(e);
    }
    for (const c of chunks) {
      const r = this.chunks.get(c.chunk);
      if (r) r.refs++;
      else {
        this.chunks.set(c.chunk, { refs: 1, bytes: c.bytes });
        this.chunkBytes += c.bytes;
      }
    }
    this.evict();
    return this.entries.has(e) ? e : null;
  }

  /** Least recently used first, skipping pinned entries, until the bytes fit the budget. */
  private evict(): void {
    if (this.bytes <= this.o.budgetBytes) return;
    const order = [...this.entries].sort((a, b) => a.used - b.used);
    for (const e of order) {
      if (this.bytes <= this.o.budgetBytes) break;
      if (e.pins === 0) this.remove(e);
    }
  }

  private remove(e: PrefixEntry): void {
    this.entries.delete(e);
    for (const h of e.hashes) {
      const s = this.index.get(h);
      s?.delete(e);
      if (s?.size === 0) this.index.delete(h);
    }
    for (const c of bulkChunks(e.cache)) {
      const r = this.chunks.get(c.chunk)!;
      if (--r.refs === 0) {
        this.chunks.delete(c.chunk);
        this.chunkBytes -= r.bytes;
      }
    }
    e.cache.dispose();
  }

  /** Frees every entry (server shutdown). */
  clear(): void {
    for (const e of [...this.entries]) this.remove(e);
  }
}

function samePrefix(a: readonly number[], b: readonly number[], n: number): boolean {
  if (a.length < n || b.length < n) return false;
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** The bulk chunks a cache references (shared copy-on-write with forks) and their sizes. */
function bulkChunks(cache: KvCache): { chunk: Chunk; bytes: number }[] {
  const out: { chunk: Chunk; bytes: number }[] = [];
  for (let l = 0; l < cache.layers; l++) {
    const lc = cache.layerCache(l);
    for (const s of [lc.bulk.k.stream, lc.bulk.v.stream]) for (const chunk of s.chunks) out.push({ chunk, bytes: s.chunkBytes });
  }
  return out;
}
