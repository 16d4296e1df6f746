// The compressed prefix cache: forks of finished slots' packed caches, found by the hash chain of their
// token chunks (prefix-key.ts), bounded by bytes, evicted least recently used, never while pinned by a slot
// that is restoring from it. Bytes are the packed bytes the entries hold (chunks shared between entries
// count once). A remote tier (remote-prefix.ts) adds entries built from chunks other instances computed.
import type { KvCache } from '../cache/kvcache.js';
import type { Chunk } from '../cache/stream.js';
import { chunkHashes } from './prefix-key.js';
import { dropDecodeStart } from './cache-reuse.js';

export interface PrefixEntry {
  /** Chain root (model, policy, salt). */
  readonly key: string;
  readonly hashes: readonly string[];
  /** The tokens whose KV the cache holds: hashes.length whole chunks. */
  readonly tokens: readonly number[];
  readonly cache: KvCache;
  /** Leading positions holding a cold prefill's KV (exact-resume.ts): hits resume only within them. */
  readonly exact: number;
  /** Built from chunks fetched from the remote tier (for /metrics). */
  readonly remote: boolean;
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
  /** Where a prefill restored from it resumes (the options' resume rule; 0 is never returned as a hit). */
  keep: number;
}

/** Where a hit of `matched` tokens on an entry with `exact` exact positions resumes a prompt of `promptLength`. */
export type ResumeAt = (matched: number, exact: number, promptLength: number) => number;

export interface PrefixCacheOptions {
  budgetBytes: number;
  chunkTokens: number;
  /** Default: the whole match (no exactness requirement). */
  resume?: ResumeAt;
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

  private readonly resumeAt: ResumeAt;

  constructor(readonly o: PrefixCacheOptions) {
    this.resumeAt = o.resume ?? ((matched) => matched);
  }

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

  /** Where a prompt resumes from a match of `depth` chunks on an entry (0: not usable). */
  resumeFor(depth: number, exact: number, promptLength: number): number {
    return depth > 0 ? this.resumeAt(depth * this.o.chunkTokens, exact, promptLength) : 0;
  }

  /**
   * The local entry under `key` whose tokens start `tokens` that lets the prompt resume deepest (ties: the
   * deeper match, then the most recently used); hashes from hashesFor.
   */
  lookup(key: string, hashes: readonly string[], tokens: readonly number[]): PrefixHit | null {
    let best: PrefixHit | null = null;
    const seen = new Set<PrefixEntry>();
    for (let d = hashes.length; d > 0; d--) {
      const set = this.index.get(hashes[d - 1]!);
      if (!set) continue;
      for (const e of set) {
        // An entry's deepest match is its best one (the resume point never falls as the match grows).
        if (seen.has(e) || e.key !== key || !samePrefix(e.tokens, tokens, d * this.o.chunkTokens)) continue;
        seen.add(e);
        const keep = this.resumeFor(d, e.exact, tokens.length);
        if (keep > 0 && (!best || keep > best.keep || (keep === best.keep && (d > best.depth || (d === best.depth && e.used > best.entry.used))))) best = { entry: e, depth: d, keep };
      }
    }
    return best;
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
   * tokens[0, aligned), the first `exact` of them a cold prefill's. An entry already covering them (as long
   * or longer, as exact or more) is only touched.
   */
  insert(key: string, tokens: readonly number[], aligned: number, cache: KvCache, exact = 0): void {
    const C = this.o.chunkTokens;
    if (!this.enabled || aligned < C || aligned % C !== 0 || aligned > cache.length || !cache.canRewind(aligned)) return;
    const hashes = chunkHashes(key, tokens, C, aligned / C);
    const ex = Math.min(exact, aligned);
    const set = this.index.get(hashes[hashes.length - 1]!);
    for (const e of set ?? []) {
      if (e.key === key && e.exact >= ex && samePrefix(e.tokens, tokens, aligned)) {
        e.used = ++this.clock;
        return;
      }
    }
    const fork = cache.fork();
    fork.rewind(aligned);
    dropDecodeStart(fork);
    this.add(key, hashes, tokens.slice(0, aligned), fork, ex, false, false);
  }

  /**
   * Takes `cache` (its positions are tokens[0, cache.length), whole chunks, all of them a cold prefill's) as
   * an entry built from remote chunks, pinned (unpin() when done: beyond the budget it goes then).
   */
  adopt(key: string, hashes: string[], tokens: readonly number[], cache: KvCache): PrefixEntry {
    return this.add(key, hashes, tokens, cache, cache.length, true, true)!;
  }

  private add(key: string, hashes: string[], tokens: readonly number[], cache: KvCache, exact: number, remote: boolean, pinned: boolean): PrefixEntry | null {
    // Entries are only forked, saved and measured: frozen, their exact regions allocate only the rows they hold.
    cache.freeze();
    let shared = 0;
    const chunks = bulkChunks(cache);
    for (const c of chunks) shared += c.bytes;
    const nb = cache.nbytes();
    const e: PrefixEntry = { key, hashes, tokens, cache, exact, remote, ownBytes: nb.allocated - shared, ownPacked: nb.total - nb.bulk, pins: pinned ? 1 : 0, used: ++this.clock };
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
